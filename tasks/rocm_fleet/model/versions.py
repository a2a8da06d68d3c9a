"""Version parsing and comparison, in one place: ROCm releases, kernel releases, AMD's
package versions (the classic stream's and the ROCm Core SDK's).

Every other module compares versions through these functions, so a rule (Debian's kernel
ABI numbers, AMD's release tag) is written once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from debian.debian_support import Version as DebianVersion


def release_key(version: str) -> tuple[int, ...]:
    """A dotted release as numbers for ordering: "6.4.3" -> (6, 4, 3), "7.14" -> (7, 14)."""
    return tuple(int(part) for part in version.split("."))


_KERNEL = re.compile(r"^(\d+(?:\.\d+)*)(?:-(\d+))?")


def kernel_key(release: str) -> tuple[int, ...]:
    """A kernel release (``uname -r``) as numbers for ordering: the upstream version padded
    to three parts, then the distribution's ABI number when it has one.

    * Debian <= 12 and Ubuntu put an ABI number after the upstream version, and bump it
      for each security update: "6.1.0-28-amd64" -> (6, 1, 0, 28) is older than
      "6.1.0-31-amd64" -> (6, 1, 0, 31).
    * Debian 13 and backports put the full upstream version first and no ABI number:
      "6.12.38+deb13-amd64" -> (6, 12, 38, 0), "6.12.12+bpo-amd64" -> (6, 12, 12, 0).
    * A bare minimum such as "6.12" -> (6, 12, 0, 0), so any 6.12 kernel satisfies it.

    An unparsable release is () (older than everything).
    """
    match = _KERNEL.match(release or "")
    if not match:
        return ()
    upstream = [int(part) for part in match.group(1).split(".")][:3]
    upstream += [0] * (3 - len(upstream))
    return (*upstream, int(match.group(2) or 0))


def newer_kernels(running: str, installed: list[str]) -> list[str]:
    """The installed kernel releases newer than the running one, oldest first."""
    return sorted(
        (k for k in installed if k != running and kernel_key(k) > kernel_key(running)),
        key=kernel_key,
    )


# --- releases as upstream and the host write them ------------------------------------------

# A ROCm release as AMD names its directories (repo.radeon.com/rocm/apt/6.4.3/, .../7.0/).
_RELEASE = r"\d+\.\d+(?:\.\d+)?"
#: An Ubuntu release as its kernel meta packages name it (linux-generic-hwe-24.04,
#: linux-oem-24.04b).
UBUNTU_SERIES = r"[0-9]{2}\.[0-9]{2}"
_RELEASE_LINK = re.compile(rf'href="({_RELEASE})/"')
# [0-9], not \d: a str pattern's \d takes any Unicode digit.
_FULL_RELEASE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")
# The Core SDK's meta package of a release series: amdrocm7.14, amdrocm10.0 (``major_minor``).
_CORE_SDK_META = re.compile(r"amdrocm\d+\.\d+")
# A ROCm apt source line names its release directory: .../rocm/apt/6.4.3 jammy main.
ROCM_APT_PATH = re.compile(r"repo\.radeon\.com/rocm/apt/([^/\s]+)")
# A distribution's point release: /etc/debian_version "12.9" (or "trixie/sid", not one),
# Ubuntu's os-release VERSION "24.04.3 LTS (Noble Numbat)".
_NUMERIC = re.compile(r"\d+(?:\.\d+)*")
_LEADING_POINT_RELEASE = re.compile(r"\d+(?:\.\d+)+")

# One row of the release list-table of AMD's versions.rst: "* - `10.1.0 <https://rocm.docs.amd.com/en/docs-10.1.0>`__"
# then "- October 5, 2026" (older rows abbreviate the month: "Apr 16, 2024").
RELEASE_LIST_ROW = re.compile(
    r"^\s*\* - `(?P<version>\d+\.\d+\.\d+) <(?P<url>https://[^\s>]+)>`__\s*\n"
    r"\s*- (?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})\s*$",
    re.M,
)


def linked_releases(listing: str) -> set[str]:
    """The release directories a web server's directory listing links to ("6.4.3", "7.0")."""
    return set(_RELEASE_LINK.findall(listing))


def is_full_release(version: str) -> bool:
    """Whether ``version`` is a three-part release ("10.0.0"), not "10.0" or "10.0.0rc1"."""
    return bool(_FULL_RELEASE.fullmatch(version))


# A wheel's public version as AMD and PyTorch publish their builds (2.15.0, 0.29.0a0,
# 2.11.0.3): what a site's matrix data may name as a torch build.
_BUILD_VERSION = re.compile(r"[0-9]+(\.[0-9]+){1,3}((a|b|rc)[0-9]+)?")
# AMD's amdgpu repository folders: 30.30, 31.40.1.
_DRIVER_FOLDER = re.compile(r"[0-9]+\.[0-9]+(\.[0-9]+)?")


def is_build_version(text: str) -> bool:
    """Whether ``text`` is a torch / torchvision / torchaudio version as published ("2.15.0")."""
    return bool(_BUILD_VERSION.fullmatch(text))


def is_driver_folder(text: str) -> bool:
    """Whether ``text`` names an amdgpu repository folder ("31.50", "31.40.1")."""
    return bool(_DRIVER_FOLDER.fullmatch(text))


def is_core_sdk_meta_package(name: str) -> bool:
    """Whether a package is the Core SDK's meta package of a release series (amdrocm10.0)."""
    return bool(_CORE_SDK_META.fullmatch(name))


def is_numeric_version(text: str) -> bool:
    """Whether ``text`` is a dotted number ("12.9", "13"), as /etc/debian_version of a
    release holds (a testing host's holds "trixie/sid")."""
    return bool(_NUMERIC.fullmatch(text))


def leading_point_release(text: str) -> str | None:
    """The point release a version text starts with: "24.04.3 LTS (Noble Numbat)" ->
    "24.04.3"; None when it starts with none."""
    match = _LEADING_POINT_RELEASE.match(text)
    return match.group(0) if match else None


# AMD versions every classic ROCm package <x.y.z>.<tag>-<build>[~<ubuntu>]: rocm-core
# 6.4.3.60403-128~22.04, rocminfo 1.0.0.60403-... (fact sheet §3.5, §12). Debian's own ROCm
# packages (rocminfo 5.2.3-2, 6.1.2-2) don't match. AMD's driver packages from
# repo.radeon.com/amdgpu carry the same tag after an epoch (amdgpu-dkms
# 1:6.12.12.60403-2194681.22.04).
# Written in the syntax Python's re and POSIX grep -E share, so the host-side fact that
# leaves AMD's packages out of a listing (facts.apt.DistroRocmPackages) uses this very rule.
AMD_CLASSIC_VERSION = r"^([0-9]+:)?[0-9]+\.[0-9]+\.[0-9]+\.([0-9]{5})-"
_AMD_CLASSIC = re.compile(AMD_CLASSIC_VERSION)


def amd_release_tag(version: str) -> str | None:
    """The ROCm release tag of an AMD classic package version ("60403"), else None."""
    match = _AMD_CLASSIC.match(version)
    return match.group(2) if match else None


def is_amd_driver_version(version: str) -> bool:
    """AMD's driver packages (amdgpu-dkms ...) carry an epoch before the tagged version."""
    match = _AMD_CLASSIC.match(version)
    return bool(match and match.group(1))


def release_tag(version: str) -> str:
    """The tag AMD puts in a release's package versions: "6.4.3" -> "60403"."""
    major, minor, patch = (*release_key(version), 0, 0)[:3]
    return f"{major}{minor:02d}{patch:02d}"


def classic_version_regex(version: str) -> str:
    """An extended regular expression (Python ``re`` and POSIX awk alike) matching the
    versions of a classic release's packages: 6.4.3 -> ``[.]60403-``."""
    return f"[.]{release_tag(version)}-"


# The ROCm Core SDK (TheRock) versions a stable release's packages <X.Y.Z>-<build>: the
# upstream part is the release (docs/packaging/versioning.md, "stable | X.Y.Z"), the
# Debian revision the build's --version-suffix (build_tools/packaging/linux/
# deb_package.py: ``version += f"-{config.version_suffix}"``; ROCm/TheRock @ 89553ce3),
# e.g. amdrocm-runtime10.0 10.0.0-4. Every package it builds is named amdrocm*
# (build_tools/packaging/linux/package.json), so the name tells them from Debian's; except
# amdrocm-repo, which configures the repository (build_repo_package.py PACKAGE_NAME).
_CORE_SDK = re.compile(r"^\d+\.\d+\.\d+-[0-9A-Za-z.+~]+$")
_CORE_SDK_NOT_ROCM = ("amdrocm-repo",)


def is_core_sdk_package(name: str, version: str) -> bool:
    """Whether an installed package is one of the ROCm Core SDK's (amdrocm*, X.Y.Z-N)."""
    return (
        name.startswith("amdrocm")
        and name not in _CORE_SDK_NOT_ROCM
        and bool(_CORE_SDK.match(version))
    )


def core_sdk_version_regex(version: str) -> str:
    """An extended regular expression matching the versions of a Core SDK release's
    packages: 10.0.0 -> ``^10[.]0[.]0-``."""
    return "^" + version.replace(".", "[.]") + "-"


def major_minor(version: str) -> str:
    """ "10.1.0" -> "10.1": what the Core SDK puts in package names and its install root
    (packaging_utils.py update_package_name: "Package name will be rocm8.1")."""
    return ".".join(version.split(".")[:2])


# --- Debian package versions (the bundle resolves dependencies within AMD's repository) ---
# python-debian's Version orders them as ``dpkg --compare-versions`` does (deb-version(7):
# epoch, then upstream version and revision, ``~`` before everything). Imported when first
# used: only the bundle compares them, and the import (30 ms) would slow every deploy's start.

_RELATIONS = {
    "=": lambda order: order == 0,
    ">=": lambda order: order >= 0,
    "<=": lambda order: order <= 0,
    ">>": lambda order: order > 0,
    "<<": lambda order: order < 0,
}


def debian_version(version: str) -> DebianVersion:
    """A Debian package version that orders as dpkg does; ValueError when unreadable."""
    from debian.debian_support import Version

    return Version(version)


def compare_debian_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as Debian orders two package versions (``dpkg --compare-versions``)."""
    from debian.debian_support import version_compare

    order = version_compare(a, b)
    return (order > 0) - (order < 0)


def debian_version_satisfies(version: str, relation: str, wanted: str) -> bool:
    """Whether ``version`` meets a Depends relation (``=``, ``>=``, ``<=``, ``>>``, ``<<``)."""
    return _RELATIONS[relation](compare_debian_versions(version, wanted))
