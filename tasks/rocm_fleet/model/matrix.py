"""The compatibility matrix: every ROCm / distro / PyTorch fact the deploy relies on (GPU targets,
streams and their repositories, PyTorch's sources, releases, kernels), typed from the data files
beside it (docs/decisions/matrix-data-and-citations.md)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from enum import Enum

from rocm_fleet.assets import render
from rocm_fleet.model import paths, upstream_data, versions
from rocm_fleet.model.versions import kernel_key, major_minor, release_key, release_tag

# pytorch.org/get-started/previous-versions.
PYTORCH_INDEX_BASE_URL = "https://download.pytorch.org/whl"
# Linked from those indexes' dependency pages (pytorch/pytorch#197552): a mirror carries it too.
PYTORCH_INDEX_FILE_HOSTS = ("files.pythonhosted.org",)


@dataclass(frozen=True)
class TorchBuild:
    torch: str
    torchvision: str
    torchaudio: str | None  # None from torch 2.12


def _builds(rows: list[list[str | None]]) -> tuple[TorchBuild, ...]:
    return tuple(TorchBuild(*row) for row in rows)


_INDEXES = upstream_data.TORCH_BUILD_ROWS["indexes"]  # torch_builds.json, each row cited
# What each download.pytorch.org ROCm index carries, oldest first.
TORCH_INDEXES = {row["index"]: _builds(row["builds"]) for row in _INDEXES}
# The ROCm runtime an index's torch requires from pip instead of bundling it.
TORCH_RUNTIME: dict[str, str] = {row["index"]: row["runtime"] for row in _INDEXES if row["runtime"]}
# Such a runtime's distributions (TheRock templates/rocm/src/rocm_sdk/_dist_info.py).
TORCH_RUNTIME_WHEELS = re.compile(r"^rocm(-sdk-.+)?$")
# Published as sdists only (TheRock templates/rocm/setup.py, release/therock-10.0); the only
# sdists a lock or bundle may pin: every other distribution must be a wheel.
SDIST_ONLY: frozenset[str] = frozenset({"rocm"})


# AMD's 10.x PyTorch install pages' |PKG_REPO|; TheRock build_tools/setup_venv.py @ 89553ce3
# (tests/fixtures/upstream/repo.amd.com-whl.toml).
AMD_STABLE_WHEEL_INDEX = "https://stable.repo.amd.com/rocm/whl-next/"


@dataclass(frozen=True)
class AmdWheels:
    """AMD's own index for a Core SDK release: its builds (oldest first), the targets with a
    ``[device-<gfx>]`` extra, and the targets offered fewer builds (gfx, torch versions)."""

    url: str
    release: str  # "10.0.0"
    builds: tuple[TorchBuild, ...]
    targets: tuple[str, ...]
    target_builds: tuple[tuple[str, tuple[str, ...]], ...] = ()
    device_extra_on: tuple[str, ...] = ("torch", "torchvision")

    @property
    def label(self) -> str:
        """The wheels' local version label, ``rocm10.0.0`` (TheRock build_prod_wheels.py)."""
        return f"rocm{self.release}"

    @property
    def runtime(self) -> str:
        """What torch requires from the index, ``rocm[libraries]==10.0.0`` (the same)."""
        return f"rocm[libraries]=={self.release}"

    @staticmethod
    def device_extras(gfx: list[str] | tuple[str, ...]) -> list[str]:
        """``device-<gfx>`` per expected target, ``device-all`` when none is named."""
        return [f"device-{g}" for g in sorted(set(gfx))] or ["device-all"]

    def builds_for(self, gfx: list[str] | tuple[str, ...]) -> tuple[TorchBuild, ...]:
        """The builds AMD offers every one of ``gfx``."""
        limits = dict(self.target_builds)
        return tuple(
            b for b in self.builds if all(b.torch in limits.get(g, [b.torch]) for g in gfx)
        )


def _amd_wheels(row: dict) -> AmdWheels:
    limits = tuple((gfx, tuple(versions)) for gfx, versions in row["target_builds"].items())
    builds, targets, extra_on = _builds(row["builds"]), row["targets"], row["device_extra_on"]
    return AmdWheels(row["url"], row["release"], builds, tuple(targets), limits, tuple(extra_on))


# Rows: torch_builds.json (AMD's 10.x install pages, tests/fixtures/upstream/repo.amd.com-whl.toml).
AMD_WHEELS: dict[str, AmdWheels] = {
    row["release"]: _amd_wheels(row) for row in upstream_data.TORCH_BUILD_ROWS["amd_wheels"]
}


@dataclass(frozen=True)
class TorchSource:
    """A release's torch source: a PyTorch index (``rocm6.4``) or AMD's (``amd``); ``label``: the
    wheels' local version label, ``runtime``: the pip requirement for its ROCm (None: bundled).
    AMD's index gives device extras (``targets``); PyTorch's none."""

    name: str
    label: str
    builds: tuple[TorchBuild, ...]  # oldest first
    runtime: str | None = None
    amd: AmdWheels | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        return self.amd.targets if self.amd else ()

    def url(self, index_base_url: str) -> str:
        """AMD's own index, or the PyTorch index under ``index_base_url``."""
        return self.amd.url if self.amd else f"{index_base_url.rstrip('/')}/{self.name}"

    def unknown_targets(self, gfx: list[str] | tuple[str, ...]) -> list[str]:
        return [g for g in gfx if g not in self.amd.targets] if self.amd else []

    def builds_for(self, gfx: list[str] | tuple[str, ...]) -> tuple[TorchBuild, ...]:
        return self.amd.builds_for(gfx) if self.amd else self.builds

    def extras(self, gfx: list[str] | tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(distribution, its extras) for ``gfx``."""
        extras = tuple(self.amd.device_extras(gfx)) if self.amd else ()
        return tuple((name, extras) for name in self.amd.device_extra_on) if self.amd else ()


# Per PyTorch index, the torch releases PyTorch's build matrix (pytorch/test-infra) built for it.
TORCH_BUILT_FOR = {row["index"]: frozenset(row.get("built_for", {})) for row in _INDEXES}


def unrecorded_build(source: TorchSource, torch: str) -> TorchBuild | None:
    """``torch`` (X.Y.Z) on ``source`` where the data lags the index (the lock reads the live
    page); None where PyTorch's build matrix built it for other indexes only, or no pairing is
    known (docs/decisions/wheel-locks.md)."""
    parts = torch.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    if source.amd is None and any(torch in built for built in TORCH_BUILT_FOR.values()):
        return None
    rows = [w.builds for w in AMD_WHEELS.values()] if source.amd else TORCH_INDEXES.values()
    known = next((b for builds in rows for b in builds if b.torch == torch), None)
    if known is not None or source.amd is not None or parts[0] != "2":
        return known
    return TorchBuild(torch, f"0.{int(parts[1]) + 15}.{parts[2]}", None)


def torch_source(torch_index: str | None, amd: AmdWheels | None) -> TorchSource | None:
    """The torch source of a release row: its PyTorch index, else AMD's, else none."""
    if index := torch_index:
        return TorchSource(index, index, TORCH_INDEXES[index], TORCH_RUNTIME.get(index))
    if amd is not None:
        return TorchSource(amd.url, amd.label, amd.builds, amd.runtime, amd)
    return None


@dataclass(frozen=True)
class GpuTarget:
    gfx: str
    family: str  # "instinct", "radeon" or "ryzen" (an APU's integrated GPU)
    products: str
    supported_from: str | None  # first classic release that lists it, None = never listed


_FROM = upstream_data.GPU_LISTED_FROM
GPU_TARGETS = tuple(
    GpuTarget(r["gfx"], r["family"], r["products"], _FROM.get(r["gfx"]))
    for r in upstream_data.GPU_TARGET_ROWS
)
GFX_NAME = re.compile(r"^gfx[0-9]{2,4}[0-9a-f]$")


def gpu_target(gfx: str) -> GpuTarget | None:
    return next((row for row in GPU_TARGETS if row.gfx == gfx), None)


@dataclass(frozen=True)
class Publication:
    """What a stream publishes for one distro, from which release, and how AMD lists it."""

    distro: str  # Distro.key
    suite: str
    directory: str | None  # the repository's per-distro directory (Core SDK)
    first_release: str
    listed_from: str | None  # the first release AMD lists the distro in, None if never
    instinct_only: bool
    # Targets and models AMD lists it for, when named per model (None: by instinct_only).
    listed_gfx: tuple[str, ...] | None = None
    listed_models: str = ""

    def lists(self, gfx: str) -> bool:
        """Whether AMD lists the distro for GPU target ``gfx``."""
        if self.listed_gfx is not None:
            return gfx in self.listed_gfx
        target = gpu_target(gfx)
        return not self.instinct_only or (target is not None and target.family == "instinct")

    @property
    def listed_text(self) -> str:
        """Whom AMD lists the distro for, e.g. "Instinct" or "Instinct MI300X, ... (gfx942)"."""
        gfx = self.listed_gfx
        return "Instinct" if gfx is None else f"{self.listed_models} ({', '.join(gfx)})"


@dataclass(frozen=True)
class Repository:
    """One of AMD's apt repositories and the host source file the deploy writes for it."""

    name: str
    base_url: str
    key_url: str
    source: str  # host path of the source file
    deb822: bool
    x_repo_id: str | None = None  # AMD's X-Repo-Id line of a deb822 file


_ROWS = upstream_data.REPOSITORY_ROWS  # repositories.json, each row cited


def _row(section: str, name: str) -> dict:
    return next(r for r in _ROWS[section] if r["name"] == name)


def _repository(name: str, source: str) -> Repository:
    """The repository ``name``, written to host file ``source``."""
    row = _row("repositories", name)
    return Repository(
        name, row["base_url"], row["key_url"], source, row["deb822"], row["x_repo_id"]
    )


CLASSIC_REPOSITORY = _repository("repo.radeon.com", paths.ROCM_SOURCE)
# 7.14.x (rocm-docs 200-install.rst @ 50600d8d).
MULTI_ARCH_REPOSITORY = _repository("repo.amd.com", paths.ROCM_SOURCE)
# 10.x (rocm-docs 200-install.rst @ 0c31064a).
STABLE_REPOSITORY = _repository("stable.repo.amd.com", paths.AMDROCM_SOURCE)
REPOSITORIES = (CLASSIC_REPOSITORY, MULTI_ARCH_REPOSITORY, STABLE_REPOSITORY)


@dataclass(frozen=True)
class Stream:
    """A stream of ROCm, as the classic one publishes; ``CoreSdkStream`` says what the Core SDK
    does differently."""

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
        """The pin (priority 600 on the Release Origin) above the distribution's packages."""
        return render("apt-pin.pref.j2", release=f"o={self.pin_origin}", priority=600)

    def repository_url(self, base_url: str, release: Release, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{release.apt_path}"

    def default_packages(self, release: Release, gfx_targets: list[str] | None) -> list[str]:
        """The packages for an unset ``rocm_packages``; ``gfx_targets``: the host's, or None."""
        return ["rocm-hip-runtime"]

    def owns(self, name: str, version: str) -> bool:
        """Whether an installed package is this stream's ROCm (not a driver or the distro's)."""
        tag = versions.amd_release_tag(version)
        return bool(tag) and not versions.is_amd_driver_version(version)

    def unwanted_targets(self, release: Release, packages: list, names: list) -> list[str]:
        """Of installed ``names``, those serving only GPU targets ``packages`` no longer name."""
        return []

    def version_regex(self, release: Release) -> str:
        """An extended regex (Python and awk) matching the release's package versions."""
        return f"[.]{versions.release_tag(release.version)}-"  # 6.4.3 -> [.]60403-

    def root(self, release: Release) -> str:
        return paths.classic_root(release.version)

    def lists_gpu(self, release: Release, gfx: str) -> bool:
        target = gpu_target(gfx)
        since = target.supported_from if target else None
        return since is not None and release.parts >= release_key(since)


# Targets with an amdrocm<ver>-<gfx> package.
CORE_SDK_GFX_PACKAGES: tuple[str, ...] = tuple(row["gfx"] for row in _ROWS["gfx_packages"])


class CoreSdkStream(Stream):
    def repository_url(self, base_url: str, release: Release, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{publication.directory}"

    def default_packages(self, release: Release, gfx_targets: list[str] | None) -> list[str]:
        # "ROCm Base" (200-install.rst @ 0c31064a); <ver> is major.minor.
        ver = major_minor(release.version)
        targets = sorted(set(gfx_targets or []))
        if targets and all(gfx in CORE_SDK_GFX_PACKAGES for gfx in targets):
            return [f"amdrocm{ver}-{gfx}" for gfx in targets]
        return [f"amdrocm{ver}"]

    def owns(self, name: str, version: str) -> bool:
        return versions.is_core_sdk_package(name, version)

    def unwanted_targets(self, release: Release, packages: list, names: list) -> list[str]:
        """Other targets' packages and the every-target one, when per-target ones are wanted."""
        ver = major_minor(release.version)
        wanted = {gfx for gfx in CORE_SDK_GFX_PACKAGES for p in packages if p.endswith(f"-{gfx}")}
        if not wanted or f"amdrocm{ver}" in packages:
            return []
        others = tuple(f"-{gfx}" for gfx in CORE_SDK_GFX_PACKAGES if gfx not in wanted)
        return sorted(n for n in names if n.endswith(others) or n == f"amdrocm{ver}")

    def version_regex(self, release: Release) -> str:
        return "^" + release.version.replace(".", "[.]") + "-"  # 10.0.0 -> ^10[.]0[.]0-

    def root(self, release: Release) -> str:
        return paths.core_sdk_root(major_minor(release.version))

    def lists_gpu(self, release: Release, gfx: str) -> bool:
        return gfx in CORE_SDK_GFX_PACKAGES


def _listed(stream: str, key: str) -> str | None:
    """The first release of ``stream`` that lists distro ``key``, or None."""
    return next(
        (r["version"] for r in upstream_data.RELEASES
         if r["stream"] == stream and key in (r["distros"] or ())),
        None,
    )  # fmt: skip


def _stream(kind: type[Stream], name: str, title: str, keyring: str, pin: str, text: str,
            per_model: dict[str, dict[str, list[str]]]) -> Stream:  # fmt: skip
    """The stream ``name`` of repositories.json, what it publishes per distro with ``per_model``
    listings (Debian's Core SDK); ``keyring``, ``pin``: host paths; ``text``: its packages."""
    row, publications = _row("streams", name), []
    for pub in (r for r in _ROWS["publications"] if r["stream"] == name):
        key = pub["distro"]
        listing = per_model.get(key) or {}
        models = ", ".join(m.removeprefix("AMD Instinct ") for m in listing.get("models", ()))
        gfx = tuple(listing["gfx"]) if listing else None
        values = (pub["suite"], pub["directory"], pub["first_release"], _listed(name, key))
        text_ = f"Instinct {models}" if listing else ""
        publications.append(Publication(key, *values, pub["instinct_only"], gfx, text_))
    fingerprint, origin = row["key_fingerprint"], row["pin_origin"]  # AMD publishes no Core pin
    return kind(name, title, fingerprint, keyring, pin, origin, tuple(publications), text)


# The classic pin: else Debian's own rocminfo outranks AMD's 1.0.0.<tag>.
CLASSIC = _stream(Stream, "classic", "ROCm (repo.radeon.com)", paths.ROCM_KEYRING,
                  paths.ROCM_PIN, "`rocm-hip-runtime`", {})  # fmt: skip
CORE_SDK = _stream(CoreSdkStream, "core-sdk", "ROCm Core SDK", paths.AMDROCM_KEYRING,
    paths.AMDROCM_PIN, "`amdrocm<X.Y>-<gfx>` when `expected_gfx` names every GPU of the host, "
    "else `amdrocm<X.Y>`", upstream_data.CORE_SDK_DEBIAN)  # fmt: skip
STREAMS = (CLASSIC, CORE_SDK)


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
