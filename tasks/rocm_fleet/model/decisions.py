"""What is decided once per host from its settings and the matrix, and read by everyone
after: the fleet mirror it uses (``Mirror``, resolved by ``model.fleet``) and the PyTorch its
venv gets (``TorchInstall``, decided by ``config.load_config``). Plain data, so that
``config`` (which holds them) and ``sources`` (which turns them into URLs) both build on it
and neither on the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from rocm_fleet.model import matrix
from rocm_fleet.model.matrix import TorchBuild


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
    Every reader (the deploy, the node check, the bundle, the mirror) takes it from here."""

    build: TorchBuild
    index_url: str
    wanted: tuple[tuple[str, str], ...]  # (distribution, exact version), sorted
    requires: tuple[str, ...] = ()

    def requirements(self) -> list[str]:
        return [f"{name}=={version}" for name, version in self.wanted] + list(self.requires)


def torch_install(rel: matrix.Release, build: TorchBuild, index_base_url: str) -> TorchInstall:
    """``build`` of ``rel`` from the PyTorch index under ``index_base_url``."""
    index = rel.torch_index
    if index is None:
        raise ValueError(f"ROCm {rel.version} has no PyTorch index")
    return TorchInstall(
        build,
        f"{index_base_url.rstrip('/')}/{index}",
        tuple(sorted(wanted_wheels(build, index).items())),
        (rel.torch_runtime,) if rel.torch_runtime else (),
    )
