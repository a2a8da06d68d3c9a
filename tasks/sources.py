"""What a host fetches from upstream, described once, and how it gets there.

AMD's apt repositories (where, which suite and component, which key signs them) and the
PyTorch wheel index with the wheels it must give the host's Python. The deploy writes its
apt source lines from these descriptions (``repository``, ``driver``), ``rocm-fleet
bundle`` fetches exactly what they name for every host of an inventory, and preflight
checks a bundle against them; so a new stream (the ROCm Core SDK on repo.amd.com) is one
more description here, not a change to the bundle.

How: straight from upstream, or from the fleet mirror (``served``: the upstream URL under
the mirror, ``http://mirror:8080/repo.radeon.com/rocm/apt/6.4.3``, so one mirror carries
every upstream without their paths colliding, as a bundle lays them out on disk), and
through the inventory's proxy (``proxy_environment``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from rocm_fleet import matrix, paths
from rocm_fleet.matrix import TorchBuild

if TYPE_CHECKING:
    from rocm_fleet.config import Config


@dataclass(frozen=True)
class SigningKey:
    """An armored OpenPGP key fetched from ``url``; only one whose primary key has
    ``fingerprint`` is used."""

    url: str
    fingerprint: str


@dataclass(frozen=True)
class AptRepository:
    """One apt source: ``url`` holds ``dists/`` and ``pool/`` (a flat layout apt reads as
    ``deb URL SUITE COMPONENT``), signed by ``key``."""

    url: str
    suite: str
    key: SigningKey
    keyring: str = paths.ROCM_KEYRING
    component: str = "main"
    architecture: str = "amd64"

    def source_line(self) -> str:
        return (
            f"deb [arch={self.architecture} signed-by={self.keyring}] "
            f"{self.url} {self.suite} {self.component}\n"
        )

    @property
    def dists_url(self) -> str:
        return f"{self.url}/dists/{self.suite}"

    @property
    def packages_index(self) -> str:
        """The path of the package index under ``dists_url`` (compressed variants add a
        suffix), as InRelease lists it."""
        return f"{self.component}/binary-{self.architecture}/Packages"

    def describe(self) -> str:
        return f"{self.url} {self.suite} {self.component}"

    def via(self, mirror: Mirror | None) -> AptRepository:
        """This repository as hosts of ``mirror`` reach it (the key fetched from it too)."""
        if mirror is None:
            return self
        key = SigningKey(served(self.key.url, mirror), self.key.fingerprint)
        return replace(self, url=served(self.url, mirror), key=key)


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


def mirror_path(url: str) -> str:
    """Where an upstream URL lives under a mirror (and in a bundle): its host, then its
    path, decoded (``download.pytorch.org/whl/rocm6.4/torch-2.9.1+rocm6.4-...whl``)."""
    parts = urlsplit(url)
    return f"{parts.netloc}{unquote(parts.path)}"


def served(url: str, mirror: Mirror | None) -> str:
    """``url`` as hosts of ``mirror`` fetch it (itself without a mirror)."""
    if mirror is None:
        return url
    parts = urlsplit(url)
    return f"{mirror.url.rstrip('/')}/{parts.netloc}{parts.path}"


def no_proxy(config: Config) -> list[str]:
    """The hosts reached directly: ``rocm_no_proxy`` and the fleet mirror."""
    names = list(config.rocm_no_proxy)
    mirror = config.mirror.hostname if config.mirror else ""
    if mirror and mirror not in names:
        names.append(mirror)
    return names


def proxy_environment(config: Config) -> dict[str, str]:
    """The variables curl and pip (requests) take their proxy from; empty without one."""
    if not config.rocm_proxy:
        return {}
    variables = {"http_proxy": config.rocm_proxy, "https_proxy": config.rocm_proxy}
    if no_proxy(config):
        variables["no_proxy"] = ",".join(no_proxy(config))
    return variables


@dataclass(frozen=True)
class AptNeed:
    """Packages a host installs from one repository (their dependencies come along)."""

    repository: AptRepository
    packages: tuple[str, ...]


@dataclass(frozen=True)
class WheelNeed:
    """Wheels a host's venv installs from one PEP 503 index, for the host's Python."""

    index_url: str
    runtime: matrix.HostRuntime
    wanted: tuple[tuple[str, str], ...]  # (distribution, exact version), sorted

    def requirements(self) -> list[str]:
        return [f"{name}=={version}" for name, version in self.wanted]


@dataclass(frozen=True)
class HostNeeds:
    apt: tuple[AptNeed, ...] = ()
    wheels: tuple[WheelNeed, ...] = ()


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


def rocm_key(config: Config) -> SigningKey:
    return SigningKey(config.rocm_key_url, config.rocm_key_fingerprint.upper())


def rocm_repository(config: Config, row: matrix.Distro) -> AptRepository:
    """AMD's ROCm source for the release: ``rocm/apt/<apt path>``, the suite from the
    matrix (Debian 12 -> jammy), AMD's key (fact sheet §3.2)."""
    url = f"{config.rocm_apt_base_url.rstrip('/')}/{config.release.apt_path}"
    return AptRepository(url, row.suite, rocm_key(config))


def amdgpu_repository(config: Config, row: matrix.Distro) -> AptRepository | None:
    """AMD's driver source ``amdgpu/<version>/ubuntu`` (fact sheet §3.2): same key and suite
    as the ROCm source; None when the matrix doesn't know the release's driver."""
    version = matrix.amdgpu_repo_version(config.release)
    if version is None:
        return None
    url = f"{config.rocm_amdgpu_apt_base_url.rstrip('/')}/{version}/ubuntu"
    return AptRepository(url, row.suite, rocm_key(config))


def host_needs(config: Config, row: matrix.Distro) -> HostNeeds:
    """Everything a host with ``config`` on distro ``row`` fetches from AMD and PyTorch."""
    apt = [AptNeed(rocm_repository(config, row), tuple(config.rocm_packages))]
    driver = amdgpu_repository(config, row) if config.rocm_driver == "dkms" else None
    if driver is not None:
        apt.append(AptNeed(driver, (matrix.AMDGPU_DRIVER_PACKAGE,)))
    wheels = []
    build, index = config.torch_build, config.release.torch_index
    if config.pytorch_install and build is not None and index is not None:
        runtime = matrix.HOST_RUNTIMES[row.key]
        wanted = tuple(sorted(wanted_wheels(build, index).items()))
        wheels.append(WheelNeed(config.torch_index_url, runtime, wanted))
    return HostNeeds(tuple(apt), tuple(wheels))
