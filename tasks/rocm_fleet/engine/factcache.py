"""Facts read once between two changes of a host.

pyinfra 3.10 keeps no fact cache: every ``host.get_fact`` is an SSH round trip, and several
operations read the same fact (the package list, the running kernel), while planning and
again while executing. ``read_fact`` reuses a value read since the host's last change; any
operation that changes the host (a reboot included) makes every earlier read stale.
``remember_fact`` records a value read as part of a larger read (the survey), so a
converged host is planned and executed from one read.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import Any

from pyinfra.api import FactBase

from rocm_fleet.engine.version import internal

# state -> host name -> (fact, arguments) -> (changes seen on the host then, value)
_READS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# state -> host -> (operations completed, changes among them), as last counted
_CHANGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _changes(state: Any, host: Any) -> int:
    """How many of the host's operations have run and changed it.

    Counting the host's operations at every read made planning quadratic in them (each of
    a host's ~100 reads walked all its operations so far). pyinfra counts each operation it
    completes in the host's results (``run_host_op``: ``ops`` for a success or an ignored
    error, ``error_ops`` for an error), and a completed operation never changes its answer,
    so the count is kept until that number moves. It is kept only when it agrees with the
    operations themselves (pyinfra bumps its counter just before it marks the operation
    complete).
    """
    results = internal(state, "get_results_for_host")(host)
    completed = results.ops + results.error_ops
    counted = _CHANGES.setdefault(state, {})
    seen = counted.get(host)
    if seen is not None and seen[0] == completed:
        return seen[1]
    done = changes = 0
    for data in state.ops[host].values():
        meta = data.operation_meta
        if meta.is_complete():
            done += 1
            changes += meta.did_change()
    if done == completed:
        counted[host] = (completed, changes)
    return changes


def _key(fact_cls: type[FactBase], kwargs: dict[str, Any]) -> tuple:
    return (fact_cls, repr(sorted(kwargs.items()))) if kwargs else (fact_cls,)


def _host_changes_reads() -> tuple[Any, int, dict]:
    from pyinfra.context import ctx_host

    host = ctx_host.get()  # the host itself, not the context's stand-in for it
    state = host.state
    return host, _changes(state, host), _READS.setdefault(state, {}).setdefault(host.name, {})


def remember_facts(answers: Iterable[tuple[type[FactBase], dict[str, Any], Any]]) -> None:
    """Record what each ``(fact_cls, kwargs, value)`` would answer now, read as part of a
    larger read (the survey), so ``read_fact`` doesn't ask again."""
    _, changes, reads = _host_changes_reads()
    for fact_cls, kwargs, value in answers:
        reads[_key(fact_cls, kwargs)] = (changes, value)


def remember_fact(fact_cls: type[FactBase], value: Any, **kwargs: Any) -> None:
    """Record what ``fact_cls`` would answer now, read as part of a larger read, so
    ``read_fact`` doesn't ask again."""
    remember_facts([(fact_cls, kwargs, value)])


def read_fact(fact_cls: type[FactBase], **kwargs: Any) -> Any:
    """``host.get_fact``, gathered again only after an operation changed this host.

    Call it at the top of an operation, before it yields, as pyinfra's own operations read
    their facts.
    """
    host, changes, reads = _host_changes_reads()
    key = _key(fact_cls, kwargs)
    seen = reads.get(key)
    if seen is not None and seen[0] == changes:
        return seen[1]
    value = host.get_fact(fact_cls, **kwargs)
    reads[key] = (changes, value)
    return value
