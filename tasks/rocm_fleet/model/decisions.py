"""What is decided once per host from its settings and the matrix, and read by everyone
after: the fleet mirror it uses (``Mirror``, resolved by ``model.fleet``) and the PyTorch its
venv gets (``TorchInstall``, decided by ``config.load_config``). Plain data, so that
``config`` (which holds them) and ``sources`` (which turns them into URLs) both build on it
and neither on the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from rocm_fleet.model import matrix
from rocm_fleet.model.matrix import TorchBuild


@dataclass(frozen=True)
class Mirror:
    """The fleet mirror a host uses (``rocm_mirror``): the base URL hosts fetch from, the
    inventory host serving it (None: a server run elsewhere), the bundle it serves (a path
    where pyinfra runs; None: a live cache of upstream), and whether this host serves it."""

    url: str
    host: str | None = None
    bundle: str | None = None
    serves: bool = False

    @property
    def hostname(self) -> str:
        return urlsplit(self.url).hostname or ""


def wanted_wheels(build: TorchBuild, torch_index: str) -> dict[str, str]:
    """Each wheel pinned with the index's local label (``0.24.1+rocm6.4``).

    Pinning the companions by public version alone would keep a torchvision of another
    build in place whenever two indexes publish the same version (torchvision 0.20.1 is on
    rocm6.1 and rocm6.2; PyPI's CUDA 0.24.1 after a migration), leaving a mix in the venv.
    """
    wanted = {"torch": build.torch, "torchvision": build.torchvision}
    if build.torchaudio:
        wanted["torchaudio"] = build.torchaudio
    return {name: f"{version}+{torch_index}" for name, version in wanted.items()}


@dataclass(frozen=True)
class TorchInstall:
    """The PyTorch a host's venv gets, decided once (``config.load_config``, from
    ``pytorch_install``, ``torch_version`` and the release's index): the build, the index
    it comes from upstream, each wheel pinned with the index's local label, and what the
    build requires from the same index beyond them (the Core SDK's pip ROCm runtime).
    Every reader (the deploy, the node check, the bundle, the mirror) takes it from here.

    From AMD's multi-arch index (ROCm 10.x) nothing is pinned exactly (its patch versions
    and local labels were not read): ``wanted`` is empty and ``requires`` holds PEP 508
    requirements with the ``[device-*]`` extras, ``torch[device-gfx942]==2.14.*``, ...,
    ``rocm[device-gfx942,libraries]==10.1.0.*``."""

    build: TorchBuild
    index_url: str
    wanted: tuple[tuple[str, str], ...]  # (distribution, exact version), sorted
    requires: tuple[str, ...] = ()

    def requirements(self) -> list[str]:
        return [f"{name}=={version}" for name, version in self.wanted] + list(self.requires)

    @property
    def runtime_from_pip(self) -> bool:
        """Whether pip brings the ROCm runtime (``rocm`` and its ``rocm-sdk-*`` parts)."""
        return any(Requirement(r).name == "rocm" for r in self.requires)

    def accepts(self, name: str, version: str | None) -> bool:
        """Whether an installed ``name`` at ``version`` is what this install wants: the
        exact pin (``2.9.1+rocm6.4``), or, from AMD's index, a version the requirement
        allows carrying a ROCm local label (``2.13.0+rocm10.0.0`` as research notes saw
        it; the label's exact form is not recorded, so only its ``rocm`` prefix is held)."""
        if version is None:
            return False
        pins = dict(self.wanted)
        if name in pins:
            return version == pins[name]
        for line in self.requires:
            req = Requirement(line)
            if req.name != name:
                continue
            try:
                parsed = Version(version)
            except InvalidVersion:
                return False
            local = parsed.local or ""
            return req.specifier.contains(parsed, prereleases=True) and local.startswith("rocm")
        return False


def amd_requirements(
    amd: matrix.AmdWheels, rel: matrix.Release, build: TorchBuild, gfx: list[str]
) -> tuple[str, ...]:
    """The requirements for ``build`` from AMD's index, each built and validated by
    ``packaging`` (never by string concatenation): the torch family pinned to its series,
    with the ``[device-*]`` extras where AMD defines them, and the ``rocm`` runtime with
    ``libraries`` pinned to the release (``==10.1.0.*``: post releases match, 10.1.1 not)."""
    extras = amd.device_extras(gfx)
    series = {"torch": build.torch, "torchvision": build.torchvision}
    if build.torchaudio:
        series["torchaudio"] = build.torchaudio
    wanted = [(name, f"=={version}.*") for name, version in series.items()]
    wanted.append(("rocm", f"=={rel.version}.*"))
    lines = []
    for name, spec in wanted:
        req = Requirement(name)
        req.specifier &= spec
        if name in amd.device_extra_on:
            req.extras = set(extras) | ({"libraries"} if name == "rocm" else set())
        lines.append(str(Requirement(str(req))))  # round-trips: what pip will parse
    return tuple(lines)


def torch_install(
    rel: matrix.Release, build: TorchBuild, index_base_url: str, gfx: list[str] | None = None
) -> TorchInstall:
    """``build`` of ``rel`` from the PyTorch index under ``index_base_url``, or, for a
    release PyTorch builds nothing for, from AMD's own index with the ``[device-*]`` extras
    of ``gfx`` (the host's ``expected_gfx``; none: ``device-all``)."""
    index = rel.torch_index
    if index is None:
        if rel.amd_wheels is None:
            raise ValueError(f"ROCm {rel.version} has no PyTorch index")
        amd = rel.amd_wheels
        return TorchInstall(build, amd.url, (), amd_requirements(amd, rel, build, gfx or []))
    return TorchInstall(
        build,
        f"{index_base_url.rstrip('/')}/{index}",
        tuple(sorted(wanted_wheels(build, index).items())),
        (rel.torch_runtime,) if rel.torch_runtime else (),
    )
