"""The two streams of ROCm and the repositories they publish in: what differs between
repo.radeon.com's classic releases and the ROCm Core SDK (key, keyring, pin, package names
and versions, install root, the distros each publishes and how AMD lists them). A release
(model/matrix.py) asks its stream and never tests which one it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rocm_fleet.assets import render
from rocm_fleet.model import paths, upstream_data
from rocm_fleet.model.gpu_targets import gpu_target
from rocm_fleet.model.versions import (
    amd_release_tag,
    classic_version_regex,
    core_sdk_version_regex,
    is_amd_driver_version,
    is_core_sdk_package,
    major_minor,
    release_key,
)


class ReleaseRow(Protocol):
    """What a stream reads of a release (``model.matrix.Release``, which holds its stream:
    a Protocol here so that the streams don't import the matrix that imports them)."""

    @property
    def version(self) -> str: ...
    @property
    def parts(self) -> tuple[int, ...]: ...
    @property
    def apt_path(self) -> str: ...


class DistroRow(Protocol):
    """What a stream reads of a distro row (``model.matrix.Distro``)."""

    @property
    def key(self) -> str: ...


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
def _repository(name: str, source: str) -> Repository:
    """The repository ``name`` as repositories.json records it (base URL, key URL, deb822 or
    one line, X-Repo-Id), with the host file the deploy writes for it (``source``)."""
    row = next(r for r in upstream_data.REPOSITORY_ROWS["repositories"] if r["name"] == name)
    return Repository(
        name, row["base_url"], row["key_url"], source, row["deb822"], row["x_repo_id"]
    )


def _stream_row(name: str) -> dict:
    """A stream's signing key and Release Origin as repositories.json records them."""
    return next(r for r in upstream_data.REPOSITORY_ROWS["streams"] if r["name"] == name)


# Rows: repositories.json (from the records of repo.radeon.com, repo.amd.com and the keys,
# each row cited). The host files the deploy writes are rocm-fleet's own (model/paths.py).
CLASSIC_REPOSITORY = _repository("repo.radeon.com", paths.ROCM_SOURCE)
# 7.14.x: "deb [arch=amd64 signed-by=/etc/apt/keyrings/amdrocm.gpg]
# https://repo.amd.com/rocm/packages-multi-arch/<dist> stable main" in
# /etc/apt/sources.list.d/rocm.list, key .../packages-multi-arch/gpg/rocm.gpg (rocm-docs
# docs/install/include/200-install.rst, 7.14.0 version: index id 59807416391; 7.14.1 @
# 50600d8d). TheRock docs/rfcs/RFC0012-Repo-Structure.md (status Approved, @ fd3153e1) keeps
# repo.amd.com/rocm/ "as-is for backward compatibility": 7.14 stays there, 10.x moved.
MULTI_ARCH_REPOSITORY = _repository("repo.amd.com", paths.ROCM_SOURCE)
# 10.x: the deb822 file /etc/apt/sources.list.d/amdrocm-stable.sources ("X-Repo-Id:
# amdrocm-stable", "URIs: https://stable.repo.amd.com/rocm/core/packages/<dist>/", "Suites:
# stable"), key https://stable.repo.amd.com/rocm/gpg/packages.gpg (rocm-docs 200-install.rst
# @ 0c31064a, the 10.0.0 page). 10.1 keeps it: its release notes list no repository change
# and AMD's 10.1 HPC SDK page (hpc-sdk/install.rst) installs amdrocm-hpc10.1 "from the same repo".
STABLE_REPOSITORY = _repository("stable.repo.amd.com", paths.AMDROCM_SOURCE)
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

    def publication(self, row: DistroRow) -> Publication | None:
        return next((p for p in self.publications if p.distro == row.key), None)

    def pin_text(self) -> str:
        """The pin that puts the stream's packages above the distribution's own (600 > 500):
        AMD's classic form (fact sheet §3.2), keyed on the Release file's Origin."""
        return render("apt-pin.pref.j2", release=f"o={self.pin_origin}", priority=600)

    # --- packages (the subclasses) ----------------------------------------------------------

    def repository_url(self, base_url: str, release: ReleaseRow, publication: Publication) -> str:
        raise NotImplementedError

    def default_packages(self, release: ReleaseRow, gfx_targets: list[str] | None) -> list[str]:
        """The packages to install when ``rocm_packages`` is unset; ``gfx_targets`` names
        every GPU of the host when known (else None)."""
        raise NotImplementedError

    def owns(self, name: str, version: str) -> bool:
        """Whether an installed package is one of this stream's ROCm packages (not a
        driver, not the distribution's)."""
        raise NotImplementedError

    def unwanted_targets(
        self, release: ReleaseRow, packages: list[str], names: list[str]
    ) -> list[str]:
        """Of ``names`` (the stream's installed packages), those that serve only GPU targets
        ``packages`` (what the host is to have) no longer name: a per-target stream's old
        targets after ``expected_gfx`` changed. None for a stream without per-target
        packages."""
        return []

    def version_regex(self, release: ReleaseRow) -> str:
        """An extended regex (Python and awk) matching the versions of the release's
        packages."""
        raise NotImplementedError

    def root(self, release: ReleaseRow) -> str:
        """Where the release unpacks on a host."""
        raise NotImplementedError

    def lists_gpu(self, release: ReleaseRow, gfx: str) -> bool:
        """Whether AMD lists the GPU target for the release."""
        raise NotImplementedError


class ClassicStream(Stream):
    def repository_url(self, base_url: str, release: ReleaseRow, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{release.apt_path}"

    def default_packages(self, release: ReleaseRow, gfx_targets: list[str] | None) -> list[str]:
        # The HIP runtime meta package: rocminfo, HIP, HSA (fact sheet §3.5).
        return ["rocm-hip-runtime"]

    def owns(self, name: str, version: str) -> bool:
        return bool(amd_release_tag(version)) and not is_amd_driver_version(version)

    def version_regex(self, release: ReleaseRow) -> str:
        return classic_version_regex(release.version)

    def root(self, release: ReleaseRow) -> str:
        return paths.classic_root(release.version)

    def lists_gpu(self, release: ReleaseRow, gfx: str) -> bool:
        target = gpu_target(gfx)
        since = target.supported_from if target else None
        return since is not None and release.parts >= release_key(since)


# The gfx targets of the per-target packages amdrocm<ver>-<gfx>: repositories.json
# gfx_packages (from the record of AMD's install pages, cited there; exact targets only).
CORE_SDK_GFX_PACKAGES: tuple[str, ...] = tuple(
    row["gfx"] for row in upstream_data.REPOSITORY_ROWS["gfx_packages"]
)


class CoreSdkStream(Stream):
    def repository_url(self, base_url: str, release: ReleaseRow, publication: Publication) -> str:
        return f"{base_url.rstrip('/')}/{publication.directory}"

    def default_packages(self, release: ReleaseRow, gfx_targets: list[str] | None) -> list[str]:
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
        self, release: ReleaseRow, packages: list[str], names: list[str]
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

    def version_regex(self, release: ReleaseRow) -> str:
        return core_sdk_version_regex(release.version)

    def root(self, release: ReleaseRow) -> str:
        return paths.core_sdk_root(major_minor(release.version))

    def lists_gpu(self, release: ReleaseRow, gfx: str) -> bool:
        return gfx in CORE_SDK_GFX_PACKAGES


def _listed(stream: str, key: str) -> str | None:
    """The first release of ``stream`` that AMD lists distro ``key`` in (the generated
    upstream_data.RELEASES: the historical table for the classic stream, os-support.yaml for
    the Core SDK), None if none does."""
    return next(
        (r["version"] for r in upstream_data.RELEASES
         if r["stream"] == stream and key in (r["distros"] or ())),
        None,
    )  # fmt: skip


def _publications(
    stream: str, per_model: dict[str, dict[str, list[str]]]
) -> tuple[Publication, ...]:
    """What ``stream`` publishes per distro, as repositories.json records it (suite,
    directory, first release, Instinct only; each row cited), with when AMD lists each distro
    and, where ``per_model`` (upstream_data.CORE_SDK_DEBIAN) names it, the Instinct models and
    gfx targets AMD lists it for."""
    out = []
    for row in upstream_data.REPOSITORY_ROWS["publications"]:
        if row["stream"] != stream:
            continue
        key = row["distro"]
        listing = per_model.get(key)
        models = ", ".join(
            m.removeprefix("AMD Instinct ") for m in (listing or {}).get("models", ())
        )
        out.append(
            Publication(
                key,
                row["suite"],
                row["directory"],
                row["first_release"],
                _listed(stream, key),
                row["instinct_only"],
                listed_gfx=tuple(listing["gfx"]) if listing else None,
                listed_models=f"Instinct {models}" if listing else "",
            )
        )
    return tuple(out)


# Publications: repositories.json, from the record of repo.radeon.com (suite per distro, the
# noble suite from 6.2.0, Debian for Instinct only). Listing: AMD's historical table, read by
# tools/matrix_update.py (Ubuntu 22.04 in every 6.x/7.x release, 24.04 from 6.2.0, Debian 12
# from 6.3.1, Debian 13 from 7.0.2).
CLASSIC = ClassicStream(
    "classic",
    "ROCm (repo.radeon.com)",
    # Not printed in AMD's docs; seen in Debian apt's NO_PUBKEY/EXPKEYSIG errors quoted in
    # ROCm issues #1538, #1762, #2362, #5232 and pinned by third-party scripts (fact sheet §3.1).
    # Overridable per inventory (``rocm_key_fingerprint``) for when AMD rotates the key.
    key_fingerprint=_stream_row("classic")["key_fingerprint"],
    keyring=paths.ROCM_KEYRING,
    # AMD's pin, verbatim from every install page 5.7 -> 7.2 (fact sheet §3.2): without it
    # Debian's own rocminfo 5.2.3 (bookworm) / 6.1.2 (trixie) outranks AMD's
    # 1.0.0.<tag> (fact sheet §12).
    pin=paths.ROCM_PIN,
    pin_origin=_stream_row("classic")["pin_origin"],
    publications=_publications("classic", {}),
    default_packages_text="`rocm-hip-runtime`",
)


# Publications: repositories.json, from the record of repo.amd.com (the directory per distro
# of the 7.14.0, 7.14.1 and 10.0.0 install pages, suite "stable", Debian listed per Instinct
# model). Listing (os-support.yaml, read by tools/matrix_update.py into
# upstream_data.CORE_SDK_DEBIAN): Ubuntu for Instinct, Radeon and Ryzen; Debian per Instinct
# model, and so per gfx target (Debian 13: gfx950, gfx942; Debian 12: gfx950, gfx942, gfx90a).
# A target is as fine as preflight can tell before a driver is loaded; within one (MI300A on
# Debian 13, MI210 on Debian 12) the models named in the warning say what is listed.
CORE_SDK = CoreSdkStream(
    "core-sdk",
    "ROCm Core SDK",
    # AMD's pinned primary-key fingerprint of its ROCm signing key, the same key for the
    # 7.14 and 10.x repositories: TheRock build_tools/packaging/linux/build_repo_package.py
    # EXPECTED_KEY_FINGERPRINT (index ids 58601907636, 69478452527; ROCm/TheRock PR #7269).
    # Not printed on an AMD docs page; a different key from repo.radeon.com's.
    key_fingerprint=_stream_row("core-sdk")["key_fingerprint"],
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
    pin_origin=_stream_row("core-sdk")["pin_origin"],
    publications=_publications("core-sdk", upstream_data.CORE_SDK_DEBIAN),
    default_packages_text=(
        "`amdrocm<X.Y>-<gfx>` when `expected_gfx` names every GPU of the host, else `amdrocm<X.Y>`"
    ),
)
STREAMS = (CLASSIC, CORE_SDK)
