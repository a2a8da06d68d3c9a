"""Double of download.pytorch.org: PEP 503 indexes with hand-written pure-python wheels.

Why: the deploy installs torch with its production index URL
(https://download.pytorch.org/whl/rocmX.Y) and checks what it got.  The wheels carry
the real naming (`torch-2.9.1+rocm6.4`, torchvision/torchaudio pinned to their torch),
so pip's resolution of local version labels is exercised for real, and the torch double
answers the questions a deploy asks (torch.version.hip, torch.cuda.*, a tiny matmul)
from the host's hardware profile.  Which indexes and builds exist comes from the recorded
upstream facts (tests/fixtures/upstream/download.pytorch.org.toml), not from the product's
matrix, so a wrong matrix row meets the index as it really is.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import importlib.metadata
import io
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from packaging.requirements import Requirement

from . import _torch_double as src
from . import profiles
from . import upstream_facts as facts
from .amd_repo import Release

CORE_SDK_GFX_PACKAGES = facts.core_gfx_packages()

#: torch.version.hip per ROCm index (real values where known, stand-ins otherwise).
HIP_VERSIONS = {
    "rocm6.2": "6.2.41133-dd7f95766",
    "rocm6.3": "6.3.42131-fa1d09cbd",
    "rocm6.4": "6.4.43482-0f2d60242",
    "rocm7.0": "7.0.51831-a3e329ad8",
    "rocm7.1": "7.1.25424-4179531dcd",
    "rocm7.2": "7.2.26015-fc0010cf6",
    "rocm7.14": "7.14.60850",  # (3p) torch.version.hip of 2.14.1+rocm7.14
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
    out_dir: Path,
    project: str,
    version: str,
    files: dict[str, str],
    requires: tuple[str, ...] = (),
    extras: tuple[str, ...] = (),
) -> Wheel:
    """Write a py3-none-any wheel (METADATA, WHEEL, RECORD) without any build backend."""
    dist = project.replace("-", "_")  # the wheel spec's escaping of the name
    dist_info = f"{dist}-{version}.dist-info"
    metadata = "".join(
        [
            "Metadata-Version: 2.1\n",
            f"Name: {project}\n",
            f"Version: {version}\n",
            "Summary: rocm-fleet lab double (not the real package)\n",
            "Requires-Python: >=3.9\n",
            *(f"Provides-Extra: {e}\n" for e in extras),
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
    path = out_dir / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, body in entries.items():
            info = zipfile.ZipInfo(name, _ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, body)
    return Wheel(project, version, path, hashlib.sha256(path.read_bytes()).hexdigest())


def write_sdist(
    out_dir: Path,
    project: str,
    version: str,
    package: str,
    requires: list[str],
    extras: dict[str, list[str]],
    build_requires: list[str],
) -> Wheel:
    """Write a buildable sdist as setuptools publishes one, the form of TheRock's ``rocm``
    meta package: ``<name>-<version>/`` with a pyproject.toml (``[build-system]`` naming
    setuptools, ``[project]`` with the dependencies and extras, so the wheel the host builds
    carries them) and a PKG-INFO (core metadata 2.2, the same requirements, static), and
    the empty package ``package``."""
    dist = f"{project.replace('-', '_')}-{version}"

    def toml_list(items: list[str]) -> str:
        return "[" + ", ".join(f'"{_toml_str(item)}"' for item in items) + "]"

    optional = "".join(f'"{extra}" = {toml_list(reqs)}\n' for extra, reqs in extras.items())
    pyproject = (
        f"[build-system]\nrequires = {toml_list(build_requires)}\n"
        'build-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{project}"\nversion = "{version}"\n'
        'description = "rocm-fleet lab double (not the real package)"\n'
        f'requires-python = ">=3.9"\ndependencies = {toml_list(requires)}\n\n'
        f"[project.optional-dependencies]\n{optional}\n"
        f'[tool.setuptools]\npackages = ["{package}"]\n'
    )
    pkg_info = "".join(
        [
            "Metadata-Version: 2.2\n",
            f"Name: {project}\n",
            f"Version: {version}\n",
            "Summary: rocm-fleet lab double (not the real package)\n",
            "Requires-Python: >=3.9\n",
            *(f"Requires-Dist: {r}\n" for r in requires),
            *(f"Provides-Extra: {e}\n" for e in extras),
            *(f'Requires-Dist: {r}; extra == "{e}"\n' for e, rs in extras.items() for r in rs),
        ]
    )
    members = {
        "pyproject.toml": pyproject,
        "PKG-INFO": pkg_info,
        f"{package}/__init__.py": f'"""{project} double."""\n',
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{dist}.tar.gz"
    buffer = io.BytesIO()
    # mtime fixed and gzip's own header time too: the same inputs give the same bytes.
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, body in members.items():
            data = body.encode()
            info = tarfile.TarInfo(f"{dist}/{name}")
            info.size, info.mtime, info.mode = len(data), 1767225600, 0o644
            archive.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))
    return Wheel(project, version, path, hashlib.sha256(path.read_bytes()).hexdigest())


def _toml_str(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def build_backend_wheel(out_dir: Path, requirement: str) -> Wheel:
    """A wheel of the build backend an sdist needs (``setuptools>=70.2.0``), packed from the
    distribution installed beside the lab (tests/lab/pyproject.toml requires it): the real
    setuptools, made without the internet. Its files as its RECORD lists them (bytecode and
    scripts outside site-packages left out), a new RECORD."""
    req = Requirement(requirement)
    dist = importlib.metadata.distribution(req.name)
    if not req.specifier.contains(dist.version, prereleases=True):
        raise RuntimeError(
            f"the lab serves {req.name} {dist.version} from its own venv, but the sdist needs "
            f"{requirement}: `pip install -e tests/lab` installs one that fits"
        )
    name = dist.metadata["Name"].replace("-", "_").lower()
    info_dir = f"{name}-{dist.version}.dist-info"
    skip = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}
    entries: dict[str, bytes] = {}
    for file in dist.files or []:
        posix = file.as_posix()
        if posix.startswith("..") or "__pycache__" in posix or posix.endswith(".pyc"):
            continue
        parts = posix.split("/")
        if parts[0].endswith(".dist-info"):
            if parts[-1] in skip:
                continue
            posix = "/".join([info_dir, *parts[1:]])
        entries[posix] = Path(file.locate()).read_bytes()
    record = [f"{n},{_record_hash(b)},{len(b)}" for n, b in entries.items()]
    entries[f"{info_dir}/RECORD"] = ("\n".join([*record, f"{info_dir}/RECORD,,"]) + "\n").encode()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{dist.version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry, body in sorted(entries.items()):
            info = zipfile.ZipInfo(entry, _ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, body)
    return Wheel(req.name, dist.version, path, hashlib.sha256(path.read_bytes()).hexdigest())


def runtime_meta_package(
    out: Path, version: str, pin: str, targets: list[str], build_requires: list[str]
) -> list[Wheel]:
    """TheRock's ``rocm`` meta package as TheRock publishes it, an sdist only (the records'
    ``rocm_dist``), and the build backend it needs as a wheel on the same index: ``rocm``
    requires ``rocm-sdk-core``; ``[libraries]`` brings ``rocm-sdk-libraries``,
    ``[device-<gfx>]`` ``rocm-sdk-device-<gfx>``, ``[device-all]`` every one, each at
    ``pin`` (TheRock RELEASES.md table)."""
    device = [f"rocm-sdk-device-{g}{pin}" for g in targets]
    extras = {"libraries": [f"rocm-sdk-libraries{pin}"], "device-all": device}
    extras |= {f"device-{g}": [d] for g, d in zip(targets, device, strict=True)}
    sdist = write_sdist(out, "rocm", version, "rocm_sdk", [f"rocm-sdk-core{pin}"], extras,
                        build_requires)  # fmt: skip
    return [sdist, *(build_backend_wheel(out, r) for r in build_requires)]


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


def runtime_wheels(out: Path, requirement: str) -> list[Wheel]:
    """Stand-ins of the pip ROCm runtime a Core SDK torch requires (``rocm[device-all,
    libraries]==7.14.*``), with its structure (TheRock's rocm_sdk/_dist_info.py): ``rocm``
    requires ``rocm-sdk-core``; its extra ``libraries`` brings ``rocm-sdk-libraries``,
    ``device-<gfx>`` one ``rocm-sdk-device-<gfx>`` and ``device-all`` every one. ``rocm``
    is an sdist ((3p) installed as rocm==7.14.0.post1; the record's ``runtime_dist``) with
    setuptools beside it."""
    req = Requirement(requirement)
    release = str(req.specifier).removeprefix("==").removesuffix(".*") + ".0"
    pin = f"=={release}"
    device = [f"rocm-sdk-device-{gfx}" for gfx in CORE_SDK_GFX_PACKAGES]
    build_requires = facts.rocm_build_requires()
    wheels = runtime_meta_package(
        out, f"{release}.post1", pin, list(CORE_SDK_GFX_PACKAGES), build_requires
    )
    for name in ["rocm-sdk-core", "rocm-sdk-libraries", *device]:
        module = "_" + name.replace("-", "_")
        wheels.append(write_wheel(out, name, release, {f"{module}/__init__.py": ""}))
    return wheels


def build_index(
    www: Path,
    index: str,
    builds: list[tuple[str, str, str | None]],
    hip: str | None,
    cuda: str | None,
) -> list[Wheel]:
    """Write /whl/<index>/ (wheels + PEP 503 pages) for (torch, torchvision, torchaudio),
    torch's dependency in /whl/, and the pip ROCm runtime the index's torch requires, if any
    (the record)."""
    out = www / "whl" / index
    name, version = DEPENDENCY
    module = {f"{name}/__init__.py": f'"""{name} double."""\n__version__ = "{version}"\n'}
    wheels: list[Wheel] = [write_wheel(www / "whl", name, version, module)]
    runtime = facts.torch_runtime(index)
    if runtime:
        wheels += runtime_wheels(out, runtime)
    for torch_v, vision_v, audio_v in builds:
        torch_full = f"{torch_v}+{index}"
        torch_files = _torch_files(torch_full, hip, cuda)
        requires = (name, runtime) if runtime else (name,)
        wheels.append(write_wheel(out, "torch", torch_full, torch_files, requires))
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
    recorded = facts.torch_indexes()
    for rel in releases:
        index = facts.release_index(rel.version)
        if index is None:
            continue  # no index publishes torch for it (the record)
        builds = by_index.setdefault(index, [])
        for triple in recorded[index]:
            if triple not in builds:
                builds.append(triple)
    result = {}
    for index, builds in by_index.items():
        result[index] = build_index(www, index, builds, hip_version(index), None)
    for index, (cuda, triple) in CUDA_INDEXES.items():
        result[index] = build_index(www, index, [triple], None, cuda)
    return result


def build_drift(www: Path, drift: Path, index: str, project: str, version: str) -> Path:
    """An overlay of the index whose ``project`` page no longer lists the ``version`` wheel
    (one the product's matrix pins), for the lab's `plant_matrix_drift` to serve in front
    of the index. Returns the overlay's root."""
    page = www / "whl" / index / project / "index.html"
    wanted = f"{project.replace('-', '_')}-{version}-"
    lines = [line for line in page.read_text().splitlines(keepends=True) if wanted not in line]
    if len(lines) == len(page.read_text().splitlines(keepends=True)):
        raise ValueError(f"{index}/{project} lists no {version} wheel to drop")
    target = drift / "whl" / index / project / "index.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines))
    return drift
