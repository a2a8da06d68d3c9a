"""The compatibility matrix: every ROCm / distro / PyTorch fact the deploy relies on, typed from the
data files beside it (docs/decisions/matrix-data-and-citations.md). No other module hard-codes a
version, suite, URL or fingerprint; tasks ask a release's :class:`Stream`, never which one it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import Enum

from rocm_fleet.model import upstream_data

# Re-exported: the rest of rocm-fleet asks the matrix.
from rocm_fleet.model.gpu_targets import (  # noqa: F401
    GFX_NAME,
    GPU_TARGETS,
    GpuTarget,
    gpu_target,
)
from rocm_fleet.model.streams import (  # noqa: F401
    CLASSIC,
    CLASSIC_REPOSITORY,
    CORE_SDK,
    CORE_SDK_GFX_PACKAGES,
    MULTI_ARCH_REPOSITORY,
    REPOSITORIES,
    STABLE_REPOSITORY,
    STREAMS,
    ClassicStream,
    CoreSdkStream,
    Publication,
    Repository,
    Stream,
)
from rocm_fleet.model.torch_builds import (  # noqa: F401
    AMD_DEVICE_WHEELS,
    AMD_STABLE_WHEEL_INDEX,
    AMD_WHEELS,
    PYTORCH_INDEX_BASE_URL,
    PYTORCH_INDEX_FILE_HOSTS,
    SDIST_ONLY,
    TORCH_INDEXES,
    TORCH_RUNTIME,
    TORCH_RUNTIME_WHEELS,
    AmdWheels,
    TorchBuild,
    TorchSource,
    torch_source,
)
from rocm_fleet.model.versions import (
    kernel_key,
    release_key,
    release_tag,
)

# --- Distributions ------------------------------------------------------------------------


class Support(Enum):
    """How AMD lists a distro for a release."""

    OFFICIAL = "official"  # listed for every GPU family AMD supports in that release
    INSTINCT_ONLY = "instinct-only"  # listed, but Radeon / Radeon PRO only on Ubuntu and RHEL
    UNLISTED = "unlisted"  # AMD publishes the packages but does not list the distro
    # published, but the distro's apt refuses the signature (SHA1_REJECTING_DISTROS)
    REJECTED = "rejected"


@dataclass(frozen=True)
class Distro:
    id: str  # os-release ID
    version: str  # os-release VERSION_ID (major for Debian)
    suite: str  # the suite repo.radeon.com (classic ROCm, amdgpu driver) serves it

    @property
    def key(self) -> str:
        return f"{self.id} {self.version}"


# Rows: distros.json, each cited.
DISTROS: tuple[Distro, ...] = tuple(
    Distro(row["id"], row["version"], row["suite"]) for row in upstream_data.DISTRO_ROWS
)
DISTRO_KEYS = tuple(row.key for row in DISTROS)  # "ubuntu 22.04", ...: what settings name


@dataclass(frozen=True)
class HostRuntime:
    """A distro release's ``python3`` and glibc, which the venv's wheels must match (PEP 600)."""

    python: str  # major.minor, e.g. "3.11"
    glibc: str  # major.minor, e.g. "2.36"


# Rows: distros.json, each cited.
HOST_RUNTIMES: dict[str, HostRuntime] = {
    row["key"]: HostRuntime(row["python"], row["glibc"]) for row in upstream_data.DISTRO_ROWS
}


def distro(distro_id: str, version_id: str, override: str | None = None) -> Distro | None:
    """The row for an os-release ID / VERSION_ID (Debian point releases ignored), else the
    row ``override`` names, else None."""
    version = version_id.split(".")[0] if distro_id == "debian" else version_id
    for row in DISTROS:
        if row.id == distro_id and row.version == version:
            return row
    return next((row for row in DISTROS if row.key == override), None) if override else None


# --- ROCm releases ------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    version: str  # "6.4.3"
    stream: Stream = field(repr=False)
    repository: Repository = field(repr=False)
    torch_index: str | None  # "rocm6.4"; None when no verified PyTorch index exists
    amdgpu_driver: str | None = None  # 7.x: the separately versioned amdgpu driver
    no_torch: str | None = None  # why there is no torch index, when there is none
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
        """Where the release's torch comes from; None when nowhere (``no_torch_reason``)."""
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
        """Why the matrix pins no torch for this release."""
        return self.no_torch or f"the matrix knows no PyTorch index built for ROCm {self.version}"

    @property
    def root(self) -> str:
        return self.stream.root(self)

    @property
    def rocminfo(self) -> str:
        """The release's own ``<root>/bin/rocminfo``."""
        return f"{self.root}/bin/rocminfo"

    def publication(self, row: Distro) -> Publication | None:
        """What the release publishes for a distro, None when nothing."""
        pub = self.stream.publication(row)
        if pub is None or self.parts < release_key(pub.first_release):
            return None
        return pub

    def support(self, row: Distro) -> Support | None:
        """How AMD lists ``row`` for this release; None when it publishes nothing for it."""
        pub = self.publication(row)
        if pub is None:
            return None
        if rejects_signature(self, row):
            return Support.REJECTED
        if pub.listed_from is None or self.parts < release_key(pub.listed_from):
            return Support.UNLISTED
        return Support.INSTINCT_ONLY if pub.instinct_only else Support.OFFICIAL

    def lists_gpu(self, gfx: str) -> bool:
        return self.stream.lists_gpu(self, gfx)


def _classic(version: str, torch_index: str, driver: str | None = None) -> Release:
    return Release(version, CLASSIC, CLASSIC_REPOSITORY, torch_index, driver)


# No download.pytorch.org index serves 10.x: its torch comes from ``AMD_WHEELS``.
def _core(
    version: str, repository: Repository, torch_index: str | None, driver: str | None
) -> Release:
    amd = AMD_WHEELS.get(version) if torch_index is None else None
    return Release(version, CORE_SDK, repository, torch_index, driver, amd_wheels=amd)


# Rows: upstream_data.json (tools/matrix_update.py); a row's "from" cites each value.
_REPOSITORY_BY_NAME = {repo.name: repo for repo in REPOSITORIES}


def _release_row(row: dict) -> Release:
    """A Release from a row of upstream_data.RELEASES."""
    if row["stream"] == CLASSIC.name:
        return _classic(row["version"], row["torch_index"], row["amdgpu_driver"])
    repository = _REPOSITORY_BY_NAME[row["repository"]]
    return _core(row["version"], repository, row["torch_index"], row["amdgpu_driver"])


RELEASES: tuple[Release, ...] = tuple(_release_row(row) for row in upstream_data.RELEASES)

_BY_VERSION = {r.version: r for r in RELEASES}


def release(version: str) -> Release:
    """The row for ``version``; raises KeyError for an unknown release."""
    return _BY_VERSION[version]


def release_versions() -> list[str]:
    return [r.version for r in RELEASES]


# --- Signatures Debian 13's apt rejects -----------------------------------------------------

# Classic releases up to 7.0.1 are signed under a SHA-1 key binding only, which Debian 13's
# apt (sqv) rejects (ROCm/legacy-rocm-build #5232, #5619; per release in
# tests/fixtures/upstream/repo.radeon.com.toml "binding").
SHA1_BOUND_LAST = "7.0.1"
SHA1_REJECTING_DISTROS = ("debian 13",)


def sha1_bound(rel: Release) -> bool:
    """Whether AMD signed the release under its key's SHA-1 binding only."""
    return rel.stream is CLASSIC and rel.parts <= release_key(SHA1_BOUND_LAST)


def rejects_signature(rel: Release, row: Distro) -> bool:
    """Whether ``row``'s apt refuses the release's repository signatures."""
    return row.key in SHA1_REJECTING_DISTROS and sha1_bound(rel)


def accepted_alternatives(row: Distro) -> tuple[Release | None, Release | None]:
    """The first classic and first Core SDK release ``row``'s apt accepts (None: none)."""

    def first(stream: Stream) -> Release | None:
        return next(
            (r for r in RELEASES
             if r.stream is stream and r.support(row) not in (None, Support.REJECTED)),
            None,
        )  # fmt: skip

    return first(CLASSIC), first(CORE_SDK)


# --- Kernels (preflight) ------------------------------------------------------------------

# The oldest kernel AMD lists per distro; newer ones pass. Rows: kernels.json, each cited.
MIN_KERNEL: dict[str, str] = {
    row["distro"]: row["kernel"] for row in upstream_data.KERNEL_ROWS["min_kernel"]
}


@dataclass(frozen=True)
class FamilyKernel:
    """The kernel AMD lists for a GPU family on a distro release (the Core SDK's
    os-support.yaml): its version and kind ("ga", "hwe": Ubuntu's HWE, "oem": Ubuntu's OEM)."""

    kernel: str
    kind: str


# (distro key, family) -> the kernel AMD lists. Rows: kernels.json ``family_kernel``, cited.
FAMILY_KERNEL: dict[tuple[str, str], FamilyKernel] = {
    (row["distro"], row["family"]): FamilyKernel(row["kernel"], row["kind"])
    for row in upstream_data.KERNEL_ROWS.get("family_kernel", [])
}

# --- Kernel and amdgpu driver (rocm_fleet/deploy/kernel.py, rocm_fleet/deploy/driver.py) ----------


# Oldest kernel whose inbox amdgpu runs the GPU family. Rows: kernels.json, each cited.
INBOX_MIN_KERNEL: dict[str, str] = {
    row["gfx"]: row["kernel"] for row in upstream_data.KERNEL_ROWS["inbox_min_kernel"]
}


def inbox_min_kernel(gfx_targets: list[str]) -> str | None:
    """The newest of the minimum kernels of ``gfx_targets`` (None: no minimum known)."""
    mins = [INBOX_MIN_KERNEL[g] for g in gfx_targets if g in INBOX_MIN_KERNEL]
    return max(mins, key=kernel_key) if mins else None


@dataclass(frozen=True)
class NewerKernel:
    """Where a distro release gets a newer kernel than its stock one."""

    kind: str  # "backports" (Debian) or "hwe" (Ubuntu)
    suite: str | None  # the apt suite to install from (Debian backports)
    packages: tuple[str, ...]  # what to install


# Debian: backports, installed with -t; Ubuntu: HWE meta packages. Rows: kernels.json, cited.
NEWER_KERNELS: dict[str, NewerKernel] = {
    row["distro"]: NewerKernel(row["kind"], row["suite"], tuple(row["packages"]))
    for row in upstream_data.KERNEL_ROWS["newer_kernels"]
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
    """The newest kernel series an amdgpu driver release's ``amdgpu-dkms`` supports (its
    kernel base, AMD's rule: ROCm/legacy-rocm-build#6193) and the package version."""

    driver: str
    dkms: str | None
    max_kernel: str  # "6.16": every 6.16.y

    def excludes(self, kernel: str) -> bool:
        """Whether ``kernel`` (a release or a version) is of a newer series than supported."""
        return kernel_key(kernel)[:2] > kernel_key(self.max_kernel)[:2]


# amdgpu driver release -> its dkms range. Rows: kernels.json ``driver_kernel``, each cited.
DRIVER_KERNEL: dict[str, DriverKernel] = {
    row["driver"]: DriverKernel(row["driver"], row["dkms"], row["max_kernel"])
    for row in upstream_data.KERNEL_ROWS.get("driver_kernel", [])
}


def driver_kernel(rel: Release) -> DriverKernel | None:
    """The dkms kernel range of the release's amdgpu driver; None where AMD's is not known."""
    version = amdgpu_repo_version(rel)
    return DRIVER_KERNEL.get(version) if version else None


def amdgpu_repo_version(rel: Release) -> str | None:
    """The amdgpu/<version> directory for a release; None when its driver is unknown."""
    if rel.stream is CLASSIC and rel.parts[0] < 7:
        return rel.apt_path
    return rel.amdgpu_driver


def missing_driver(rel: Release) -> str:
    """Why no amdgpu driver is known for ``rel``, naming AMD's driver list: it has no entry
    for the release (its newest driver is an older release's), or was not read."""
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
