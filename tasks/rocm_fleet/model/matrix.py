"""The compatibility matrix: every ROCm / distro / PyTorch fact the deploy relies on (releases,
distros, kernels; GPU targets, streams and PyTorch's sources in gpu_targets, streams and
torch_builds), typed from the data files beside it (docs/decisions/matrix-data-and-citations.md)."""

import functools
from dataclasses import dataclass, field
from enum import Enum

from rocm_fleet.model import upstream_data
from rocm_fleet.model.streams import (
    CLASSIC,
    CLASSIC_REPOSITORY,
    CORE_SDK,
    REPOSITORIES,
    Publication,
    Repository,
    Stream,
)
from rocm_fleet.model.torch_builds import (
    AMD_WHEELS,
    AmdWheels,
    TorchBuild,
    TorchSource,
    torch_source,
)
from rocm_fleet.model.versions import kernel_key, release_key, release_tag


class Support(Enum):
    """How AMD lists a distro for a release."""

    OFFICIAL = "official"
    INSTINCT_ONLY = "instinct-only"
    UNLISTED = "unlisted"  # published, not listed
    REJECTED = "rejected"  # published, but the distro's apt refuses the signature


@dataclass(frozen=True)
class Distro:
    id: str  # os-release ID
    version: str  # os-release VERSION_ID (major for Debian)
    suite: str  # repo.radeon.com's suite for it

    @property
    def key(self) -> str:
        return f"{self.id} {self.version}"


DISTROS = tuple(Distro(r["id"], r["version"], r["suite"]) for r in upstream_data.DISTRO_ROWS)
DISTRO_KEYS = tuple(row.key for row in DISTROS)  # "ubuntu 22.04", ...: what settings name


@dataclass(frozen=True)
class HostRuntime:
    """A distro release's ``python3`` and glibc (major.minor), which its wheels must match."""

    python: str
    glibc: str


HOST_RUNTIMES = {r["key"]: HostRuntime(r["python"], r["glibc"]) for r in upstream_data.DISTRO_ROWS}


def distro(distro_id: str, version_id: str, override: str | None = None) -> Distro | None:
    """The row for an os-release ID / VERSION_ID, else the row ``override`` names, else None."""
    version = version_id.split(".")[0] if distro_id == "debian" else version_id
    found = next((r for r in DISTROS if (r.id, r.version) == (distro_id, version)), None)
    return found or next((r for r in DISTROS if override and r.key == override), None)


@dataclass(frozen=True)
class Release:
    version: str  # "6.4.3"
    stream: Stream = field(repr=False)
    repository: Repository = field(repr=False)
    torch_index: str | None  # "rocm6.4"; None: no PyTorch index
    amdgpu_driver: str | None = None  # 7.x: the separately versioned driver
    no_torch: str | None = None  # why there is no torch index
    amd_wheels: AmdWheels | None = None  # AMD's own torch, where PyTorch has no index

    @property
    def parts(self) -> tuple[int, ...]:
        return release_key(self.version)

    @property
    def apt_path(self) -> str:
        """Directory under rocm/apt: 6.4 for 6.4.0 (AMD: "NO trailing .0")."""
        major, minor, patch = self.parts
        return f"{major}.{minor}" if patch == 0 else self.version

    @property
    def numeric_tag(self) -> str:
        """The tag in AMD's classic package versions: 6.4.3 -> 60403."""
        return release_tag(self.version)

    @functools.cached_property
    def torch_source(self) -> TorchSource | None:
        return torch_source(self.torch_index, self.amd_wheels)

    @property
    def torch_builds(self) -> tuple[TorchBuild, ...]:
        return self.torch_source.builds if self.torch_source else ()

    @property
    def torch_runtime(self) -> str | None:
        """The pip requirement torch brings for its ROCm runtime, None when bundled."""
        return self.torch_source.runtime if self.torch_source else None

    @property
    def no_torch_reason(self) -> str:
        return self.no_torch or f"the matrix knows no PyTorch index built for ROCm {self.version}"

    @property
    def root(self) -> str:
        return self.stream.root(self)

    @property
    def rocminfo(self) -> str:
        return f"{self.root}/bin/rocminfo"

    def publication(self, row: Distro) -> Publication | None:
        pub = self.stream.publication(row)
        return None if pub is None or self.parts < release_key(pub.first_release) else pub

    def support(self, row: Distro) -> Support | None:
        """How AMD lists ``row`` for this release; None when it publishes nothing for it."""
        pub = self.publication(row)
        if pub is None:
            return None
        if row.key in SHA1_REJECTING_DISTROS and sha1_bound(self):
            return Support.REJECTED
        if pub.listed_from is None or self.parts < release_key(pub.listed_from):
            return Support.UNLISTED
        return Support.INSTINCT_ONLY if pub.instinct_only else Support.OFFICIAL

    def lists_gpu(self, gfx: str) -> bool:
        return self.stream.lists_gpu(self, gfx)


def _release_row(row: dict) -> Release:
    """A Release from a row of upstream_data.RELEASES (a 10.x torch comes from AMD_WHEELS)."""
    version, index, driver = row["version"], row["torch_index"], row["amdgpu_driver"]
    if row["stream"] == CLASSIC.name:
        return Release(version, CLASSIC, CLASSIC_REPOSITORY, index, driver)
    repository = next(r for r in REPOSITORIES if r.name == row["repository"])
    amd = AMD_WHEELS.get(version) if index is None else None
    return Release(version, CORE_SDK, repository, index, driver, amd_wheels=amd)


RELEASES: tuple[Release, ...] = tuple(_release_row(row) for row in upstream_data.RELEASES)

_BY_VERSION = {r.version: r for r in RELEASES}


def release(version: str) -> Release:
    """Raises KeyError for an unknown release."""
    return _BY_VERSION[version]


def release_versions() -> list[str]:
    return [r.version for r in RELEASES]


# Classic releases up to 7.0.1: a SHA-1 key binding only, which Debian 13's apt (sqv) rejects
# (docs/decisions/matrix-data-and-citations.md).
SHA1_BOUND_LAST = "7.0.1"
SHA1_REJECTING_DISTROS = ("debian 13",)


def sha1_bound(rel: Release) -> bool:
    return rel.stream is CLASSIC and rel.parts <= release_key(SHA1_BOUND_LAST)


def accepted_alternatives(row: Distro) -> tuple[Release | None, Release | None]:
    """The first classic and first Core SDK release ``row``'s apt accepts (None: none)."""
    ok = [r for r in RELEASES if r.support(row) not in (None, Support.REJECTED)]
    classic, core = (next((r for r in ok if r.stream is s), None) for s in (CLASSIC, CORE_SDK))
    return classic, core


_KERNELS = upstream_data.KERNEL_ROWS  # kernels.json, each row cited
# The oldest kernel AMD lists per distro:
MIN_KERNEL: dict[str, str] = {r["distro"]: r["kernel"] for r in _KERNELS["min_kernel"]}


@dataclass(frozen=True)
class FamilyKernel:
    """The kernel AMD lists for a GPU family on a distro; ``kind``: "ga", "hwe" or "oem"."""

    kernel: str
    kind: str


FAMILY_KERNEL: dict[tuple[str, str], FamilyKernel] = {
    (r["distro"], r["family"]): FamilyKernel(r["kernel"], r["kind"])
    for r in _KERNELS.get("family_kernel", [])
}
# The oldest kernel whose inbox amdgpu runs the GPU target:
INBOX_MIN_KERNEL: dict[str, str] = {r["gfx"]: r["kernel"] for r in _KERNELS["inbox_min_kernel"]}


def inbox_min_kernel(gfx_targets: list[str]) -> str | None:
    """The newest of the minimum kernels of ``gfx_targets``, or None."""
    mins = [INBOX_MIN_KERNEL[g] for g in gfx_targets if g in INBOX_MIN_KERNEL]
    return max(mins, key=kernel_key) if mins else None


@dataclass(frozen=True)
class NewerKernel:
    """Where a distro gets a newer kernel: "backports" (Debian, ``suite``) or "hwe" (Ubuntu)."""

    kind: str
    suite: str | None
    packages: tuple[str, ...]


NEWER_KERNELS: dict[str, NewerKernel] = {
    r["distro"]: NewerKernel(r["kind"], r["suite"], tuple(r["packages"]))
    for r in _KERNELS["newer_kernels"]
}

# amdgpu/<ROCm apt path or driver version>/ubuntu, signed by the classic key (ROCm/amdgpu-docs
# package-manager-ubuntu.rst @ 67902e2).
AMDGPU_APT_BASE_URL = "https://repo.radeon.com/amdgpu"
AMDGPU_KEY_URL = CLASSIC_REPOSITORY.key_url
AMDGPU_KEY_FINGERPRINT = CLASSIC.key_fingerprint
AMDGPU_KEYRING = CLASSIC.keyring
AMDGPU_DRIVER_PACKAGE = "amdgpu-dkms"


@dataclass(frozen=True)
class DriverKernel:
    """The newest kernel series (``max_kernel`` "6.16": every 6.16.y) a driver release's
    ``amdgpu-dkms`` supports, and the package version."""

    driver: str
    dkms: str | None
    max_kernel: str

    def excludes(self, kernel: str) -> bool:
        return kernel_key(kernel)[:2] > kernel_key(self.max_kernel)[:2]


DRIVER_KERNEL: dict[str, DriverKernel] = {
    r["driver"]: DriverKernel(r["driver"], r["dkms"], r["max_kernel"])
    for r in _KERNELS.get("driver_kernel", [])
}


def driver_kernel(rel: Release) -> DriverKernel | None:
    """The dkms kernel range of the release's amdgpu driver, or None."""
    return DRIVER_KERNEL.get(amdgpu_repo_version(rel) or "")


def amdgpu_repo_version(rel: Release) -> str | None:
    """The amdgpu/<version> directory for a release; None when its driver is unknown."""
    return rel.apt_path if rel.stream is CLASSIC and rel.parts[0] < 7 else rel.amdgpu_driver


def missing_driver(rel: Release) -> str:
    """Why no amdgpu driver is known for ``rel``, naming AMD's driver list."""
    drivers = upstream_data.AMDGPU_DRIVERS
    where = f"AMD's driver list, {upstream_data.SOURCES.get('driver_list', 'not read')}"
    if not drivers:
        return f"{where}, names none for it"
    newest = next(iter(drivers))
    # a release names its driver's folder: 31.60 is driver 31.60.0
    owners = [r.version for r in RELEASES if r.amdgpu_driver
              and [*r.amdgpu_driver.split("."), "0"][:3] == newest.split(".")]  # fmt: skip
    owner = f" (ROCm {owners[0]}'s)" if owners and owners[0] != rel.version else ""
    return f"{where}, has no entry for it: its newest is {newest}{owner}"
