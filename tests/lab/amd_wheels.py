"""Double of AMD's multi-arch wheel index, https://repo.amd.com/rocm/whl-multi-arch/, where
the ROCm Core SDK 10.x gets its torch (download.pytorch.org publishes none).

Built from the recorded facts (tests/fixtures/upstream/repo.amd.com-whl.toml), not from the
product's matrix: the torch / torchvision / torchaudio series TheRock builds together; torch
requires ``rocm[libraries]`` (pinned to the ROCm release it was built for); the
``[device-<gfx>]`` extras of torch bring ``amd-torch-device-<gfx>``, which requires
``rocm-sdk-device-<gfx>``; torchvision takes the same extras (on its torch), torchaudio none.
The torch double is the download.pytorch.org one (``pytorch_index``): it reads the host's GPU
profile.

Stand-ins, because the record says they were not read (``builds_uncertain``): each series'
patch version (``.0``), the local label (``+rocm<release>``, the form research notes saw,
``2.13.0+rocm10.0.0``), that every series is published for every 10.x release, and
torch.version.hip. The index lists no dependency of torch beyond AMD's own wheels, since the
record names none.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from . import pytorch_index as pt
from . import upstream_facts as facts
from .amd_repo import Release

_RECORD = facts.amd_multi_arch()
URL = _RECORD["url"]
HOST = urlsplit(URL).hostname
PATH = urlsplit(URL).path.strip("/")  # rocm/whl-multi-arch


def hip_version(release: str) -> str:
    """A stand-in torch.version.hip for AMD's build for ``release`` (not read)."""
    return f"{release}.60000-amdlab"


def releases_served(releases: list[Release]) -> list[str]:
    """The Core SDK releases the index serves: those download.pytorch.org has no index for."""
    cores = facts.core_releases()
    return [
        r.version for r in releases if r.version in cores and facts.release_index(r.version) is None
    ]


def build(www: Path, releases: list[Release]) -> list[pt.Wheel]:
    """Write the index under ``www`` (the repo.amd.com double's root) for ``releases``'
    10.x members; nothing when there are none."""
    versions = releases_served(releases)
    if not versions:
        return []
    out = www / PATH
    gfx_all = pt.CORE_SDK_GFX_PACKAGES
    wheels: list[pt.Wheel] = []
    for version in versions:
        major, minor, _ = version.split(".")
        wheels += pt.runtime_wheels(out, f"rocm[libraries]=={major}.{minor}.*")
        label = f"+rocm{version}"
        runtime = f"rocm[libraries]=={version}.*"
        for torch_s, vision_s, audio_s in _RECORD["builds"]:
            torch_v = f"{torch_s}.0{label}"
            extras = ("device-all", *(f"device-{g}" for g in gfx_all))
            device = [f"amd-torch-device-{g}" for g in gfx_all]
            requires = [runtime]
            requires += [f'{d}=={torch_v}; extra == "device-all"' for d in device]
            requires += [
                f'{d}=={torch_v}; extra == "device-{g}"'
                for d, g in zip(device, gfx_all, strict=True)
            ]
            files = pt._torch_files(torch_v, hip_version(version), None)
            wheels.append(pt.write_wheel(out, "torch", torch_v, files, tuple(requires), extras))
            for name, gfx in zip(device, gfx_all, strict=True):
                wheels.append(
                    pt.write_wheel(
                        out, name, torch_v, {f"_{name.replace('-', '_')}/__init__.py": ""},
                        (f"rocm-sdk-device-{gfx}=={major}.{minor}.0",),
                    )
                )  # fmt: skip
            vision_v = f"{vision_s}.0{label}"
            vision_req = [f"torch=={torch_v}"]
            vision_req += [f'torch[{e}]=={torch_v}; extra == "{e}"' for e in extras]
            wheels.append(
                pt.write_wheel(
                    out, "torchvision", vision_v,
                    pt._companion("torchvision", vision_v, torch_v), tuple(vision_req), extras,
                )
            )  # fmt: skip
            # torchaudio 2.11 goes with every series (the record), so one wheel of it per
            # release, requiring torch unpinned: how AMD's wheel pins its torch was not read.
            audio_v = f"{audio_s}.0{label}"
            if not any(w.project == "torchaudio" and w.version == audio_v for w in wheels):
                wheels.append(
                    pt.write_wheel(
                        out, "torchaudio", audio_v,
                        pt._companion("torchaudio", audio_v, torch_v), ("torch",),
                    )
                )  # fmt: skip
    _write_pages(www, out, wheels)
    return wheels


def _write_pages(www: Path, out: Path, wheels: list[pt.Wheel]) -> None:
    """PEP 503 pages: the index's root and one page per project, linking the wheels by
    absolute path (as pytorch_index does)."""
    from html import escape
    from urllib.parse import quote

    projects = sorted({w.project for w in wheels})
    links = "".join(f'<a href="/{PATH}/{p}/">{p}</a><br/>\n' for p in projects)
    (out / "index.html").write_text(pt._page("Simple index", links))
    for project in projects:
        rows = []
        mine = {w.path: w for w in wheels if w.project == project}.values()
        for w in sorted(mine, key=lambda w: pt._version_key(w.version)):
            href = f"/{quote(str(w.path.relative_to(www)))}#sha256={w.sha256}"
            rows.append(
                f'<a href="{escape(href)}" data-requires-python="&gt;=3.9">'
                f"{escape(w.path.name)}</a><br/>\n"
            )
        (out / project).mkdir(exist_ok=True)
        (out / project / "index.html").write_text(pt._page(f"Links for {project}", "".join(rows)))
