"""A host's connection across a reboot, as ``server.reboot`` keeps it: the sudo askpass file and
pyinfra's cache of it go before the host does."""

from __future__ import annotations

from typing import Any

from pyinfra.connectors.util import clear_askpass_cache, remove_any_sudo_askpass_file


def before_reboot(host: Any) -> None:
    """Remove the sudo password helper pyinfra uploaded to ``host`` (a command runs)."""
    remove_any_sudo_askpass_file(host)


def forget_after_reboot(host: Any) -> None:
    """Forget that ``host`` had the helper, so pyinfra uploads it again when it is back."""
    clear_askpass_cache(host)
