"""The pyinfra internals behind ``engine/``: each is where the tested minor has it, each
function reads what pyinfra's own code reads, and on another minor they step aside to
pyinfra's own way or say in one error what moved (``engine.version``). ``make
pyinfra-next`` runs these on the newest pyinfra 3.x."""

from __future__ import annotations

import pytest
from pyinfra.api import Config, Inventory, State
from pyinfra.api.operation import OperationMeta
from pyinfra.context import ctx_host, ctx_state

from rocm_fleet.engine import host_plans, run, version
from unit.surveys import converged_survey, plan_fleet

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}


@pytest.fixture
def node():
    inventory = Inventory((["node"], {}))
    state = State(inventory, Config())
    host = inventory.get_host("node")
    with ctx_state.use(state), ctx_host.use(host):
        yield state, host


def test_every_internal_the_engine_reaches_is_there(node):
    """What ``internal`` is asked for, on the installed pyinfra (the tested minor, and the
    newest 3.x under ``make pyinfra-next``)."""
    state, host = node
    meta = OperationMeta("hash", is_change=True)
    for owner, name in [(state, "is_executing"), (state, "print_fact_info"),
                        (state, "callback_handlers"), (state, "fail_hosts"),
                        (state, "get_results_for_host"), (host, "current_deploy_kwargs"),
                        (host, "op_hash_order"), (meta, "_hash")]:  # fmt: skip
        version.internal(owner, name)
    assert run.operation_hash(meta) == "hash"
    if version.tested():
        assert version.internal(meta, "_maybe_is_change") is True


def test_a_missing_internal_is_one_error_naming_it(monkeypatch):
    monkeypatch.setattr(version, "pyinfra_version", lambda: "3.99.0")
    with pytest.raises(version.PyinfraChanged) as error:
        version.internal(object(), "fail_hosts")
    assert str(error.value) == (
        "rocm-fleet: pyinfra 3.99.0 has no object.fail_hosts, which rocm-fleet uses as "
        "pyinfra 3.10.x has it: install pyinfra 3.10.x (pip install 'pyinfra~=3.10.0')"
    )
    assert version.minor("3.11.0rc1") == (3, 11) and version.minor("4") == (4, 0)


def test_the_run_is_read_from_pyinfras_state(node):
    state, host = node
    assert not run.executing() and not run.verbose() and run.deploy_arguments() == {}
    state.is_executing = state.print_fact_info = True
    host.current_deploy_kwargs = {"_sudo": True}
    assert run.executing() and run.verbose() and run.deploy_arguments() == {"_sudo": True}


def test_a_step_after_an_operation_runs_once_when_it_ends_on_every_host(node):
    state, _ = node
    steps: list[str] = []

    def step() -> None:
        steps.append("report")

    for _ in range(3):  # three hosts planning the same operation ask for the same step
        run.after_operation(OperationMeta("reboot", is_change=False), step)
    state.trigger_callbacks("operation_end", "other")
    assert steps == []
    state.trigger_callbacks("operation_end", "reboot")
    assert steps == ["report"]


def test_the_planned_change_is_pyinfras_will_change_on_every_minor(monkeypatch):
    """The audit's "would change" per operation: on the tested minor read where pyinfra's
    planning left it, on another asked of pyinfra's ``OperationMeta.will_change``; the same
    answers for a host that drifted and one that did not."""
    drifted = {**DATA, "rocm_users": ["alice"]}
    survey = converged_survey(DATA, "ubuntu-24.04")
    state = plan_fleet({"converged": (DATA, survey), "drifted": (drifted, survey)})

    def changes() -> dict[str, list[bool]]:
        return {
            host.name: [op.changes for op in host_plans.planned_operations(state, host)]
            for host in state.inventory
        }

    read = changes()
    monkeypatch.setattr(host_plans, "tested", lambda: False)
    assert changes() == read
    assert sum(read["drifted"]) > sum(read["converged"])  # alice's group, at least


def test_a_refused_hosts_operations_leave_the_change_table():
    """``--dry``'s table has one row per operation in pyinfra's order: a refused host's
    operations are in neither, so a fleet refused after planning shows no rows of "-"."""
    from pyinfra.operations import server

    from rocm_fleet.engine.refuse import refuse_host

    inventory = Inventory((["a", "b"], {}))
    state = State(inventory, Config())
    a, b = inventory.get_host("a"), inventory.get_host("b")
    with ctx_state.use(state):
        for each in (a, b):
            with ctx_host.use(each):
                server.shell(name="both", commands=["true"])
        with ctx_host.use(b):
            server.shell(name="only b", commands=["false"])
            refuse_host("the index is unreachable")
    assert [state.op_meta[op].names for op in state.get_op_order()] == [{"both"}]
    assert not state.ops[b] and b not in state.active_hosts
