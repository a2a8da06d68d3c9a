"""The static files rocm-fleet puts on hosts (the login profile, ld.so.conf snippet, ...) and
the shell scripts its operations and facts run (``scripts/``).

They live in the top-level ``files/`` folder of a checkout (the design card's layout), which
``tasks/rocm_fleet/files`` links to, and are installed as the package data
``rocm_fleet/files/``: in both, the folder ``files`` beside this module.
"""

import functools
from importlib import resources


@functools.cache  # read once per process: they are the package's own, and each host's plan
# asks for the same scripts again (6 reads a host, ~1 ms a host at 1,000 simulated hosts)
def text(name: str) -> str:
    """The content of a file of ``files/``, e.g. ``text("scripts/lib.sh")``."""
    return resources.files("rocm_fleet").joinpath("files", name).read_text()
