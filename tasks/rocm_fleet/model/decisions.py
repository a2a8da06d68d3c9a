"""Per-host decisions read by everyone after: the fleet ``Mirror`` and the ``TorchInstall``; a
venv's distributions against a wheel set's pins (PEP 503 names, pip's ``==``, PEP 508)."""

import re
from collections.abc import Mapping
from dataclasses import astuple, dataclass
from urllib.parse import urlsplit

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from rocm_fleet.model import matrix
from rocm_fleet.model.torch_builds import TORCH_RUNTIME_WHEELS, TorchBuild


@dataclass(frozen=True)
class Mirror:
    """The fleet mirror a host uses (``rocm_mirror``). ``host`` None: served elsewhere;
    ``bundle`` None: a live cache; ``ca`` None: plain HTTP or the system's CAs."""

    url: str
    host: str | None = None
    bundle: str | None = None
    serves: bool = False
    ca: str | None = None

    @property
    def tls(self) -> bool:
        return self.url.startswith("https://")

    @property
    def hostname(self) -> str:
        return urlsplit(self.url).hostname or ""


def wanted_wheels(build: TorchBuild, label: str) -> dict[str, str]:
    """Each wheel pinned with the index's local label (``0.24.1+rocm6.4``)."""
    wanted = zip(("torch", "torchvision", "torchaudio"), astuple(build), strict=True)
    return {name: f"{version}+{label}" for name, version in wanted if version}


def pinned_requirements(
    wanted: tuple[tuple[str, str], ...],
    extras: tuple[tuple[str, tuple[str, ...]], ...] = (),
    requires: tuple[str, ...] = (),
) -> list[str]:
    """PEP 508 lines (built by ``packaging``): exact pins with extras, then ``requires``."""
    by_name = dict(extras)
    lines = []
    for name, version in wanted:
        req = Requirement(f"{name}=={version}")
        req.extras = set(by_name.get(name, ()))
        lines.append(str(req))
    return lines + list(requires)


@dataclass(frozen=True)
class TorchInstall:
    """The PyTorch a host's venv gets: the build, its one index, exact pins with extras and
    what it requires from the same index."""

    build: TorchBuild
    index_url: str
    wanted: tuple[tuple[str, str], ...]  # (distribution, exact version), sorted
    requires: tuple[str, ...] = ()
    extras: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (distribution, its extras)

    def requirements(self) -> list[str]:
        return pinned_requirements(self.wanted, self.extras, self.requires)

    @property
    def runtime_from_pip(self) -> bool:
        """Whether pip brings the ROCm runtime (``rocm`` and its ``rocm-sdk-*`` parts)."""
        return any(Requirement(r).name == "rocm" for r in self.requires)

    def accepts(self, name: str, version: str | None) -> bool:
        """Whether an installed ``name`` at ``version`` is the pinned build, exactly."""
        return version is not None and dict(self.wanted).get(name) == version


def torch_install(
    rel: matrix.Release, build: TorchBuild, index_base_url: str, gfx: list[str] | None = None
) -> TorchInstall:
    """``build`` of ``rel`` from its PyTorch index, or AMD's with the device extras of ``gfx``."""
    source = rel.torch_source
    if source is None:
        raise ValueError(f"ROCm {rel.version} has no PyTorch index")
    return TorchInstall(
        build,
        source.url(index_base_url),
        tuple(sorted(wanted_wheels(build, source.label).items())),
        (source.runtime,) if source.runtime else (),
        source.extras(gfx or []),
    )


# torch and its companions, whichever index they came from.
TORCH_FAMILY = r"torch|torchvision|torchaudio"


def owned_wheels(torch: TorchInstall) -> list[str]:
    """Patterns of the distributions the torch pins manage (the others' device wheels too)."""
    owned = [TORCH_FAMILY]
    if not torch.runtime_from_pip:
        owned.append(TORCH_RUNTIME_WHEELS.pattern)
    torch_targets = {e for _, extras in torch.extras for e in extras}
    runtime_extras = {e for r in torch.requires for e in Requirement(r).extras}
    runtime_targets = torch_targets | {e for e in runtime_extras if e.startswith("device-")}
    if "device-all" not in torch_targets:
        owned.append(_device_wheels(r"amd-torch(?:vision)?", torch_targets))
    if torch.runtime_from_pip and "device-all" not in runtime_targets:
        owned.append(_device_wheels("rocm-sdk", runtime_targets))
    return owned


def _device_wheels(prefix: str, kept: set[str]) -> str:
    """``<prefix>-device-<gfx>`` for every gfx but those of the ``device-<gfx>`` extras kept."""
    gfx = sorted(e.removeprefix("device-") for e in kept)
    others = f"(?!(?:{'|'.join(map(re.escape, gfx))})$)" if gfx else ""
    return rf"{prefix}-device-{others}.+"


def normal_name(name: str) -> str:
    """A distribution name as PEP 503 normalises it ("Torch_Audio" -> "torch-audio")."""
    return canonicalize_name(name)


def normal_versions(found: Mapping[str, str] | None) -> dict[str, str]:
    """A venv's distributions, normalised name -> version (empty: no venv)."""
    return {normal_name(name): version for name, version in (found or {}).items()}


def version_matches(installed: str | None, wanted: str) -> bool:
    """PEP 440 ``==`` for the two shapes we pin: exact with a local label, or public only."""
    if installed is None:
        return False
    return installed == wanted if "+" in wanted else installed.split("+")[0] == wanted


def requirement_met(installed: Mapping[str, str], requirement: str) -> bool:
    """Whether the distribution of a PEP 508 requirement matches (extras are not checked)."""
    req = Requirement(requirement)
    try:
        version = Version(installed.get(normal_name(req.name)) or "")
    except InvalidVersion:
        return False
    return req.specifier.contains(version, prereleases=True)
