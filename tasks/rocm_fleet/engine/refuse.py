"""Refusing a host while planning (the reason on its line, its operations dropped, the host
failed; the fleet carries on), and the per-``State`` record of preflight's outcomes."""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pyinfra import host
from pyinfra.api.exceptions import PyinfraError
from pyinfra.context import ctx_host

from rocm_fleet.engine.version import internal
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.untrusted import visible

if TYPE_CHECKING:
    from rocm_fleet.model.findings import Findings

logger = logging.getLogger("pyinfra")


@dataclass(frozen=True)
class Outcome:
    """What preflight found on a host: its survey (None when unreadable) and verdict."""

    survey: HostSurvey | None
    findings: Findings | None
    refused: str | None  # the reason, when refused


# state -> host name -> Outcome
_OUTCOMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def record_outcome(found: Outcome) -> None:
    """Record preflight's outcome for the current host of the current state."""
    _OUTCOMES.setdefault(host.state, {})[host.name] = found


def outcome(state: Any, host_name: str) -> Outcome | None:
    """Preflight's outcome for a host planned in ``state`` (None: not planned)."""
    return _OUTCOMES.get(state, {}).get(host_name)


def outcome_of(target: Any = None) -> Outcome | None:
    """Preflight's outcome for ``target`` (default: the host being planned); None when not
    planned."""
    current = host if target is None else target
    return outcome(current.state, current.name)


def refuse_host(reason: str) -> None:
    """Refuse the current host while planning: log why (``visible``), drop its operations, fail it;
    pyinfra's error re-raised only when other hosts remain (over ``--fail-percent``)."""
    host.log_styled(f"refused: {visible(reason)}", fg="red", log_func=logger.error)
    state = host.state
    fail_hosts = internal(state, "fail_hosts")  # outside the try: its error is no refusal
    # The Host itself, not pyinfra's context proxy (which moves on with planning).
    current = ctx_host.get()
    # --dry lists none of its operations: none run, and none is a row of its change table.
    internal(state, "ops").get(current, {}).clear()
    internal(current, "op_hash_order").clear()
    try:
        fail_hosts({current})
    except PyinfraError:
        if state.active_hosts:
            raise  # over --fail-percent: pyinfra's own stop
        # the last host refused: pyinfra says "No hosts remaining!" when it runs


def refuse_after_preflight(reason: str) -> None:
    """``refuse_host`` from a step after preflight, recording the reason in the host's outcome."""
    refuse_host(reason)
    found = outcome_of()
    if found is not None and found.refused is None:
        record_outcome(replace(found, refused=reason))


def warn_host(warning: str) -> None:
    """Print a warning on the current host's line (``visible``: it may quote the node)."""
    host.log_styled(f"warning: {visible(warning)}", fg="yellow", log_func=logger.warning)
