"""Double of download.pytorch.org: PEP 503 indexes with hand-written pure-python wheels.

Why: the deploy installs torch with its production index URL
(https://download.pytorch.org/whl/rocmX.Y) and checks what it got.  The wheels carry
the real naming (`torch-2.9.1+rocm6.4`, torchvision/torchaudio pinned to their torch),
so pip's resolution of local version labels is exercised for real, and the torch double
answers the questions a deploy asks (torch.version.hip, torch.cuda.*, a tiny matmul)
from the host's hardware profile.  Which indexes and builds exist comes from the
product's release matrix, so the double follows the product.
"""

from __future__ import annotations

import base64
import hashlib
import html
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from rocm_fleet.matrix import Release

from . import _torch_double as src
from . import profiles

#: torch.version.hip per ROCm index (real values where known, stand-ins otherwise).
HIP_VERSIONS = {
    "rocm6.2": "6.2.41133-dd7f95766",
    "rocm6.3": "6.3.42131-fa1d09cbd",
    "rocm6.4": "6.4.43482-0f2d60242",
    "rocm7.0": "7.0.51831-a3e329ad8",
    "rocm7.1": "7.1.25424-4179531dcd",
    "rocm7.2": "7.2.26015-fc0010cf6",
}

#: torch's first requirement, as on the real indexes: ``Requires-Dist: filelock``, served
#: from /whl/ beside the indexes (download.pytorch.org/whl/filelock-*.whl) and linked
#: path-absolute from each index's filelock page, so installing torch resolves a dependency
#: the way pip does against download.pytorch.org.
DEPENDENCY = ("filelock", "3.13.1")

#: A CUDA index for preflight tests ("the wrong wheel was installed on an AMD host").
CUDA_INDEXES = {"cu128": ("12.8", ("2.9.1", "0.24.1", "2.9.1"))}

_ZIP_DATE = (2026, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Wheel:
    project: str
    version: str
    path: Path
    sha256: str


def hip_version(index: str) -> str:
    if index in HIP_VERSIONS:
        return HIP_VERSIONS[index]
    major, minor = index.removeprefix("rocm").split(".")[:2]
    return f"{major}.{minor}.40000-00000lab"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def write_wheel(
    out_dir: Path, project: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()
) -> Wheel:
    """Write a py3-none-any wheel (METADATA, WHEEL, RECORD) without any build backend."""
    dist_info = f"{project}-{version}.dist-info"
    metadata = "".join(
        [
            "Metadata-Version: 2.1\n",
            f"Name: {project}\n",
            f"Version: {version}\n",
            "Summary: rocm-fleet lab double (not the real package)\n",
            "Requires-Python: >=3.9\n",
            *(f"Requires-Dist: {r}\n" for r in requires),
        ]
    )
    wheel_meta = (
        "Wheel-Version: 1.0\nGenerator: rocm-fleet-lab\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    entries = dict(files)
    entries[f"{dist_info}/METADATA"] = metadata
    entries[f"{dist_info}/WHEEL"] = wheel_meta
    entries[f"{dist_info}/top_level.txt"] = project + "\n"
    record = [
        f"{name},{_record_hash(body.encode())},{len(body.encode())}"
        for name, body in entries.items()
    ]
    record.append(f"{dist_info}/RECORD,,")
    entries[f"{dist_info}/RECORD"] = "\n".join(record) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{project}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in entries.items():
            info = zipfile.ZipInfo(name, _ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, body)
    return Wheel(project, version, path, hashlib.sha256(path.read_bytes()).hexdigest())


def _torch_files(version: str, hip: str | None, cuda: str | None) -> dict[str, str]:
    def sub(text: str) -> str:
        return (
            text.replace("@VERSION@", version)
            .replace("@HIP@", repr(hip))
            .replace("@CUDA@", repr(cuda))
            .replace("@PROFILE_PATH@", profiles.PROFILE_PATH)
        )

    return {
        "torch/__init__.py": sub(src.TORCH_INIT),
        "torch/version.py": sub(src.TORCH_VERSION),
        "torch/cuda.py": sub(src.TORCH_CUDA),
        "torch/_tensor.py": sub(src.TORCH_TENSOR),
    }


def _companion(project: str, version: str, torch: str) -> dict[str, str]:
    body = (
        src.COMPANION_INIT.replace("@NAME@", project)
        .replace("@VERSION@", version)
        .replace("@TORCH@", torch)
    )
    return {f"{project}/__init__.py": body}


def build_index(
    www: Path,
    index: str,
    builds: list[tuple[str, str, str | None]],
    hip: str | None,
    cuda: str | None,
) -> list[Wheel]:
    """Write /whl/<index>/ (wheels + PEP 503 pages) for (torch, torchvision, torchaudio),
    and torch's dependency in /whl/."""
    out = www / "whl" / index
    name, version = DEPENDENCY
    module = {f"{name}/__init__.py": f'"""{name} double."""\n__version__ = "{version}"\n'}
    wheels: list[Wheel] = [write_wheel(www / "whl", name, version, module)]
    for torch_v, vision_v, audio_v in builds:
        torch_full = f"{torch_v}+{index}"
        torch_files = _torch_files(torch_full, hip, cuda)
        wheels.append(write_wheel(out, "torch", torch_full, torch_files, (name,)))
        pin = (f"torch=={torch_full}",)
        vision_full = f"{vision_v}+{index}"
        wheels.append(
            write_wheel(
                out,
                "torchvision",
                vision_full,
                _companion("torchvision", vision_full, torch_full),
                pin,
            )
        )
        if audio_v:
            audio_full = f"{audio_v}+{index}"
            wheels.append(
                write_wheel(
                    out,
                    "torchaudio",
                    audio_full,
                    _companion("torchaudio", audio_full, torch_full),
                    pin,
                )
            )
    _write_pages(www, out, index, wheels)
    return wheels


def _write_pages(www: Path, out: Path, index: str, wheels: list[Wheel]) -> None:
    projects = sorted({w.project for w in wheels})
    links = "".join(f'<a href="/whl/{index}/{p}/">{p}</a><br/>\n' for p in projects)
    (out / "index.html").write_text(_page("Links for " + index, links))
    for project in projects:
        rows = []
        mine = [w for w in wheels if w.project == project]
        for w in sorted(mine, key=lambda w: _version_key(w.version)):
            href = f"/{quote(str(w.path.relative_to(www)))}#sha256={w.sha256}"
            rows.append(
                f'<a href="{html.escape(href)}" data-requires-python="&gt;=3.9">'
                f"{html.escape(w.path.name)}</a><br/>\n"
            )
        (out / project).mkdir(exist_ok=True)
        (out / project / "index.html").write_text(_page(f"Links for {project}", "".join(rows)))


def _version_key(version: str) -> tuple[int, ...]:
    """2.10.0 sorts after 2.9.1 (string order would not)."""
    public = version.split("+")[0]
    return tuple(int(p) if p.isdigit() else 0 for p in public.split("."))


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html>\n<head><meta name="pypi:repository-version" '
        f'content="1.0"><title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n'
        f"{body}</body>\n</html>\n"
    )


def build(www: Path, releases: list[Release]) -> dict[str, list[Wheel]]:
    """Build every index the given ROCm releases need, plus the CUDA indexes."""
    by_index: dict[str, list[tuple[str, str, str | None]]] = {}
    for rel in releases:
        builds = by_index.setdefault(rel.torch_index, [])
        for b in rel.torch_builds:
            triple = (b.torch, b.torchvision, getattr(b, "torchaudio", None))
            if triple not in builds:
                builds.append(triple)
    result = {}
    for index, builds in by_index.items():
        result[index] = build_index(www, index, builds, hip_version(index), None)
    for index, (cuda, triple) in CUDA_INDEXES.items():
        result[index] = build_index(www, index, [triple], None, cuda)
    return result
