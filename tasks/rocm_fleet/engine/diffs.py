"""The detail of what a plan would change (``model.changes``), under pyinfra's ``--diff``: logged
as pyinfra's ``files.put`` logs its diff (``host.log``, then the lines indented), while the host
is planned only, and kept per host (``changes_of``) for the audit, which asks for the detail
without the log (``record_detail``).

Operations call ``detailing()`` before reading anything for the detail (a host's file, apt's
candidate versions): without ``--diff`` or the audit's JSON nothing more is read."""

from __future__ import annotations

import logging
import weakref
from typing import Any

import click
from pyinfra.context import ctx_host

from rocm_fleet.model.changes import FileChange, PackageChange

logger = logging.getLogger("pyinfra")

# state -> host name -> the changes its plan showed, in plan order
_CHANGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# the states whose plans keep the detail without logging it (the audit's)
_QUIET: weakref.WeakSet = weakref.WeakSet()


def record_detail(state: Any) -> None:
    """Plan the hosts of ``state`` with the detail kept (``changes_of``), not logged."""
    _QUIET.add(state)


def _host() -> Any:
    return ctx_host.get()  # the host itself, not the context's stand-in for it


def detailing() -> bool:
    """Whether the current host's plan shows its changes in detail: ``--diff`` (or
    ``record_detail``), while planning (an operation run after planning shows nothing again)."""
    state = _host().state
    return (bool(state.config.DIFF) or state in _QUIET) and not state.is_executing


def show(changes: list[PackageChange | FileChange]) -> None:
    """Keep ``changes`` for the current host and, under ``--diff``, log them: the packages a
    line each, a file's heading then its diff (``+`` green, ``-`` red, as pyinfra's)."""
    host = _host()
    state = host.state
    found = _CHANGES.get(state)
    if found is None:
        found = _CHANGES[state] = {}
    found.setdefault(host.name, []).extend(changes)
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
        logger.info("")


def _coloured(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return click.style(line, "green")
    if line.startswith("-") and not line.startswith("---"):
        return click.style(line, "red")
    return line


def changes_of(state: Any, host_name: str) -> list[PackageChange | FileChange]:
    """What ``host_name``'s plan in ``state`` showed, in plan order ([] when nothing)."""
    return list(_CHANGES.get(state, {}).get(host_name, []))
