"""Static files rocm-fleet puts on hosts (``rocm-pin-600``, ...) and the shell scripts its
operations run (``scripts/``), installed as the package data ``rocm_fleet.files``."""

from importlib import resources


def text(name: str) -> str:
    """The content of a file of this folder, e.g. ``text("scripts/lib.sh")``."""
    return resources.files(__name__).joinpath(name).read_text()
