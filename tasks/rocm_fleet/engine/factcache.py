"""Facts read once between two changes of a host (``read_fact``); ``remember_fact(s)`` records
values read as part of a larger read (the survey)."""

from collections.abc import Iterable
from typing import Any, NamedTuple

from pyinfra.api import FactBase
from pyinfra.context import ctx_host

from rocm_fleet.engine.version import internal

# Kept on pyinfra's state (gone with it): host name -> (fact, arguments) -> (changes seen on
# the host then, value); host -> _Count, as last counted.
_READS, _CHANGES = "_rocm_fleet_reads", "_rocm_fleet_changes"


class _Count(NamedTuple):
    completed: int  # pyinfra's count of the host's completed operations then
    changes: int  # how many of them changed the host
    pending: list  # the metas of the operations not complete then
    known: int  # how many operations the host had then


def _changes(state: Any, host: Any) -> int:
    """How many of the host's completed operations changed it (recounted over the pending ones
    only when pyinfra's count of completed operations moved)."""
    results = internal(state, "get_results_for_host")(host)
    completed = results.ops + results.error_ops
    counted = _per_state(_CHANGES, state)
    seen = counted.get(host)
    if seen is not None and seen.completed == completed:
        return seen.changes
    ops = state.ops[host]
    if seen is None or seen.known != len(ops):
        pending, changes = [data.operation_meta for data in ops.values()], 0
    else:
        pending, changes = seen.pending, seen.changes
    still = []
    for meta in pending:
        if meta.is_complete():
            changes += meta.did_change()
        else:
            still.append(meta)
    if len(ops) - len(still) == completed:
        counted[host] = _Count(completed, changes, still, len(ops))
    return changes


def _key(fact_cls: type[FactBase], kwargs: dict[str, Any]) -> tuple:
    if not kwargs:
        return (fact_cls,)
    items = tuple(sorted(kwargs.items()))
    try:
        hash(items)
    except TypeError:  # a list among the values
        return (fact_cls, repr(items))
    return (fact_cls, items)


def _per_state(table: str, state: Any) -> dict:
    """The dict ``table`` of pyinfra's ``state``, made on first use."""
    return vars(state).setdefault(table, {})


def _host_changes_reads() -> tuple[Any, int, dict]:
    host = ctx_host.get()  # the host itself, not the context's stand-in for it
    state = host.state
    return host, _changes(state, host), _per_state(_READS, state).setdefault(host.name, {})


def remember_facts(answers: Iterable[tuple[type[FactBase], dict[str, Any], Any]]) -> None:
    """Record what each ``(fact_cls, kwargs, value)`` answers now, so ``read_fact`` doesn't ask."""
    _, changes, reads = _host_changes_reads()
    for fact_cls, kwargs, value in answers:
        reads[_key(fact_cls, kwargs)] = (changes, value)


def remember_fact(fact_cls: type[FactBase], value: Any, **kwargs: Any) -> None:
    """``remember_facts`` for one fact."""
    remember_facts([(fact_cls, kwargs, value)])


def read_fact(fact_cls: type[FactBase], **kwargs: Any) -> Any:
    """``host.get_fact``, gathered again only after an operation changed this host. Call it before
    the operation's first yield."""
    host, changes, reads = _host_changes_reads()
    key = _key(fact_cls, kwargs)
    seen = reads.get(key)
    if seen is not None and seen[0] == changes:
        return seen[1]
    value = host.get_fact(fact_cls, **kwargs)
    reads[key] = (changes, value)
    return value
