"""The one compatibility matrix: every ROCm / distro / PyTorch fact the deploy relies on.

Nothing else in rocm-fleet hard-codes a version, suite, URL or fingerprint: tasks read them
from here. The tables are data files beside this module (upstream_data.json's release rows,
gpu_targets.json, distros.json, kernels.json, torch_builds.json), each row with its source,
written by tools/matrix_update.py from AMD's and PyTorch's files, the stored records of
them and cited overrides; this module types them. It joins the parts kept in their own
modules and re-exports them: the GPU targets (model/gpu_targets.py), the streams and
repositories (model/streams.py) and where torch comes from (model/torch_builds.py). Each
table cites where its rows come from; "fact sheet §N" is section N of
docs/reference/rocm-facts.md (the project's research notes, committed with the code; every
row there names the upstream document, file or index it was read from); other citations name
the upstream file (at a commit), page, issue or pull request, "index id N" a stored copy of
one public file version. "(3p)" marks third-party evidence only (apt logs, install scripts);
everything else is AMD's or PyTorch's own text or code.

Two streams of ROCm, which differ in every packaging detail and share nothing on a host:

* the classic stream on repo.radeon.com, 6.0.0 to 7.2.4 (the last: AMD's Core SDK pages
  say "If you have ROCm 7.2.4 or older installed, please uninstall it");
* the ROCm Core SDK built with TheRock, 7.14.0 onwards (repo.amd.com for 7.14,
  stable.repo.amd.com for 10.x; packages ``amdrocm*`` under /opt/rocm/core-X.Y).

Everything that differs between them is a :class:`Stream` (key, keyring, pin, package names
and versions, install root, the distros it publishes; model/streams.py) plus the
:class:`Repository` a release is published in; the tasks ask a release's stream and never
test which one it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import Enum

from rocm_fleet.model import upstream_data

# The GPU targets (model/gpu_targets.py) and the streams (model/streams.py), re-exported: the
# rest of rocm-fleet asks the matrix.
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

# The torch part (model/torch_builds.py), re-exported: the rest of rocm-fleet asks the matrix.
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
    """How AMD lists a distro for a release (fact sheet §2.1)."""

    OFFICIAL = "official"  # listed for every GPU family AMD supports in that release
    INSTINCT_ONLY = "instinct-only"  # listed, but Radeon / Radeon PRO only on Ubuntu and RHEL
    UNLISTED = "unlisted"  # AMD publishes the packages but does not list the distro
    # AMD publishes the packages, but the distro's apt refuses the repository's signature
    # (repo.radeon.com's SHA-1 key binding on Debian 13: SHA1_REJECTING_DISTROS below)
    REJECTED = "rejected"


@dataclass(frozen=True)
class Distro:
    id: str  # os-release ID
    version: str  # os-release VERSION_ID (major for Debian)
    suite: str  # the suite repo.radeon.com (classic ROCm, amdgpu driver) serves it

    @property
    def key(self) -> str:
        return f"{self.id} {self.version}"


# Rows: distros.json (the repo.radeon.com suite from the stored record of AMD's conf.py
# ``debian_version_numbers`` / ``ubuntu_version_numbers``, Ubuntu 26.04's from amdgpu-docs;
# each row cites its source). Only the Core SDK (os-support.yaml) and amdgpu publish for 26.04.
DISTROS: tuple[Distro, ...] = tuple(
    Distro(row["id"], row["version"], row["suite"]) for row in upstream_data.DISTRO_ROWS
)
DISTRO_KEYS = tuple(row.key for row in DISTROS)  # "ubuntu 22.04", ...: what settings name


@dataclass(frozen=True)
class HostRuntime:
    """What a distro release's own ``python3`` and C library are: the venv's interpreter is
    the host's python3, so its wheels must carry a ``cpXY`` tag and a manylinux tag no newer
    than the host's glibc (PEP 600)."""

    python: str  # major.minor, e.g. "3.11"
    glibc: str  # major.minor, e.g. "2.36"


# Rows: distros.json ("python", "glibc"; Debian from its archive's Packages, Ubuntu from apt
# logs of its archive's packages, 26.04 third-party; each row cites its source).
HOST_RUNTIMES: dict[str, HostRuntime] = {
    row["key"]: HostRuntime(row["python"], row["glibc"]) for row in upstream_data.DISTRO_ROWS
}


def distro(distro_id: str, version_id: str, override: str | None = None) -> Distro | None:
    """The matrix row for an os-release ID / VERSION_ID (Debian point releases ignored);
    for a distro the matrix doesn't know, the row ``override`` names (rocm_distro_override),
    if any."""
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
        """Directory under rocm/apt: the first release of a minor has no trailing ``.0``
        ("There is NO trailing .0 in the patch version for repositories", fact sheet §3.2)."""
        major, minor, patch = self.parts
        return f"{major}.{minor}" if patch == 0 else self.version

    @property
    def numeric_tag(self) -> str:
        """The tag in AMD's classic package versions: 6.4.3 -> 60403 (rocm-core
        6.4.3.60403-..., rocminfo 1.0.0.60403-...; fact sheet §3.5, §12)."""
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
        """Why the matrix pins no torch for this release (for error messages)."""
        return self.no_torch or f"the matrix knows no PyTorch index built for ROCm {self.version}"

    @property
    def root(self) -> str:
        return self.stream.root(self)

    @property
    def rocminfo(self) -> str:
        """The release's own rocminfo, <root>/bin/rocminfo: the classic rocminfo package's (fact
        sheet §3.5), amdrocm-base's (TheRock build_tools/packaging/linux/package.json)."""
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


# No download.pytorch.org index serves the Core SDK 10.x: (3p) `curl
# https://download.pytorch.org/whl/rocm10.1/torch/` answers 403 (index id 70539249324);
# PyTorch's nightly matrix moved to 7.14/10.0 on 2026-08-28 (pytorch/test-infra #8670), no
# release wheels were found. The 10.x torch comes from AMD's own stable index instead
# (``AMD_WHEELS``).
def _core(
    version: str, repository: Repository, torch_index: str | None, driver: str | None
) -> Release:
    amd = AMD_WHEELS.get(version) if torch_index is None else None
    return Release(version, CORE_SDK, repository, torch_index, driver, amd_wheels=amd)


# The release rows are data: tools/matrix_update.py writes them into upstream_data.json from
# AMD's historical compatibility table (the classic releases it lists, their distros, GPU
# targets and, from 7.0, amdgpu driver folder), os-support.yaml (the Core SDK's distros) and
# PyTorch's RELEASE.md (the index of each release: rocm<X.Y.Z> or rocm<X.Y>, as its table
# names the stable ROCm of a torch minor), with hand-kept overrides, each cited, where those
# files are silent (tools/matrix_overrides.toml: the Radeon point releases 6.1.3, 6.2.3,
# 6.3.4, releases newer than the table copy read, the rocm7.0 index, the Core SDK's releases,
# repositories and drivers). A row's "from" says where each of its values comes from.
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
    """The matrix row for ``version``; KeyError when it is not a known release."""
    return _BY_VERSION[version]


def release_versions() -> list[str]:
    return [r.version for r in RELEASES]


# --- Signatures Debian 13's apt rejects -----------------------------------------------------

# repo.radeon.com signed the classic releases up to 7.0.1 (and their amdgpu driver
# repositories, amdgpu 6.4.x included) while the only binding signature of its key
# (CLASSIC.key_fingerprint) was SHA-1. Debian 13's apt verifies with sqv, whose policy rejects
# SHA-1 binding signatures since 2026-02-01, so `apt-get update` fails on them: "Signing key on
# CA8BB4727A47B4D09B4EE8969386B48A1A693C5C is not bound: No binding signature at time
# 2025-08-07T19:56:47Z" then "E: The repository 'https://repo.radeon.com/rocm/apt/6.4.3 noble
# InRelease' is not signed." (ROCm/legacy-rocm-build issue #5232; #5619 for amdgpu/6.4.4, where
# AMD answered that the newer releases are fine; AMD lists Debian 13 from 7.0.2). Releases
# signed after AMD re-bound the key (7.0.2 on) and the Core SDK's key are accepted. Debian 12's
# apt (gpgv) and Ubuntu 22.04/24.04's accept the SHA-1 binding. Recorded per release in
# tests/fixtures/upstream/repo.radeon.com.toml ("binding").
SHA1_BOUND_LAST = "7.0.1"
SHA1_REJECTING_DISTROS = ("debian 13",)


def sha1_bound(rel: Release) -> bool:
    """Whether AMD signed the release under its key's SHA-1 binding only."""
    return rel.stream is CLASSIC and rel.parts <= release_key(SHA1_BOUND_LAST)


def rejects_signature(rel: Release, row: Distro) -> bool:
    """Whether ``row``'s apt refuses the release's repository signatures."""
    return row.key in SHA1_REJECTING_DISTROS and sha1_bound(rel)


def accepted_alternatives(row: Distro) -> tuple[Release | None, Release | None]:
    """The ways out for a host whose apt rejects a release: the first classic release and
    the first Core SDK release that publish for ``row`` with a signature its apt accepts."""

    def first(stream: Stream) -> Release | None:
        return next(
            (r for r in RELEASES
             if r.stream is stream and r.support(row) not in (None, Support.REJECTED)),
            None,
        )  # fmt: skip

    return first(CLASSIC), first(CORE_SDK)


# --- Kernels (preflight) ------------------------------------------------------------------

# The oldest kernel AMD lists per distro ("Kernel" column of the system requirements; rows:
# kernels.json "min_kernel", each cited). Newer (HWE, backports) kernels pass; AMD validates
# only the listed ones.
MIN_KERNEL: dict[str, str] = {
    row["distro"]: row["kernel"] for row in upstream_data.KERNEL_ROWS["min_kernel"]
}


# --- Kernel and amdgpu driver (rocm_fleet/deploy/kernel.py, rocm_fleet/deploy/driver.py) ----------


# Oldest kernel whose inbox amdgpu driver runs the GPU family; targets not listed have no
# minimum beyond the distro kernels AMD lists for them (rows: kernels.json
# "inbox_min_kernel", each cited). RDNA4 keeps 6.12: AMD names no inbox minimum for it, the
# cards were first seen working on 6.12.y, and 6.12 is what Debian 13 and bookworm-backports
# carry, so it costs nothing on the distros listed.
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


# Debian: bookworm-backports, deb822 source signed by the archive keyring, installed with
# -t; trixie (6.12 stock) needs none for any listed GPU. Ubuntu: the HWE kernel meta packages,
# which bring their headers along; 26.04's GA kernel (7.0) is newer than every minimum above.
# Rows: kernels.json "newer_kernels", each cited.
NEWER_KERNELS: dict[str, NewerKernel] = {
    row["distro"]: NewerKernel(row["kind"], row["suite"], tuple(row["packages"]))
    for row in upstream_data.KERNEL_ROWS["newer_kernels"]
}

# AMD's kernel driver repository (fact sheet §3.2): up to 6.4 amdgpu/<ROCm apt path>/ubuntu,
# from 7.0 amdgpu/<driver version>/ubuntu with the driver version in Release.amdgpu_driver
# (fact sheet §2.4), the distro's repo.radeon.com suite, signed by repo.radeon.com's key
# (ROCm/amdgpu-docs docs/install/detailed-install/package-manager/package-manager-ubuntu.rst
# @ 67902e2, "signed-by=/etc/apt/keyrings/rocm.gpg ... amdgpu/|amdgpu_url_version|/ubuntu
# {{ os_release }} main"): the classic stream's key, also under the Core SDK.
AMDGPU_APT_BASE_URL = "https://repo.radeon.com/amdgpu"
AMDGPU_KEY_URL = CLASSIC_REPOSITORY.key_url
AMDGPU_KEY_FINGERPRINT = CLASSIC.key_fingerprint
AMDGPU_KEYRING = CLASSIC.keyring
# AMD's DKMS kernel driver package in that repository (fact sheet §3.5).
AMDGPU_DRIVER_PACKAGE = "amdgpu-dkms"


def amdgpu_repo_version(rel: Release) -> str | None:
    """The amdgpu/<version> directory for a ROCm release; None when the matrix doesn't
    know which driver a 7.x release ships."""
    if rel.stream is CLASSIC and rel.parts[0] < 7:
        return rel.apt_path
    return rel.amdgpu_driver
