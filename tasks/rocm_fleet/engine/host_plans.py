"""Planning hosts and reading the plan, as pyinfra's CLI does, for the audit.

pyinfra 3.10's API plans operations (``add_op``) but has no call that plans a deploy
function for many hosts in CLI mode, or says per host which planned operation would change
it; its CLI does both with ``State`` and ``OperationMeta`` internals. Those uses are here,
each behind a named function, so a pyinfra release that changes them breaks one module (and
``make pyinfra-next`` shows it before users see it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rocm_fleet.engine.version import internal, tested


@dataclass(frozen=True)
class PlannedOperation:
    """One operation planned for a host: its names (the deploys it is in, ``" | "``-joined,
    as pyinfra prints them), whether it would change the host, and whether it is gated
    with ``_if`` (its change follows another operation's, reported itself)."""

    names: list[str]
    changes: bool
    conditional: bool


def planned_operations(state: Any, host: Any) -> Iterator[PlannedOperation]:
    """The operations planned for ``host`` in ``state``, in plan order.

    The order is the host's own (``Host.op_hash_order``, every operation solved for it, as
    planned): pyinfra's ``State.get_op_order()`` sorts every host's operations into one
    order in which each host's follow one another as they do there, so kept to one host it
    is this list. Asking it for each host sorted all hosts' operations once per host: the
    audit of N hosts was quadratic in N.
    """
    for op_hash in internal(host, "op_hash_order"):
        if op_hash not in state.ops[host]:  # solved but not on this host (_run_once)
            continue
        data = state.get_op_data_for_host(host, op_hash)
        yield PlannedOperation(
            names=sorted(state.op_meta[op_hash].names),
            # What --dry reports as a change: pyinfra's own "maybe" (commands were planned,
            # or the operation can't tell before it runs).
            changes=planned_change(state, host, data.operation_meta),
            conditional=bool(data.global_arguments["_if"]),
        )


def planned_change(state: Any, host: Any, meta: Any) -> bool:
    """Whether the planned operation ``meta`` would change ``host``, as ``--dry`` reports it:
    pyinfra's own "maybe" (commands were planned, or the operation can't tell before it
    runs), which planning with ``check_for_changes`` has worked out already. On another
    minor than the tested one, through pyinfra's own ``OperationMeta.will_change``, which
    works it out when it has not been."""
    if tested():
        return bool(internal(meta, "_maybe_is_change"))
    from pyinfra.context import ctx_host, ctx_state

    with ctx_state.use(state), ctx_host.use(host):
        return bool(meta.will_change)


def plan_in_parallel(state: Any, hosts: list[Any], plan_one: Callable[[Any], Any]) -> list[Any]:
    """Run ``plan_one(host)`` for every host at once on pyinfra's own greenlet pool, with
    ``state`` current and planning in CLI mode; each host's result, or its exception.

    CLI mode as pyinfra's CLI plans: an operation's identity comes from where it is called
    (file and line), so hosts that take different branches of the deploy (one gets a
    kernel, another a driver) still share each operation; in API mode it is the operation's
    position on each host, which mixes different operations up.
    """
    import gevent
    import pyinfra
    from pyinfra.api.state import StateStage
    from pyinfra.context import ctx_state

    was_cli = pyinfra.is_cli
    pyinfra.is_cli = True
    state.set_stage(StateStage.Prepare)
    try:
        with ctx_state.use(state):
            greenlets = [state.pool.spawn(plan_one, host) for host in hosts]
            gevent.joinall(greenlets)
    finally:
        pyinfra.is_cli = was_cli
    return [
        greenlet.value if greenlet.successful() else greenlet.exception for greenlet in greenlets
    ]


def plan_deploy(state: Any, host: Any, deploy: Callable[[], Any]) -> Any:
    """Plan ``deploy`` (a ``@deploy`` function) for one connected host of ``state``, as
    pyinfra's CLI runs a deploy file for it; what it returns."""
    from pyinfra.context import ctx_config, ctx_host

    state.activate_host(host)
    with ctx_config.use(state.config.copy()), ctx_host.use(host):
        return deploy()
