"""What a venv holds, against what a wheel set pins: names as PEP 503 normalises them,
versions as pip's ``==`` matches a local label, requirements as PEP 508 reads them.

Pure: the venv's distributions come in as a mapping (``facts.python.VenvDistributions``);
the deploy asks whether pip is to run (``sources.WheelNeed.unmet_in``) before it locks the
set, the operation (``operations.python.pinned_wheels``) what pip is to install.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


def normal_name(name: str) -> str:
    """A distribution name as PEP 503 normalises it ("Torch_Audio" -> "torch-audio")."""
    return canonicalize_name(name)


def normal_versions(found: Mapping[str, str] | None) -> dict[str, str]:
    """A venv's distributions, normalised name -> version (empty: no venv)."""
    return {normal_name(name): version for name, version in (found or {}).items()}


def version_matches(installed: str | None, wanted: str) -> bool:
    """PEP 440 ``==`` for the two shapes we pin: exact with a local label, or public only."""
    if installed is None:
        return False
    return installed == wanted if "+" in wanted else installed.split("+")[0] == wanted


def requirement_met(installed: Mapping[str, str], requirement: str) -> bool:
    """Whether a venv's distributions (normalised name -> version) satisfy a PEP 508
    requirement such as ``rocm[device-all,libraries]==7.14.*`` (its extras' own
    requirements aren't known without the metadata: the distribution itself must match)."""
    req = Requirement(requirement)
    version = installed.get(normal_name(req.name))
    if version is None:
        return False
    try:
        return req.specifier.contains(Version(version), prereleases=True)
    except InvalidVersion:
        return False
