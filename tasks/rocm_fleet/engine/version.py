"""Which pyinfra runs, whether it is the tested minor, and its internals (``internal``: a
``PyinfraChanged`` naming what moved)."""

import functools
import importlib.metadata
from typing import Any

from packaging.version import Version
from pyinfra.api.exceptions import PyinfraError

#: The pyinfra minor rocm-fleet is tested on; pyproject.toml's pin starts there.
TESTED_PYINFRA = (3, 10)


@functools.cache
def pyinfra_version() -> str:
    """The installed pyinfra's version (read once)."""
    return importlib.metadata.version("pyinfra")


def minor(version: str) -> tuple[int, ...]:
    """(major, minor) of a version string: "3.11.0rc1" -> (3, 11)."""
    return (*Version(version).release, 0)[:2]


def tested() -> bool:
    """Whether the installed pyinfra is of the minor rocm-fleet is tested on."""
    return minor(pyinfra_version()) == TESTED_PYINFRA


class PyinfraChanged(PyinfraError):
    """An internal of pyinfra that rocm-fleet needs is not where the tested minor has it."""


_MISSING = object()


def internal(owner: Any, name: str) -> Any:
    """``owner.name``, a pyinfra internal; ``PyinfraChanged`` naming it and both versions when
    missing."""
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
