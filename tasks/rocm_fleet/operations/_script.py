"""Running the package's shell scripts (``files/scripts``) on a host, and failing a host."""

import shlex

from pyinfra.api import QuoteString, StringCommand

from rocm_fleet import assets as files
from rocm_fleet.model import paths

# Host paths the scripts use, from paths.py.
_SCRIPT_VARIABLES = {
    "REBOOT_REQUIRED": paths.REBOOT_REQUIRED,
    "REBOOT_PACKAGES": paths.REBOOT_PACKAGES,
    "REBOOT_REASONS": paths.REBOOT_REASONS,
}


def script(name: str, *args: str) -> StringCommand:
    """``sh -c`` of ``files/scripts/<name>.sh`` (after the path variables, ``safe-path.sh`` and
    ``lib.sh``), ``args`` quoted as its positional parameters."""
    variables = "".join(f"{key}={shlex.quote(value)}\n" for key, value in _SCRIPT_VARIABLES.items())
    helpers = files.text("scripts/safe-path.sh") + files.text("scripts/lib.sh")
    body = variables + helpers + files.text(f"scripts/{name}.sh")
    return StringCommand("sh", "-c", QuoteString(body), name, *map(QuoteString, args))


def failure(reason: str) -> StringCommand:
    """A command that prints ``reason`` on stderr and fails, failing the host (only)."""
    return StringCommand("echo", QuoteString(reason), ">&2", "&&", "exit", "1")
