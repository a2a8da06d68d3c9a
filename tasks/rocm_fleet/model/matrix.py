"""The one compatibility matrix: every ROCm / distro / PyTorch fact the deploy relies on.

Nothing else in rocm-fleet hard-codes a version, suite, URL or fingerprint: tasks read them
from here. Each table cites where its rows come from; "fact sheet §N" is section N of
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
and versions, install root, the distros it publishes) plus the :class:`Repository` a
release is published in; the tasks ask a release's stream and never test which one it is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from enum import Enum

from rocm_fleet.model import paths, upstream_data

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
    amd_release_tag,
    classic_version_regex,
    core_sdk_version_regex,
    is_amd_driver_version,
    is_core_sdk_package,
    kernel_key,
    major_minor,
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


@dataclass(frozen=True)
class Publication:
    """What a stream publishes for one distro: the part of the apt source that names the
    distro (a suite, or a per-distro directory), from which release, and how AMD lists it."""

    distro: str  # Distro.key
    suite: str  # the apt suite
    directory: str | None  # the per-distro directory of the repository (Core SDK)
    first_release: str  # the first release of the stream that publishes it
    listed_from: str | None  # the first release AMD lists the distro in, None if never
    instinct_only: bool  # AMD lists it for Instinct accelerators only
    # The gfx targets AMD lists the distro for, where it names them per GPU model (None:
    # every Instinct target when instinct_only, else every target) and those models.
    listed_gfx: tuple[str, ...] | None = None
    listed_models: str = ""

    def lists(self, gfx: str) -> bool:
        """Whether AMD lists the distro for GPU target ``gfx``."""
        if self.listed_gfx is not None:
            return gfx in self.listed_gfx
        if self.instinct_only:
            target = gpu_target(gfx)
            return target is not None and target.family == "instinct"
        return True

    @property
    def listed_text(self) -> str:
        """Whom AMD lists the distro for, e.g. "Instinct" or "Instinct MI300X, ... (gfx942)"."""
        if self.listed_gfx is None:
            return "Instinct"
        return f"{self.listed_models} ({', '.join(self.listed_gfx)})"


# --- GPUs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuTarget:
    gfx: str
    family: str  # "instinct", "radeon" or "ryzen" (an APU's integrated GPU)
    products: str
    supported_from: str | None  # first classic release that lists it, None = never listed


# Rows: gpu_targets.json, in the matrix's order (product -> gfx, each row cited: AMD's
# system-requirements files, TheRock RELEASES.md's device-extra table and LLVM's AMDGPUUsage
# processors table for the Ryzen APUs, AMD's gpus.yaml for gfx1153). First listing: the "GPU
# / LLVM target" rows of AMD's historical compatibility table, read by tools/matrix_update.py
# into upstream_data.GPU_LISTED_FROM (a target it never names: None; recorded independently
# in tests/fixtures/upstream/gpus.toml). gfx906 is in no column 6.0.0-7.2.0 of that table;
# gfx1036 (Ryzen 7000 iGPU) is never listed and is here so the deploy can tell an iGPU from a
# missing expected dGPU. No classic release lists the Ryzen APUs; the Core SDK ships
# per-target packages for them (CORE_SDK_GFX_PACKAGES).
GPU_TARGETS: tuple[GpuTarget, ...] = tuple(
    GpuTarget(
        row["gfx"], row["family"], row["products"], upstream_data.GPU_LISTED_FROM.get(row["gfx"])
    )
    for row in upstream_data.GPU_TARGET_ROWS
)

GFX_NAME = re.compile(r"^gfx[0-9]{2,4}[0-9a-f]$")


def gpu_target(gfx: str) -> GpuTarget | None:
    for row in GPU_TARGETS:
        if row.gfx == gfx:
            return row
    return None


# --- Repositories and streams -------------------------------------------------------------


@dataclass(frozen=True)
class Repository:
    """One of AMD's apt repositories: its base URL, where its signing key is, which file the
    deploy points apt at it with, and whether that file is deb822 (else one ``deb`` line)."""

    name: str
    base_url: str
    key_url: str
    source: str  # host path of the source file
    deb822: bool
    x_repo_id: str | None = None  # AMD's X-Repo-Id line of a deb822 file


# Key URL, keyring path and source-line form: every AMD install page 5.7 -> 7.2
# (rocm-install-on-linux docs/install/native-install/ubuntu.rst; fact sheet §3.1, §3.2).
CLASSIC_REPOSITORY = Repository(
    "repo.radeon.com",
    "https://repo.radeon.com/rocm/apt",
    "https://repo.radeon.com/rocm/rocm.gpg.key",
    paths.ROCM_SOURCE,
    deb822=False,
)
# 7.14.x: "deb [arch=amd64 signed-by=/etc/apt/keyrings/amdrocm.gpg]
# https://repo.amd.com/rocm/packages-multi-arch/<dist> stable main" in
# /etc/apt/sources.list.d/rocm.list, key .../packages-multi-arch/gpg/rocm.gpg (rocm-docs
# docs/install/include/200-install.rst, 7.14.0 version: index id 59807416391; 7.14.1 @
# 50600d8d). TheRock docs/rfcs/RFC0012-Repo-Structure.md (status Approved, @ fd3153e1) keeps
# repo.amd.com/rocm/ "as-is for backward compatibility": 7.14 stays there, 10.x moved.
MULTI_ARCH_REPOSITORY = Repository(
    "repo.amd.com",
    "https://repo.amd.com/rocm/packages-multi-arch",
    "https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg",
    paths.ROCM_SOURCE,
    deb822=False,
)
# 10.x: the deb822 file /etc/apt/sources.list.d/amdrocm-stable.sources ("X-Repo-Id:
# amdrocm-stable", "URIs: https://stable.repo.amd.com/rocm/core/packages/<dist>/", "Suites:
# stable"), key https://stable.repo.amd.com/rocm/gpg/packages.gpg (rocm-docs 200-install.rst
# @ 0c31064a, the 10.0.0 page). 10.1 keeps it: its release notes list no repository change
# and AMD's 10.1 HPC SDK page (hpc-sdk/install.rst) installs amdrocm-hpc10.1 "from the same repo".
STABLE_REPOSITORY = Repository(
    "stable.repo.amd.com",
    "https://stable.repo.amd.com/rocm/core/packages",
    "https://stable.repo.amd.com/rocm/gpg/packages.gpg",
    paths.AMDROCM_SOURCE,
    deb822=True,
    x_repo_id="amdrocm-stable",
)
REPOSITORIES = (CLASSIC_REPOSITORY, MULTI_ARCH_REPOSITORY, STABLE_REPOSITORY)


@dataclass(frozen=True)
class Stream:
    """What one stream of ROCm releases does differently, in one place: its signing key and
    where the deploy keeps it, its apt pin, the distros it publishes, its package names and
    versions, and where a release unpacks. Subclasses answer the questions about packages."""

    name: str
    title: str
    key_fingerprint: str
    keyring: str  # host path
    pin: str  # host path of the pin file
    pin_origin: str  # the Origin its Release files declare
    publications: tuple[Publication, ...]
    default_packages_text: str = ""  # for the settings table

    def publication(self, row: Distro) -> Publication | None:
        return next((p for p in self.publications if p.distro == row.key), None)

    def pin_text(self) -> str:
        """The pin that puts the stream's packages above the distribution's own (600 > 500):
        AMD's classic form (fact sheet §3.2), keyed on the Release file's Origin."""
        return f"Package: *\nPin: release o={self.pin_origin}\nPin-Priority: 600\n"

    # --- packages (the subclasses) ----------------------------------------------------------

    def repository_url(self, base_url: str, release: Release, publication: Publication) -> str:
        raise NotImplementedError

    def default_packages(self, release: Release, gfx_targets: list[str] | None) -> list[str]:
        """The packages to install when ``rocm_packages`` is unset; ``gfx_targets`` names
        every GPU of the host when known (else None)."""
        raise NotImplementedError

    def owns(self, name: str, version: str) -> bool:
        """Whether an installed package is one of this stream's ROCm packages (not a
        driver, not the distribution's)."""
        raise NotImplementedError

    def unwanted_targets(
        self, release: Release, packages: list[str], names: list[str]
    ) -> list[str]:
        """Of ``names`` (the stream's installed packages), those that serve only GPU targets
        ``packages`` (what the host is to have) no longer name: a per-target stream's old
        targets after ``expected_gfx`` changed. None for a stream without per-target
        packages."""
        return []

    def version_regex(self, release: Release) -> str:
        """An extended regex (Python and awk) matching the versions of the release's
        packages."""
        raise NotImplementedError

    def root(self, release: Release) -> str:
        """Where the release unpacks on a host."""
        raise NotImplementedError

    def lists_gpu(self, release: Release, gfx: str) -> bool:
        """Whether AMD lists the GPU target for the release."""
        raise NotImplementedError


class ClassicStream(Stream):
    def repository_url(self, base_url: str, release: Release, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{release.apt_path}"

    def default_packages(self, release: Release, gfx_targets: list[str] | None) -> list[str]:
        # The HIP runtime meta package: rocminfo, HIP, HSA (fact sheet §3.5).
        return ["rocm-hip-runtime"]

    def owns(self, name: str, version: str) -> bool:
        return bool(amd_release_tag(version)) and not is_amd_driver_version(version)

    def version_regex(self, release: Release) -> str:
        return classic_version_regex(release.version)

    def root(self, release: Release) -> str:
        return paths.classic_root(release.version)

    def lists_gpu(self, release: Release, gfx: str) -> bool:
        target = gpu_target(gfx)
        since = target.supported_from if target else None
        return since is not None and release.parts >= release_key(since)


# The per-target packages amdrocm<ver>-<gfx>: exact gfx targets, the same fifteen on the
# 7.14.0, 7.14.1 and 10.0.0 install pages (200-install.rst @ 03f04fe0, 50600d8d, 0c31064a) and the
# 10.1 transition guide's table; family names (gfx110X-all) are for tarballs only.
CORE_SDK_GFX_PACKAGES = (
    "gfx950", "gfx942", "gfx90a", "gfx908", "gfx1201", "gfx1200", "gfx1100", "gfx1101",
    "gfx1102", "gfx1103", "gfx1030", "gfx1151", "gfx1150", "gfx1152", "gfx1153",
)  # fmt: skip


class CoreSdkStream(Stream):
    def repository_url(self, base_url: str, release: Release, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{publication.directory}"

    def default_packages(self, release: Release, gfx_targets: list[str] | None) -> list[str]:
        # "ROCm Base": amdrocm<ver> for every target, or amdrocm<ver>-<gfx> per target
        # (200-install.rst @ 03f04fe0, 0c31064a); <ver> is major.minor (packaging_utils.py).
        ver = major_minor(release.version)
        targets = sorted(set(gfx_targets or []))
        if targets and all(gfx in CORE_SDK_GFX_PACKAGES for gfx in targets):
            return [f"amdrocm{ver}-{gfx}" for gfx in targets]
        return [f"amdrocm{ver}"]

    def owns(self, name: str, version: str) -> bool:
        return is_core_sdk_package(name, version)

    def unwanted_targets(
        self, release: Release, packages: list[str], names: list[str]
    ) -> list[str]:
        """With per-target packages wanted (amdrocm7.14-gfx1201), every installed package of
        another target (amdrocm7.14-gfx1100 and the amdrocm-core7.14-gfx1100 it pulled in,
        several GB) and the every-target amdrocm7.14; with the every-target one wanted (or
        no per-target one named), nothing: it depends on every target."""
        ver = major_minor(release.version)
        wanted = {gfx for gfx in CORE_SDK_GFX_PACKAGES for p in packages if p.endswith(f"-{gfx}")}
        if not wanted or f"amdrocm{ver}" in packages:
            return []
        others = tuple(f"-{gfx}" for gfx in CORE_SDK_GFX_PACKAGES if gfx not in wanted)
        return sorted(n for n in names if n.endswith(others) or n == f"amdrocm{ver}")

    def version_regex(self, release: Release) -> str:
        return core_sdk_version_regex(release.version)

    def root(self, release: Release) -> str:
        return paths.core_sdk_root(major_minor(release.version))

    def lists_gpu(self, release: Release, gfx: str) -> bool:
        return gfx in CORE_SDK_GFX_PACKAGES


def _listed(key: str) -> str | None:
    """The first classic release AMD's historical table lists distro ``key`` in (the
    generated upstream_data.RELEASES), None if none does."""
    return next(
        (r["version"] for r in upstream_data.RELEASES
         if r["stream"] == "classic" and key in (r["distros"] or ())),
        None,
    )  # fmt: skip


# Listing: compatibility-matrix-historical-6.0.csv (fact sheet §2.1), read by
# tools/matrix_update.py: Ubuntu 22.04 in every 6.x/7.x release, 24.04 from 6.2.0 (noble suite
# first published then), Debian 12 from 6.3.1 and Debian 13 from 7.0.2, both "supported only
# on AMD Instinct" (system-requirements.rst, 6.4.x and 7.0.x eras; community:
# ROCm/legacy-rocm-build discussion #6571).
CLASSIC = ClassicStream(
    "classic",
    "ROCm (repo.radeon.com)",
    # Not printed in AMD's docs; seen in Debian apt's NO_PUBKEY/EXPKEYSIG errors quoted in
    # ROCm issues #1538, #1762, #2362, #5232 and pinned by third-party scripts (fact sheet §3.1).
    # Overridable per inventory (``rocm_key_fingerprint``) for when AMD rotates the key.
    key_fingerprint="CA8BB4727A47B4D09B4EE8969386B48A1A693C5C",
    keyring=paths.ROCM_KEYRING,
    # AMD's pin, verbatim from every install page 5.7 -> 7.2 (fact sheet §3.2): without it
    # Debian's own rocminfo 5.2.3 (bookworm) / 6.1.2 (trixie) outranks AMD's
    # 1.0.0.<tag> (fact sheet §12).
    pin=paths.ROCM_PIN,
    pin_origin="repo.radeon.com",
    publications=(  # distro, suite, directory, first published, first listed, Instinct only
        Publication("ubuntu 22.04", "jammy", None, "6.0.0", _listed("ubuntu 22.04"), False),
        Publication("ubuntu 24.04", "noble", None, "6.2.0", _listed("ubuntu 24.04"), False),
        Publication("debian 12", "jammy", None, "6.0.0", _listed("debian 12"), True),
        Publication("debian 13", "noble", None, "6.2.0", _listed("debian 13"), True),
    ),
    default_packages_text="`rocm-hip-runtime`",
)


# <dist> names ubuntu2204, ubuntu2404, ubuntu2604, debian12, debian13 on the 7.14.0, 7.14.1
# and 10.0.0 install pages (200-install.rst @ 03f04fe0, 50600d8d, 0c31064a), suite "stable" (TheRock
# build_repo_package.py: every stream "declares Suite: stable / Codename: stable").
# Listing (ROCm/rocm-docs docs/data/os-support.yaml @ 1d2ba3f7): Ubuntu 26.04,
# 24.04.4 and 22.04.5 for Instinct, Radeon and (26.04, 24.04) Ryzen; Debian per Instinct
# model: 13 for MI355X, MI350X, MI350P, MI325X, MI300X; 12 for MI355X, MI350X, MI325X,
# MI300X, MI300A, MI250X, MI250; no Debian for MI210, MI100, any Radeon or Ryzen. Per target
# (MI35x = gfx950, MI300X/MI325X/MI300A = gfx942, MI250X/MI250/MI210 = gfx90a, MI100 =
# gfx908): Debian 13 lists gfx950 and gfx942, Debian 12 gfx950, gfx942 and gfx90a. A target
# is as fine as preflight can tell before a driver is loaded; within one (MI300A on Debian
# 13, MI210 on Debian 12) the models named in the warning say what is listed. Recorded in
# tests/fixtures/upstream/repo.amd.com.toml [os_support].
def _core_debian(key: str, directory: str) -> Publication:
    """A Debian publication of the Core SDK, listed per Instinct model as os-support.yaml
    gives it (upstream_data.CORE_SDK_DEBIAN, generated by tools/matrix_update.py)."""
    listing = upstream_data.CORE_SDK_DEBIAN[key]
    models = ", ".join(m.removeprefix("AMD Instinct ") for m in listing["models"])
    return Publication(
        key, "stable", directory, "7.14.0", "7.14.0", True,
        listed_gfx=tuple(listing["gfx"]), listed_models=f"Instinct {models}",
    )  # fmt: skip


CORE_SDK = CoreSdkStream(
    "core-sdk",
    "ROCm Core SDK",
    # AMD's pinned primary-key fingerprint of its ROCm signing key, the same key for the
    # 7.14 and 10.x repositories: TheRock build_tools/packaging/linux/build_repo_package.py
    # EXPECTED_KEY_FINGERPRINT (index ids 58601907636, 69478452527; ROCm/TheRock PR #7269).
    # Not printed on an AMD docs page; a different key from repo.radeon.com's.
    key_fingerprint="D0F004A0025A1145C7807FCD0701EAC4D5E02107",
    keyring=paths.AMDROCM_KEYRING,
    pin=paths.AMDROCM_PIN,
    # AMD publishes no pin for these repositories and the classic one (o=repo.radeon.com)
    # doesn't match them. TheRock's repository builder writes "Origin: AMD ROCm" / "Label:
    # ROCm <type> Packages" into every Release (build_tools/packaging/linux/
    # build_package_repo.py @ 0f6cec14, generate_release_file_with_checksums), and (3p) an
    # install script that checked `apt-cache policy` against stable.repo.amd.com pins
    # "o=AMD ROCm" (index id 70152502895), as does an Ansible role for both 7.14 and 10.x
    # (id 58692247280). The live Release files were not read here: `rocm-fleet matrix
    # check` compares their Origin with this value.
    pin_origin="AMD ROCm",
    publications=(
        Publication("ubuntu 22.04", "stable", "ubuntu2204", "7.14.0", "7.14.0", False),
        Publication("ubuntu 24.04", "stable", "ubuntu2404", "7.14.0", "7.14.0", False),
        Publication("ubuntu 26.04", "stable", "ubuntu2604", "7.14.0", "7.14.0", False),
        _core_debian("debian 12", "debian12"),
        _core_debian("debian 13", "debian13"),
    ),
    default_packages_text=(
        "`amdrocm<X.Y>-<gfx>` when `expected_gfx` names every GPU of the host, else `amdrocm<X.Y>`"
    ),
)
STREAMS = (CLASSIC, CORE_SDK)


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
