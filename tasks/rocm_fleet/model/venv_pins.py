"""A venv's distributions against a wheel set's pins (PEP 503 names, pip's ``==``, PEP 508)."""

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
    """Whether the distribution of a PEP 508 requirement matches (extras are not checked)."""
    req = Requirement(requirement)
    try:
        version = Version(installed.get(normal_name(req.name)) or "")
    except InvalidVersion:
        return False
    return req.specifier.contains(version, prereleases=True)
