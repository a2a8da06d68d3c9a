"""The two streams of ROCm (classic, Core SDK) and the repositories they publish in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rocm_fleet.assets import render
from rocm_fleet.model import paths, upstream_data, versions
from rocm_fleet.model.gpu_targets import gpu_target
from rocm_fleet.model.versions import major_minor, release_key


class ReleaseRow(Protocol):
    """What a stream reads of a ``model.matrix.Release`` (a Protocol: matrix imports this)."""

    @property
    def version(self) -> str: ...
    @property
    def parts(self) -> tuple[int, ...]: ...
    @property
    def apt_path(self) -> str: ...


class DistroRow(Protocol):
    @property
    def key(self) -> str: ...


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

    def publication(self, row: DistroRow) -> Publication | None:
        return next((p for p in self.publications if p.distro == row.key), None)

    def pin_text(self) -> str:
        """The pin (priority 600 on the Release Origin) above the distribution's packages."""
        return render("apt-pin.pref.j2", release=f"o={self.pin_origin}", priority=600)

    def repository_url(self, base_url: str, release: ReleaseRow, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{release.apt_path}"

    def default_packages(self, release: ReleaseRow, gfx_targets: list[str] | None) -> list[str]:
        """The packages for an unset ``rocm_packages``; ``gfx_targets``: the host's, or None."""
        return ["rocm-hip-runtime"]

    def owns(self, name: str, version: str) -> bool:
        """Whether an installed package is this stream's ROCm (not a driver or the distro's)."""
        tag = versions.amd_release_tag(version)
        return bool(tag) and not versions.is_amd_driver_version(version)

    def unwanted_targets(self, release: ReleaseRow, packages: list, names: list) -> list[str]:
        """Of installed ``names``, those serving only GPU targets ``packages`` no longer name."""
        return []

    def version_regex(self, release: ReleaseRow) -> str:
        """An extended regex (Python and awk) matching the release's package versions."""
        return f"[.]{versions.release_tag(release.version)}-"  # 6.4.3 -> [.]60403-

    def root(self, release: ReleaseRow) -> str:
        return paths.classic_root(release.version)

    def lists_gpu(self, release: ReleaseRow, gfx: str) -> bool:
        target = gpu_target(gfx)
        since = target.supported_from if target else None
        return since is not None and release.parts >= release_key(since)


# Targets with an amdrocm<ver>-<gfx> package.
CORE_SDK_GFX_PACKAGES: tuple[str, ...] = tuple(row["gfx"] for row in _ROWS["gfx_packages"])


class CoreSdkStream(Stream):
    def repository_url(self, base_url: str, release: ReleaseRow, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{publication.directory}"

    def default_packages(self, release: ReleaseRow, gfx_targets: list[str] | None) -> list[str]:
        # "ROCm Base" (200-install.rst @ 0c31064a); <ver> is major.minor.
        ver = major_minor(release.version)
        targets = sorted(set(gfx_targets or []))
        if targets and all(gfx in CORE_SDK_GFX_PACKAGES for gfx in targets):
            return [f"amdrocm{ver}-{gfx}" for gfx in targets]
        return [f"amdrocm{ver}"]

    def owns(self, name: str, version: str) -> bool:
        return versions.is_core_sdk_package(name, version)

    def unwanted_targets(self, release: ReleaseRow, packages: list, names: list) -> list[str]:
        """Other targets' packages and the every-target one, when per-target ones are wanted."""
        ver = major_minor(release.version)
        wanted = {gfx for gfx in CORE_SDK_GFX_PACKAGES for p in packages if p.endswith(f"-{gfx}")}
        if not wanted or f"amdrocm{ver}" in packages:
            return []
        others = tuple(f"-{gfx}" for gfx in CORE_SDK_GFX_PACKAGES if gfx not in wanted)
        return sorted(n for n in names if n.endswith(others) or n == f"amdrocm{ver}")

    def version_regex(self, release: ReleaseRow) -> str:
        return "^" + release.version.replace(".", "[.]") + "-"  # 10.0.0 -> ^10[.]0[.]0-

    def root(self, release: ReleaseRow) -> str:
        return paths.core_sdk_root(major_minor(release.version))

    def lists_gpu(self, release: ReleaseRow, gfx: str) -> bool:
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
