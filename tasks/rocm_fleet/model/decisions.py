"""What is decided once per host from its settings and the matrix, and read by everyone
after: the fleet mirror it uses (``Mirror``, resolved by ``model.fleet``) and the PyTorch its
venv gets (``TorchInstall``, decided by ``config.load_config`` from the release's
``matrix.TorchSource``; ``owned_wheels``: the distributions its pins manage). Plain data, so that
``config`` (which holds them) and ``sources`` (which turns them into URLs) both build on it
and neither on the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from packaging.requirements import Requirement

from rocm_fleet.model import matrix
from rocm_fleet.model.matrix import TORCH_RUNTIME_WHEELS, TorchBuild


@dataclass(frozen=True)
class Mirror:
    """The fleet mirror a host uses (``rocm_mirror``): the base URL hosts fetch from, the
    inventory host serving it (None: a server run elsewhere), the bundle it serves (a path
    where pyinfra runs; None: a live cache of upstream), whether this host serves it, and
    the CA its certificate is pinned to (a path where pyinfra runs; None: plain HTTP, or an
    ``https://`` mirror elsewhere that the system's CAs vouch for)."""

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
    """Each wheel pinned with the index's local label (``0.24.1+rocm6.4``; AMD's
    ``2.13.0+rocm10.0.0``).

    Pinning the companions by public version alone would keep a torchvision of another
    build in place whenever two indexes publish the same version (torchvision 0.20.1 is on
    rocm6.1 and rocm6.2; PyPI's CUDA 0.24.1 after a migration), leaving a mix in the venv.
    """
    wanted = {"torch": build.torch, "torchvision": build.torchvision}
    if build.torchaudio:
        wanted["torchaudio"] = build.torchaudio
    return {name: f"{version}+{label}" for name, version in wanted.items()}


def pinned_requirements(
    wanted: tuple[tuple[str, str], ...],
    extras: tuple[tuple[str, tuple[str, ...]], ...] = (),
    requires: tuple[str, ...] = (),
) -> list[str]:
    """PEP 508 lines for pip, each exact pin with its extras, built and validated by
    ``packaging`` (never by string concatenation): ``torch[device-gfx942]==2.13.0+rocm10.0.0``,
    ..., then ``requires`` (the runtime) as they are."""
    by_name = dict(extras)
    lines = []
    for name, version in wanted:
        req = Requirement(f"{name}=={version}")
        req.extras = set(by_name.get(name, ()))
        lines.append(str(req))
    return lines + list(requires)


@dataclass(frozen=True)
class TorchInstall:
    """The PyTorch a host's venv gets, decided once (``config.load_config``, from
    ``pytorch_install``, ``torch_version``, the release's index and, for AMD's index, the
    host's ``expected_gfx``): the build, the one index it comes from upstream, each wheel
    pinned exactly with the index's local label, the extras a pinned wheel is installed
    with (AMD's ``[device-<gfx>]``), and what the build requires from the same index beyond
    them (the Core SDK's pip ROCm runtime). Every reader (the deploy, the node check, the
    bundle, the mirror, a lock) takes ``index_url`` and ``requirements()`` from here."""

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
    """``build`` of ``rel`` from the PyTorch index under ``index_base_url``, or, for a
    release PyTorch builds nothing for, from AMD's own index with the ``[device-*]`` extras
    of ``gfx`` (the host's ``expected_gfx``; none: ``device-all``) on torch and
    torchvision, and the ROCm runtime torch requires."""
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
    """The distributions the torch pins manage: the torch family; the pip ROCm runtime
    unless the torch requires it (then pip manages its parts); and the per-target device
    wheels AMD's ``[device-<gfx>]`` extras install (``amd-torch-device-<gfx>``,
    ``amd-torchvision-device-<gfx>``, ``rocm-sdk-device-<gfx>``) of every target the install
    no longer names: after a move to another GPU target, or back to a PyTorch index."""
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
