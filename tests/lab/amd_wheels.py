"""Double of AMD's stable wheel index for the ROCm Core SDK,
https://stable.repo.amd.com/rocm/whl-next/, where a 10.x release gets its torch
(download.pytorch.org publishes none).

Built from the recorded facts (tests/fixtures/upstream/repo.amd.com-whl.toml), never from
the product's matrix: per release the exact torch / torchvision / torchaudio builds of AMD's
install page with the label ``+rocm<release>``, the targets the page gives a device extra and
the targets it offers fewer builds (gfx1150: torch 2.12.0 only); torch requires
``rocm[libraries]==<release>`` (``[runtime] torch_requires``); ``torch[device-<gfx>]`` brings
``amd-torch-device-<gfx>``, which requires ``rocm-sdk-device-<gfx>``; ``torchvision[device-
<gfx>]`` brings ``amd-torchvision-device-<gfx>``; torchaudio takes no extra. The torch double
is download.pytorch.org's (``pytorch_index``): it reads the host's GPU profile.

``rocm`` is served as AMD publishes it, an sdist only (the record's ``rocm_dist``), built on
the host with setuptools the index serves beside it (the record's ``lab_note``). Stand-ins,
where the record says AMD's form was not read or the lab can't have it: torch.version.hip; and the
one dependency of torch the index also serves (filelock, as the download.pytorch.org double
does: AMD's ``--index-url``-only commands imply the index serves torch's dependencies).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from . import pytorch_index as pt
from . import upstream_facts as facts
from .amd_repo import Release

_RECORD = facts.amd_wheel_record()
URL = _RECORD["stable"]["url"]
HOST = urlsplit(URL).hostname
PATH = urlsplit(URL).path.strip("/")  # rocm/whl-next


def hip_version(release: str) -> str:
    """A stand-in torch.version.hip for AMD's build for ``release`` (not read)."""
    return f"{release}.60000-amdlab"


def releases_served(releases: list[Release]) -> list[facts.AmdWheelRelease]:
    """The recorded (or synthetic) releases of ``releases`` the index serves."""
    served = {**facts.amd_stable_releases(), **facts.synthetic_amd_stable_releases()}
    return [served[r.version] for r in releases if r.version in served]


def build(www: Path, releases: list[Release]) -> list[pt.Wheel]:
    """Write the index under ``www`` (the stable.repo.amd.com double's root) for the
    members of ``releases`` it serves; nothing when there are none."""
    served = releases_served(releases)
    if not served:
        return []
    out = www / PATH
    name, version = pt.DEPENDENCY
    module = {f"{name}/__init__.py": f'"""{name} double."""\n__version__ = "{version}"\n'}
    wheels = [pt.write_wheel(out, name, version, module)]
    for rel in served:
        wheels += _release(out, rel)
    _write_pages(www, out, wheels)
    return wheels


def _release(out: Path, rel: facts.AmdWheelRelease) -> list[pt.Wheel]:
    label = f"+{rel.label}"
    runtime = _RECORD["runtime"]["torch_requires"].format(release=rel.version)
    wheels = _runtime(out, rel)
    for torch_s, vision_s, audio_s in rel.builds:
        torch_v, vision_v = f"{torch_s}{label}", f"{vision_s}{label}"
        # The targets AMD offers this build: all, but those the page limits to other builds.
        targets = [g for g in rel.targets if torch_s in rel.target_builds.get(g, (torch_s,))]
        extras = ("device-all", *(f"device-{g}" for g in targets))
        requires = [pt.DEPENDENCY[0], runtime]
        for g in targets:
            device = f"amd-torch-device-{g}"
            requires += [f'{device}=={torch_v}; extra == "device-{g}"']
            requires += [f'{device}=={torch_v}; extra == "device-all"']
            wheels.append(
                pt.write_wheel(
                    out, device, torch_v, {f"_{device.replace('-', '_')}/__init__.py": ""},
                    (f"rocm-sdk-device-{g}=={rel.version}",),
                )
            )  # fmt: skip
        files = pt._torch_files(torch_v, hip_version(rel.version), None)
        wheels.append(pt.write_wheel(out, "torch", torch_v, files, tuple(requires), extras))
        vision_req = [f"torch=={torch_v}"]
        for g in targets:
            device = f"amd-torchvision-device-{g}"
            vision_req += [f'{device}=={vision_v}; extra == "device-{g}"']
            vision_req += [f'{device}=={vision_v}; extra == "device-all"']
            wheels.append(
                pt.write_wheel(
                    out, device, vision_v, {f"_{device.replace('-', '_')}/__init__.py": ""}
                )
            )  # fmt: skip
        wheels.append(
            pt.write_wheel(
                out, "torchvision", vision_v,
                pt._companion("torchvision", vision_v, torch_v), tuple(vision_req), extras,
            )
        )  # fmt: skip
        # One torchaudio may go with two torch builds (2.11.0 with torch 2.11.0 and 2.12.0
        # on 10.0.0's page): it requires torch unpinned.
        audio_v = f"{audio_s}{label}"
        if not any(w.project == "torchaudio" and w.version == audio_v for w in wheels):
            wheels.append(
                pt.write_wheel(
                    out, "torchaudio", audio_v,
                    pt._companion("torchaudio", audio_v, torch_v), ("torch",),
                )
            )  # fmt: skip
    return wheels


def _runtime(out: Path, rel: facts.AmdWheelRelease) -> list[pt.Wheel]:
    """The ROCm runtime of the release, structured as TheRock's table says: ``rocm``
    requires ``rocm-sdk-core``; ``[libraries]`` brings ``rocm-sdk-libraries``,
    ``[device-<gfx>]`` ``rocm-sdk-device-<gfx>``, ``[device-all]`` every one. All at the
    release's version exactly (what torch's ``rocm[libraries]==<release>`` needs)."""
    pin = f"=={rel.version}"
    device = [f"rocm-sdk-device-{g}" for g in rel.targets]
    build_requires = facts.rocm_build_requires()
    wheels = pt.runtime_meta_package(out, rel.version, pin, list(rel.targets), build_requires)
    for name in ["rocm-sdk-core", "rocm-sdk-libraries", *device]:
        module = "_" + name.replace("-", "_")
        wheels.append(pt.write_wheel(out, name, rel.version, {f"{module}/__init__.py": ""}))
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
