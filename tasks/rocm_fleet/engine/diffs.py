"""What a plan would change (``model.changes``): under ``--diff`` logged as ``files.put`` logs its
diff, and kept per host (``changes_of``); operations read for it only when ``detailing()``."""

import logging
import weakref
from typing import Any

import click
from pyinfra.context import ctx_host

from rocm_fleet.model.changes import FileChange, PackageChange

logger = logging.getLogger("pyinfra")

# state -> host name -> operation hash -> the changes it showed, in plan order
_CHANGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# the states whose plans keep the detail without logging it (the audit's)
_QUIET: weakref.WeakSet = weakref.WeakSet()


def record_detail(state: Any) -> None:
    """Plan the hosts of ``state`` with the detail kept (``changes_of``), not logged."""
    _QUIET.add(state)


def detailing() -> bool:
    """Whether the current operation shows its changes: under ``--diff`` (or ``record_detail``),
    while planning, the first time its body runs."""
    host = ctx_host.get()  # the host itself, not the context's stand-in for it
    state = host.state
    if not (state.config.DIFF or state in _QUIET) or state.is_executing:
        return False
    return host.current_op_hash not in _CHANGES.get(state, {}).get(host.name, {})


def show(changes: list[PackageChange | FileChange]) -> None:
    """Keep ``changes`` for the current host's operation (once) and, under ``--diff``, log them:
    a package a line, a file's heading then its diff (``+`` green, ``-`` red, as pyinfra's)."""
    host = ctx_host.get()
    state = host.state
    shown = _CHANGES.setdefault(state, {}).setdefault(host.name, {})
    if host.current_op_hash in shown:
        return
    shown[host.current_op_hash] = list(changes)
    if not state.config.DIFF:
        return
    for change in changes:
        if isinstance(change, PackageChange):
            host.log(f"Will {change.line()}", logger.info)
            continue
        heading, *diff = change.lines()
        host.log(f"Will {heading}", logger.info)
        for line in diff:
            logger.info("  %s", _coloured(line))
        if diff:
            logger.info("")


def _coloured(line: str) -> str:
    colour = {"+": "green", "-": "red"}.get(line[:1])
    return click.style(line, colour) if colour and not line.startswith(("+++", "---")) else line


def changes_of(state: Any, host_name: str) -> list[PackageChange | FileChange]:
    """What ``host_name``'s plan in ``state`` showed, in plan order ([] when nothing)."""
    shown = _CHANGES.get(state, {}).get(host_name, {})
    return [change for changes in shown.values() for change in changes]
