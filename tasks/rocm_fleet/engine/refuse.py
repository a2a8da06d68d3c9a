"""Refusing a host while planning, and the outcome registry the audit reads.

A host preflight refuses gets the reason on its line (in ``--dry`` too), is marked failed
through pyinfra's ``State.fail_hosts`` (so neither a real run nor ``--dry`` goes on with it
and the run's exit status says so) and keeps none of the operations planned for it (``--dry``
lists none), while the rest of the fleet carries on. What preflight found on each host (its
survey, the findings, the reason when refused) is recorded per pyinfra ``State`` for the
run's other views (``rocm-fleet audit``).
"""

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
    """Preflight's outcome for ``target`` (a pyinfra ``Host``; default: the host being
    planned now) in the run planning it (None: not planned)."""
    current = host if target is None else target
    return outcome(current.state, current.name)


def refuse_host(reason: str) -> None:
    """Refuse the current host while planning: say why on its line and mark it failed, so
    neither a real run nor --dry goes on with it and the run's exit status reports it."""
    host.log_styled(f"refused: {reason}", fg="red", log_func=logger.error)
    state = host.state
    fail_hosts = internal(state, "fail_hosts")  # outside the try: its error is no refusal
    # The Host itself: ``host`` is pyinfra's context proxy, which stands for whichever
    # host is current, so a set holding it would lose this one once planning moves on.
    current = ctx_host.get()
    # None of its operations will run, so --dry's change table lists none of them either
    # (those planned before the refusal: the ROCm packages before the torch wheels could
    # not be locked).
    internal(state, "ops").get(current, {}).clear()
    try:
        fail_hosts({current})
    except PyinfraError:
        if state.active_hosts:
            raise  # over --fail-percent: pyinfra's own stop
        # the last host refused: pyinfra says "No hosts remaining!" when it runs


def refuse_after_preflight(reason: str) -> None:
    """Refuse the host as preflight does, from a step planned after it, and record the reason
    where the audit reads preflight's verdict (so the host is "refused" there too, not
    silently without drift)."""
    refuse_host(reason)
    found = outcome_of()
    if found is not None and found.refused is None:
        record_outcome(replace(found, refused=reason))


def warn_host(warning: str) -> None:
    """Print a warning on the current host's line."""
    host.log_styled(f"warning: {warning}", fg="yellow", log_func=logger.warning)
