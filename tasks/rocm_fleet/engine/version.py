"""Which pyinfra runs, and whether rocm-fleet was tested on its minor.

rocm-fleet uses pyinfra's documented API everywhere but ``engine/``, and the few internals it
needs there (its State's stages and callbacks, an operation's hash and planned change) on
any 3.x from the tested minor up (pyproject.toml: ``pyinfra>=3.10,<4``). On the tested minor
they are used as they are; on another, each use steps aside to pyinfra's own way where it
has one (the planning speedups, ``engine.speedups``), and where it has none an internal
that moved is named in one error (``internal``) instead of an AttributeError deep in a plan.
``make pyinfra-next`` runs the unit suite on the newest 3.x, where the tests of each
internal (``tests/unit/test_pyinfra_internals.py``) show what moved.
"""

from __future__ import annotations

import functools
import importlib.metadata
from typing import Any

from pyinfra.api.exceptions import PyinfraError

#: The pyinfra minor rocm-fleet is tested on; pyproject.toml's pin starts there.
TESTED_PYINFRA = (3, 10)


@functools.cache
def pyinfra_version() -> str:
    """The installed pyinfra's version (read once: each host's plan asks)."""
    return importlib.metadata.version("pyinfra")


def minor(version: str) -> tuple[int, ...]:
    """(major, minor) of a version string: "3.11.0rc1" -> (3, 11)."""
    parts = []
    for part in version.split(".")[:2]:
        digits = "".join(c for c in part if c.isdigit()) or "0"
        parts.append(int(digits))
    return tuple([*parts, 0][:2])


def tested() -> bool:
    """Whether the installed pyinfra is of the minor rocm-fleet is tested on."""
    return minor(pyinfra_version()) == TESTED_PYINFRA


class PyinfraChanged(PyinfraError):
    """An internal of pyinfra that rocm-fleet needs is not where the tested minor has it."""


_MISSING = object()


def internal(owner: Any, name: str) -> Any:
    """``owner.name``, an internal of pyinfra's (tested on ``TESTED_PYINFRA``); on a pyinfra
    without it, PyinfraChanged naming it and both versions."""
    value = getattr(owner, name, _MISSING)
    if value is _MISSING:
        kind = owner.__name__ if isinstance(owner, type) else type(owner).__name__
        tested_minor = ".".join(map(str, TESTED_PYINFRA))
        raise PyinfraChanged(
            f"rocm-fleet: pyinfra {pyinfra_version()} has no {kind}.{name}, which rocm-fleet "
            f"uses as pyinfra {tested_minor}.x has it: install pyinfra {tested_minor}.x "
            f"(pip install 'pyinfra~={tested_minor}.0')"
        )
    return value
