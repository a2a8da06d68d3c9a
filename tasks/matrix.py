"""The one compatibility matrix: every ROCm / distro / PyTorch fact the deploy relies on.

Nothing else in rocm-fleet hard-codes a version, suite, URL or fingerprint: tasks read them
from here. Each table cites where its rows come from; "fact sheet §N" is the project's
research notes (rocm-facts.md), which in turn name the upstream document or file.

Scope: the classic ROCm stream on repo.radeon.com, 6.0.0 to 7.2.4. The ROCm Core SDK
(7.14 / 10.x on repo.amd.com, packages ``amdrocm*``) is a different stack and is not
supported yet: its versions are refused with that reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from rocm_fleet.versions import kernel_key, release_key, release_tag

# --- Upstream locations -------------------------------------------------------------------

# Key URL, keyring path and source-line form: every AMD install page 5.7 -> 7.2
# (rocm-install-on-linux docs/install/native-install/ubuntu.rst; fact sheet §3.1, §3.2).
ROCM_APT_BASE_URL = "https://repo.radeon.com/rocm/apt"
ROCM_KEY_URL = "https://repo.radeon.com/rocm/rocm.gpg.key"
# Not printed in AMD's docs; seen in Debian apt's NO_PUBKEY/EXPKEYSIG errors quoted in ROCm
# issues and pinned by third-party install scripts (fact sheet §3.1). Overridable per
# inventory (``rocm_key_fingerprint``) for when AMD rotates the key.
ROCM_KEY_FINGERPRINT = "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"
# PyTorch's wheel indexes, https://download.pytorch.org/whl/rocmX.Y[.Z]
# (pytorch.org/get-started/previous-versions; fact sheet §7.1).
PYTORCH_INDEX_BASE_URL = "https://download.pytorch.org/whl"
# Some of those indexes' dependency pages link PyPI's file host rather than a copy of their
# own (download.pytorch.org/whl/mpmath -> files.pythonhosted.org, quoted by PyTorch's
# release manager in pytorch/pytorch#197552, 2026-09): a fleet mirror must carry it too.
PYTORCH_INDEX_FILE_HOSTS = ("files.pythonhosted.org",)

# AMD's pin, verbatim from every install page 5.7 -> 7.2 (fact sheet §3.2), ships as
# files/rocm-pin-600. Without it Debian's own rocminfo 5.2.3 (bookworm) / 6.1.2 (trixie)
# outranks AMD's 1.0.0.<tag> (fact sheet §12).


# --- Distributions ------------------------------------------------------------------------


class Support(Enum):
    """How AMD lists a distro for a release (fact sheet §2.1)."""

    OFFICIAL = "official"  # listed for every GPU family AMD supports in that release
    INSTINCT_ONLY = "instinct-only"  # listed, but Radeon / Radeon PRO only on Ubuntu and RHEL
    UNLISTED = "unlisted"  # AMD publishes the suite but does not list the distro


@dataclass(frozen=True)
class Distro:
    id: str  # os-release ID
    version: str  # os-release VERSION_ID (major for Debian)
    suite: str  # the suite on repo.radeon.com (not the distro's own codename for Debian)
    first_release: str  # the first ROCm release that publishes ``suite``
    listed_from: str | None  # the first release AMD lists this distro in, None if never
    instinct_only: bool  # AMD lists it for Instinct accelerators only

    @property
    def key(self) -> str:
        return f"{self.id} {self.version}"


# Suites: conf.py ``ubuntu_version_numbers`` / ``debian_version_numbers`` =
# [('13','noble'), ('12','jammy')] (rocm-programming-guide 7.2.1 conf.py; fact sheet §3.2).
# Listing: compatibility-matrix-historical-6.0.csv (fact sheet §2.1): Ubuntu 22.04 in every
# 6.x/7.x release, 24.04 from 6.2.0 (noble suite first published then), Debian 12 from
# 6.3.1 and Debian 13 from 7.0.2, both "supported only on AMD Instinct" (system-requirements.rst,
# 6.4.x and 7.0.x eras; community: ROCm/legacy-rocm-build discussion #6571).
DISTROS: tuple[Distro, ...] = (
    Distro("ubuntu", "22.04", "jammy", "6.0.0", "6.0.0", instinct_only=False),
    Distro("ubuntu", "24.04", "noble", "6.2.0", "6.2.0", instinct_only=False),
    Distro("debian", "12", "jammy", "6.0.0", "6.3.1", instinct_only=True),
    Distro("debian", "13", "noble", "6.2.0", "7.0.2", instinct_only=True),
)


@dataclass(frozen=True)
class HostRuntime:
    """What a distro release's own ``python3`` and C library are: the venv's interpreter is
    the host's python3, so its wheels must carry a ``cpXY`` tag and a manylinux tag no newer
    than the host's glibc (PEP 600)."""

    python: str  # major.minor, e.g. "3.11"
    glibc: str  # major.minor, e.g. "2.36"


# Debian: the bookworm and trixie main Packages on deb.debian.org, read 2026-11-30
# (python3 3.11.2-1+b1 and 3.13.5-1; libc6 2.36-9+deb12u14 and 2.41-12+deb13u5). Ubuntu:
# archive.ubuntu.com package versions as apt logs in public repositories print them
# (python3 3.10.6-1~22.04.1 and 3.12.3-0ubuntu2, e.g. index ids 16899614440, 22403885585;
# libc6 2.35-0ubuntu3.x and 2.39-0ubuntu8.x, ids 16012677162, 71487594790).
HOST_RUNTIMES: dict[str, HostRuntime] = {
    "ubuntu 22.04": HostRuntime("3.10", "2.35"),
    "ubuntu 24.04": HostRuntime("3.12", "2.39"),
    "debian 12": HostRuntime("3.11", "2.36"),
    "debian 13": HostRuntime("3.13", "2.41"),
}


def distro(distro_id: str, version_id: str) -> Distro | None:
    """The matrix row for an os-release ID / VERSION_ID (Debian point releases ignored)."""
    version = version_id.split(".")[0] if distro_id == "debian" else version_id
    for row in DISTROS:
        if row.id == distro_id and row.version == version:
            return row
    return None


# --- GPUs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuTarget:
    gfx: str
    family: str  # "instinct" or "radeon"
    products: str
    supported_from: str | None  # first classic release that lists it, None = never listed


# Product -> gfx and first listing: system-requirements files and the historical CSV
# (fact sheet §2.3). gfx1036 (Ryzen 7000 iGPU) is never listed; it is here so the deploy
# can tell an iGPU from a missing expected dGPU.
GPU_TARGETS: tuple[GpuTarget, ...] = (
    GpuTarget("gfx950", "instinct", "Instinct MI355X, MI350X", "7.0.0"),
    GpuTarget("gfx942", "instinct", "Instinct MI300X, MI300A, MI325X", "6.0.0"),
    GpuTarget("gfx90a", "instinct", "Instinct MI250X, MI250, MI210", "6.0.0"),
    GpuTarget("gfx908", "instinct", "Instinct MI100", "6.0.0"),
    GpuTarget("gfx906", "instinct", "Instinct MI50, Radeon VII, Radeon PRO VII", "6.0.0"),
    GpuTarget("gfx1201", "radeon", "Radeon RX 9070 / 9070 XT / 9070 GRE, AI PRO R9700", "6.4.1"),
    GpuTarget("gfx1200", "radeon", "Radeon RX 9060 XT", "6.4.1"),
    GpuTarget("gfx1100", "radeon", "Radeon RX 7900 XTX / XT / GRE, PRO W7900, W7800", "6.0.0"),
    GpuTarget("gfx1101", "radeon", "Radeon RX 7800 XT, 7700 XT, PRO W7700, V710", "6.4.1"),
    GpuTarget("gfx1102", "radeon", "Radeon RX 7600", None),
    GpuTarget("gfx1030", "radeon", "Radeon PRO W6800, V620 (RX 6800/6900: unlisted)", "6.0.0"),
    GpuTarget("gfx1036", "radeon", "Ryzen 7000 integrated Radeon Graphics", None),
)

GFX_NAME = re.compile(r"^gfx[0-9]{2,4}[0-9a-f]$")


def gpu_target(gfx: str) -> GpuTarget | None:
    for row in GPU_TARGETS:
        if row.gfx == gfx:
            return row
    return None


# --- PyTorch ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TorchBuild:
    torch: str
    torchvision: str
    torchaudio: str | None  # torchaudio stopped at 2.11.x on PyPI (read 2026-11-29)


# What each download.pytorch.org ROCm index carries, oldest first, from pytorch.org's
# "previous versions" page and pytorch RELEASE.md (fact sheet §7.1); torchvision /
# torchaudio companions are the pairs on that page, checked against PyPI's release lists
# (`pip index versions torchvision|torchaudio`, 2026-11-29).
# Not listed (unverified, so not guessed): a rocm7.0 index (third parties use one, contents
# never verified) and torch 2.12 / 2.13 on rocm7.2 (third-party reports only).
TORCH_INDEXES: dict[str, tuple[TorchBuild, ...]] = {
    "rocm6.0": (TorchBuild("2.3.0", "0.18.0", "2.3.0"), TorchBuild("2.3.1", "0.18.1", "2.3.1")),
    "rocm6.1": (
        TorchBuild("2.4.0", "0.19.0", "2.4.0"),
        TorchBuild("2.4.1", "0.19.1", "2.4.1"),
        TorchBuild("2.5.0", "0.20.0", "2.5.0"),
        TorchBuild("2.5.1", "0.20.1", "2.5.1"),
        TorchBuild("2.6.0", "0.21.0", "2.6.0"),
    ),
    "rocm6.2": (TorchBuild("2.5.0", "0.20.0", "2.5.0"), TorchBuild("2.5.1", "0.20.1", "2.5.1")),
    "rocm6.2.4": (TorchBuild("2.6.0", "0.21.0", "2.6.0"),),
    "rocm6.3": (TorchBuild("2.7.0", "0.22.0", "2.7.0"), TorchBuild("2.7.1", "0.22.1", "2.7.1")),
    "rocm6.4": (
        TorchBuild("2.8.0", "0.23.0", "2.8.0"),
        TorchBuild("2.9.0", "0.24.0", "2.9.0"),
        TorchBuild("2.9.1", "0.24.1", "2.9.1"),
    ),
    # torch-2.10.0%2Brocm7.1 wheel (fact sheet §7.1).
    "rocm7.1": (TorchBuild("2.10.0", "0.25.0", "2.10.0"),),
    # torch 2.11.0+rocm7.2 (fact sheet §7.1).
    "rocm7.2": (TorchBuild("2.11.0", "0.26.0", "2.11.0"),),
}


# --- ROCm releases ------------------------------------------------------------------------


@dataclass(frozen=True)
class Release:
    version: str  # "6.4.3"
    torch_index: str | None  # "rocm6.4"; None when no verified PyTorch index exists
    amdgpu_driver: str | None = None  # 7.x: the separately versioned amdgpu driver

    @property
    def parts(self) -> tuple[int, ...]:
        return release_key(self.version)

    @property
    def apt_path(self) -> str:
        """Directory under rocm/apt: the first release of a minor has no trailing ``.0``
        ("There is NO trailing .0 in the patch version for repositories", fact sheet §3.2)."""
        major, minor, patch = self.parts
        return f"{major}.{minor}" if patch == 0 else self.version

    @property
    def numeric_tag(self) -> str:
        """The tag in AMD's package versions: 6.4.3 -> 60403 (rocm-core 6.4.3.60403-...,
        rocminfo 1.0.0.60403-...; fact sheet §3.5, §12)."""
        return release_tag(self.version)

    @property
    def torch_builds(self) -> tuple[TorchBuild, ...]:
        return TORCH_INDEXES[self.torch_index] if self.torch_index else ()

    @property
    def no_torch_reason(self) -> str:
        """Why the matrix pins no torch for this release (for error messages)."""
        return f"the matrix knows no PyTorch index built for ROCm {self.version}"

    def suite_published(self, row: Distro) -> bool:
        return release_key(self.version) >= release_key(row.first_release)

    def support(self, row: Distro) -> Support | None:
        """How AMD lists ``row`` for this release; None when the suite isn't published."""
        if not self.suite_published(row):
            return None
        if row.listed_from is None or release_key(self.version) < release_key(row.listed_from):
            return Support.UNLISTED
        return Support.INSTINCT_ONLY if row.instinct_only else Support.OFFICIAL


# Release list: docs/release/versions.md (ROCm 7.2.0 docs) plus 6.4.4 and 7.2.1-7.2.4 from
# the ROCm/rocminfo releases page (fact sheet §1.1). There was no 6.0.1, 6.2.3 or 6.1.3/4.
# PyTorch index per release: the index named for the release's minor (or exact patch, as
# rocm6.2.4), fact sheet §7.1. amdgpu driver per 7.x release: the historical CSV "AMD GPU
# Driver" row and the 7.2.3 amdgpu-docs conf.py (fact sheet §2.4); unknown ones are None.
RELEASES: tuple[Release, ...] = (
    Release("6.0.0", "rocm6.0"),
    Release("6.0.2", "rocm6.0"),
    Release("6.1.0", "rocm6.1"),
    Release("6.1.1", "rocm6.1"),
    Release("6.1.2", "rocm6.1"),
    Release("6.1.5", "rocm6.1"),
    Release("6.2.0", "rocm6.2"),
    Release("6.2.1", "rocm6.2"),
    Release("6.2.2", "rocm6.2"),
    Release("6.2.4", "rocm6.2.4"),
    Release("6.3.0", "rocm6.3"),
    Release("6.3.1", "rocm6.3"),
    Release("6.3.2", "rocm6.3"),
    Release("6.3.3", "rocm6.3"),
    Release("6.4.0", "rocm6.4"),
    Release("6.4.1", "rocm6.4"),
    Release("6.4.2", "rocm6.4"),
    Release("6.4.3", "rocm6.4"),
    Release("6.4.4", "rocm6.4"),
    Release("7.0.0", None, "30.10"),
    Release("7.0.1", None, "30.10.1"),
    Release("7.0.2", None, "30.10.2"),
    Release("7.1.0", "rocm7.1", "30.20.0"),
    Release("7.1.1", "rocm7.1", "30.20.1"),
    Release("7.2.0", "rocm7.2", "30.30.0"),
    Release("7.2.1", "rocm7.2"),
    Release("7.2.2", "rocm7.2"),
    Release("7.2.3", "rocm7.2", "30.30.3"),
    Release("7.2.4", "rocm7.2"),
)

_BY_VERSION = {r.version: r for r in RELEASES}


def release(version: str) -> Release:
    """The matrix row for ``version``; KeyError when it is not a known classic release."""
    return _BY_VERSION[version]


def release_versions() -> list[str]:
    return [r.version for r in RELEASES]


# --- Kernels (preflight) ------------------------------------------------------------------

# The oldest kernel AMD lists per distro ("Kernel" column of the system requirements, fact
# sheet §2.2): Ubuntu 22.04.5 5.15 GA, Ubuntu 24.04 6.8 GA (6.2 docs on), Debian 12 6.1
# (6.4 and 7.0 docs, "6.1.0"), Debian 13 6.12 (7.0.2 release notes). Newer (HWE,
# backports) kernels pass; AMD validates only the listed ones.
MIN_KERNEL: dict[str, str] = {
    "ubuntu 22.04": "5.15",
    "ubuntu 24.04": "6.8",
    "debian 12": "6.1",
    "debian 13": "6.12",
}


# --- Kernel and amdgpu driver (tasks/kernel.py, tasks/driver.py) --------------------------


# Oldest kernel whose inbox amdgpu driver runs the GPU family; targets not listed have no
# minimum beyond the distro kernels AMD lists for them (fact sheet §2.2: Debian 12 = 6.1,
# Debian 13 = 6.12, Ubuntu 22.04 = 5.15 GA / 6.8 HWE, 24.04 = 6.8 GA / 6.11-6.14 HWE).
# RDNA3 (gfx110x): amdgpu support merged for Linux 6.0 (html.it, "Linux 6.0, ecco tutti gli
# aggiornamenti per i driver delle GPU", 2022-08: RDNA3 drivers integrated in Linux 6.0).
# RDNA4 (gfx1200/gfx1201, GC 12.0.x): Debian 12's 6.1 (Dec 2022) predates the whole GFX12
# bring-up (LLVM targets first posted Nov 2023, tomshardware.com "GFX12 targets"); an RX 9060
# XT runs on a 6.12.y kernel (github.com/geerlingguy/raspberry-pi-pcie-devices issue #741,
# 2025-06), and bookworm-backports carries 6.12 (fact sheet §12). The first mainline
# release with GC 12.0 enabled was not found in a primary source, so the matrix records the
# oldest release seen working, 6.12, not an earlier guess.
INBOX_MIN_KERNEL: dict[str, str] = {
    "gfx1100": "6.0",
    "gfx1101": "6.0",
    "gfx1102": "6.0",
    "gfx1200": "6.12",
    "gfx1201": "6.12",
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


# Debian: bookworm-backports, deb822 source signed by the archive keyring, installed with
# -t (backports.debian.org/Instructions; fact sheet §6); it carries linux-image-amd64
# 6.12.95-1~bpo12+1 (fact sheet §12). trixie (6.12 stock) needs none for any listed GPU.
# Ubuntu: the HWE kernel meta packages linux-generic-hwe-22.04 / -24.04
# (wiki.ubuntu.com/Kernel/LTSEnablementStack), which bring their headers along.
NEWER_KERNELS: dict[str, NewerKernel] = {
    "debian 12": NewerKernel(
        "backports", "bookworm-backports", ("linux-image-amd64", "linux-headers-amd64")
    ),
    "ubuntu 22.04": NewerKernel("hwe", None, ("linux-generic-hwe-22.04",)),
    "ubuntu 24.04": NewerKernel("hwe", None, ("linux-generic-hwe-24.04",)),
}

# AMD's kernel driver repository (fact sheet §3.2): up to 6.4 amdgpu/<ROCm apt path>/ubuntu,
# from 7.0 amdgpu/<driver version>/ubuntu with the driver version in Release.amdgpu_driver
# (fact sheet §2.4). Same suite, key and origin (so AMD's pin covers it) as the ROCm source.
AMDGPU_APT_BASE_URL = "https://repo.radeon.com/amdgpu"
# AMD's DKMS kernel driver package in that repository (fact sheet §3.5).
AMDGPU_DRIVER_PACKAGE = "amdgpu-dkms"


def amdgpu_repo_version(rel: Release) -> str | None:
    """The amdgpu/<version> directory for a ROCm release; None when the matrix doesn't
    know which driver a 7.x release ships."""
    if rel.parts[0] < 7:
        return rel.apt_path
    return rel.amdgpu_driver
