"""Planning a deploy on many hosts as pyinfra's CLI does, and reading each host's plan (for the
audit); pyinfra 3.10 has no public call for either."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rocm_fleet.engine.context import on_each_host
from rocm_fleet.engine.version import internal, tested


@dataclass(frozen=True)
class PlannedOperation:
    """One operation planned for a host: its names (deploys, as pyinfra prints them), whether it
    would change the host, whether it is gated with ``_if``."""

    names: list[str]
    changes: bool
    conditional: bool


def planned_operations(state: Any, host: Any) -> Iterator[PlannedOperation]:
    """The operations planned for ``host`` in ``state``, in the host's plan order
    (``Host.op_hash_order``)."""
    for op_hash in internal(host, "op_hash_order"):
        if op_hash not in state.ops[host]:  # solved but not on this host (_run_once)
            continue
        data = state.get_op_data_for_host(host, op_hash)
        yield PlannedOperation(
            names=sorted(state.op_meta[op_hash].names),
            changes=planned_change(state, host, data.operation_meta),
            conditional=bool(data.global_arguments["_if"]),
        )


def planned_change(state: Any, host: Any, meta: Any) -> bool:
    """Whether planned operation ``meta`` would change ``host``, as ``--dry`` reports it
    (pyinfra's "maybe"); off the tested minor, via ``OperationMeta.will_change``."""
    if tested():
        return bool(internal(meta, "_maybe_is_change"))
    from pyinfra.context import ctx_host, ctx_state

    with ctx_state.use(state), ctx_host.use(host):
        return bool(meta.will_change)


def plan_in_parallel(state: Any, hosts: list[Any], plan_one: Callable[[Any], Any]) -> list[Any]:
    """``on_each_host`` in CLI mode (an operation's identity is its call site), ``state``
    preparing."""
    import pyinfra
    from pyinfra.api.state import StateStage

    was_cli, pyinfra.is_cli = pyinfra.is_cli, True
    state.set_stage(StateStage.Prepare)
    try:
        return on_each_host(state, hosts, plan_one)
    finally:
        pyinfra.is_cli = was_cli


def plan_deploy(state: Any, host: Any, deploy: Callable[[], Any]) -> Any:
    """Plan ``deploy`` (a ``@deploy`` function) for one connected host of ``state`` as the CLI
    runs a deploy file; its return value."""
    from pyinfra.context import ctx_config, ctx_host

    state.activate_host(host)
    with ctx_config.use(state.config.copy()), ctx_host.use(host):
        return deploy()
