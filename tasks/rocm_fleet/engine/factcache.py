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
from typing import Any

from pyinfra.api import FactBase

# state -> (host, fact, arguments) -> (changes seen on the host then, value)
_READS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _changes_and_reads(kwargs: dict[str, Any], fact_cls: type[FactBase]):
    from pyinfra import host

    state = host.state
    changes = sum(
        1
        for data in state.ops[host].values()
        if data.operation_meta.is_complete() and data.operation_meta.did_change()
    )
    reads = _READS.setdefault(state, {})
    return changes, reads, (host.name, fact_cls, repr(sorted(kwargs.items())))


def remember_fact(fact_cls: type[FactBase], value: Any, **kwargs: Any) -> None:
    """Record what ``fact_cls`` would answer now, read as part of a larger read, so
    ``read_fact`` doesn't ask again."""
    changes, reads, key = _changes_and_reads(kwargs, fact_cls)
    reads[key] = (changes, value)


def read_fact(fact_cls: type[FactBase], **kwargs: Any) -> Any:
    """``host.get_fact``, gathered again only after an operation changed this host.

    Call it at the top of an operation, before it yields, as pyinfra's own operations read
    their facts.
    """
    from pyinfra import host

    changes, reads, key = _changes_and_reads(kwargs, fact_cls)
    seen = reads.get(key)
    if seen is not None and seen[0] == changes:
        return seen[1]
    value = host.get_fact(fact_cls, **kwargs)
    reads[key] = (changes, value)
    return value
