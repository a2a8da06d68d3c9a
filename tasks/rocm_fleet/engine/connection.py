"""A host's connection across a reboot, as pyinfra's own ``server.reboot`` keeps it.

pyinfra 3.10 keeps the sudo password helper it uploaded (the askpass file) and a cache of
it per host in ``pyinfra.connectors.util``, a module for pyinfra's own operations. A reboot
empties /tmp, so both go before the host goes down, as ``server.reboot`` does them.
"""

from __future__ import annotations

from typing import Any

from pyinfra.connectors.util import clear_askpass_cache, remove_any_sudo_askpass_file


def before_reboot(host: Any) -> None:
    """Remove the sudo password helper pyinfra uploaded to ``host`` (a command runs)."""
    remove_any_sudo_askpass_file(host)


def forget_after_reboot(host: Any) -> None:
    """Forget that ``host`` had the helper, so pyinfra uploads it again when it is back."""
    clear_askpass_cache(host)
