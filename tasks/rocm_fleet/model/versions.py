"""Parsing and ordering of ROCm, kernel, AMD package and Debian package versions."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from operator import eq, ge, gt, le, lt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from debian.debian_support import Version as DebianVersion


def release_key(version: str) -> tuple[int, ...]:
    """A dotted release as numbers for ordering: "6.4.3" -> (6, 4, 3), "7.14" -> (7, 14)."""
    return tuple(int(part) for part in version.split("."))


def kernel_key(release: str) -> tuple[int, ...]:
    """A ``uname -r`` for ordering: "6.1.0-28-amd64" -> (6, 1, 0, 28); "6.12.38+deb13-amd64"
    -> (6, 12, 38, 0); "6.12" -> (6, 12, 0, 0); unparsable -> () (older than everything)."""
    match = re.match(r"^(\d+(?:\.\d+)*)(?:-(\d+))?", release or "")
    if not match:
        return ()
    upstream = [*(int(part) for part in match.group(1).split(".")), 0, 0][:3]
    return (*upstream, int(match.group(2) or 0))


def newer_kernels(running: str, installed: list[str]) -> list[str]:
    """The installed kernel releases newer than the running one, oldest first."""
    return sorted(
        (k for k in installed if k != running and kernel_key(k) > kernel_key(running)),
        key=kernel_key,
    )


#: An Ubuntu release in kernel meta package names (linux-generic-hwe-24.04).
UBUNTU_SERIES = r"[0-9]{2}\.[0-9]{2}"
# .../rocm/apt/6.4.3 jammy main.
ROCM_APT_PATH = re.compile(r"repo\.radeon\.com/rocm/apt/([^/\s]+)")

# A row of AMD's versions.rst list-table: "* - `10.1.0 <url>`__" then "- October 5, 2026".
RELEASE_LIST_ROW = re.compile(
    r"^\s*\* - `(?P<version>\d+\.\d+\.\d+) <(?P<url>https://[^\s>]+)>`__\s*\n"
    r"\s*- (?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})\s*$",
    re.M,
)


def kernel_releases(packages: dict[str, str]) -> list[str]:
    """Releases of the installed ``linux-image-[unsigned-]<release>`` packages, meta packages
    skipped: ``["6.1.0-50-amd64", "6.12.95+deb12-amd64"]``."""
    prefix = "linux-image-"
    images = [name.removeprefix(prefix) for name in sorted(packages) if name.startswith(prefix)]
    releases = (image.removeprefix("unsigned-") for image in images)
    return list(dict.fromkeys(release for release in releases if release[:1].isdigit()))


def linked_releases(listing: str) -> set[str]:
    """The release directories a web server's directory listing links to ("6.4.3", "7.0")."""
    return set(re.findall(r'href="(\d+\.\d+(?:\.\d+)?)/"', listing))


def _whole(pattern: str) -> Callable[[str], bool]:
    """Whether ``pattern`` matches the whole text ([0-9], not \\d: \\d takes any Unicode digit)."""
    return lambda text: re.fullmatch(pattern, text) is not None


is_full_release = _whole(r"[0-9]+\.[0-9]+\.[0-9]+")  # "10.0.0", not "10.0" or "10.0.0rc1"
#: a torch, torchvision or torchaudio version ("2.15.0", "0.29.0a0")
is_build_version = _whole(r"[0-9]+(\.[0-9]+){1,3}((a|b|rc)[0-9]+)?")
is_driver_folder = _whole(r"[0-9]+\.[0-9]+(\.[0-9]+)?")  # an amdgpu folder: "31.50", "31.40.1"
is_core_sdk_meta_package = _whole(r"amdrocm\d+\.\d+")  # a release series' (amdrocm10.0)
is_numeric_version = _whole(r"\d+(?:\.\d+)*")  # /etc/debian_version's "12.9", not "trixie/sid"


def leading_point_release(text: str) -> str | None:
    """ "24.04.3 LTS (Noble Numbat)" -> "24.04.3"; None when the text starts with none."""
    match = re.match(r"\d+(?:\.\d+)+", text)
    return match.group(0) if match else None


# AMD's classic <x.y.z>.<tag>-<build> (rocm-core 6.4.3.60403-128~22.04); drivers add an epoch.
# Debian's own ROCm packages don't match. Python re and grep -E alike.
AMD_CLASSIC_VERSION = r"^([0-9]+:)?[0-9]+\.[0-9]+\.[0-9]+\.([0-9]{5})-"
_AMD_CLASSIC = re.compile(AMD_CLASSIC_VERSION)


@functools.lru_cache(maxsize=8192)  # asked of every installed package, often
def amd_release_tag(version: str) -> str | None:
    """The ROCm release tag of an AMD classic package version ("60403"), else None."""
    match = _AMD_CLASSIC.match(version)
    return match.group(2) if match else None


@functools.lru_cache(maxsize=8192)
def is_amd_driver_version(version: str) -> bool:
    """Whether ``version`` is an AMD driver package's (an epoch before the tagged version)."""
    match = _AMD_CLASSIC.match(version)
    return bool(match and match.group(1))


def release_tag(version: str) -> str:
    """The tag AMD puts in a release's package versions: "6.4.3" -> "60403"."""
    major, minor, patch = (*release_key(version), 0, 0)[:3]
    return f"{major}{minor:02d}{patch:02d}"


# Core SDK packages: amdrocm*, <X.Y.Z>-<build>, but not amdrocm-repo (ROCm/TheRock @ 89553ce3
# docs/packaging/versioning.md, deb_package.py, build_repo_package.py).
@functools.lru_cache(maxsize=8192)
def is_core_sdk_package(name: str, version: str) -> bool:
    """Whether an installed package is one of the ROCm Core SDK's (amdrocm*, X.Y.Z-N)."""
    return (
        name.startswith("amdrocm")
        and name != "amdrocm-repo"
        and bool(re.match(r"^\d+\.\d+\.\d+-[0-9A-Za-z.+~]+$", version))
    )


def major_minor(version: str) -> str:
    """ "10.1.0" -> "10.1", as in Core SDK package names and install roots."""
    return ".".join(version.split(".")[:2])


# Debian package versions (python-debian, imported on first use).
_RELATIONS = {"=": eq, ">=": ge, "<=": le, ">>": gt, "<<": lt}


def debian_version(version: str) -> DebianVersion:
    """A Debian package version that orders as dpkg does; raises ValueError when unreadable."""
    from debian.debian_support import Version

    return Version(version)


def compare_debian_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as Debian orders two package versions (``dpkg --compare-versions``)."""
    from debian.debian_support import version_compare

    order = version_compare(a, b)
    return (order > 0) - (order < 0)


def debian_version_satisfies(version: str, relation: str, wanted: str) -> bool:
    """Whether ``version`` meets a Depends relation (``=``, ``>=``, ``<=``, ``>>``, ``<<``)."""
    return _RELATIONS[relation](compare_debian_versions(version, wanted), 0)
