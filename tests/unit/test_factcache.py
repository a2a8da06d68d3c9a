"""rocm_fleet.engine.factcache: one read between two changes."""

from __future__ import annotations

from pyinfra.facts.server import KernelVersion

from rocm_fleet.engine.factcache import read_fact, remember_fact
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.system import (
    RunningKernel,
)


def test_read_fact_reuses_a_value_until_an_operation_changes_the_host():
    from pyinfra.api import Config, Inventory, State, StringCommand
    from pyinfra.api.operation import OperationMeta
    from pyinfra.api.state import StateOperationHostData
    from pyinfra.connectors.util import CommandOutput
    from pyinfra.context import ctx_host, ctx_state

    inventory = Inventory((["node"], {}))
    state = State(inventory, Config())
    host = inventory.get_host("node")
    answers = iter(["6.1.0-50-amd64", "6.12.95+deb12-amd64"])
    calls = []

    def get_fact(fact, **kwargs):
        calls.append((fact, kwargs))
        return next(answers) if fact is RunningKernel else {"mode": "644", "sha256": "0" * 64,
                                                                "mtime": 1}  # fmt: skip

    host.get_fact = get_fact

    def run(op_hash, commands):
        """Add an operation and complete it as pyinfra's run_host_op does (counted in the
        host's results, then marked complete)."""
        meta = OperationMeta(op_hash, bool(commands))
        state.ops[host][op_hash] = StateOperationHostData(lambda: iter(()), {}, meta)
        state.get_results_for_host(host).ops += 1
        meta.set_complete(True, commands, CommandOutput([]))

    with ctx_state.use(state), ctx_host.use(host):
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert calls == [(KernelVersion, {})]  # the second read was served from the first
        read_fact(FileDigest, path="/a")
        read_fact(FileDigest, path="/b")  # other arguments: another read
        read_fact(FileDigest, path="/a")
        assert [c[1] for c in calls[1:]] == [{"path": "/a"}, {"path": "/b"}]

        # An operation that changed the host (say, a reboot) makes the value stale.
        run("hash", [StringCommand("reboot")])
        assert read_fact(RunningKernel) == "6.12.95+deb12-amd64"
        assert len(calls) == 4

        # One that ran without changing anything doesn't.
        run("quiet", [])
        assert read_fact(RunningKernel) == "6.12.95+deb12-amd64" and len(calls) == 4

        remember_fact(RunningKernel, "7.0.0-1-amd64")  # read as part of a larger read
        assert read_fact(RunningKernel) == "7.0.0-1-amd64" and len(calls) == 4


def counted_host():
    """(state, host, an OperationMeta class noting each is_complete call, the calls noted)."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.operation import OperationMeta

    walked = []

    class CountedMeta(OperationMeta):
        def is_complete(self):
            walked.append(self._hash)
            return super().is_complete()

    inventory = Inventory((["node"], {}))
    return State(inventory, Config()), inventory.get_host("node"), CountedMeta, walked


def test_reads_while_planning_do_not_walk_every_planned_operation():
    """Each read used to count the host's changes over all its operations so far: planning
    a host was quadratic in its operations. Now they are walked again only after pyinfra
    completed one."""
    from pyinfra.api.state import StateOperationHostData
    from pyinfra.context import ctx_host, ctx_state

    state, host, CountedMeta, walked = counted_host()
    host.get_fact = lambda fact, **kwargs: "6.1.0-50-amd64"
    with ctx_state.use(state), ctx_host.use(host):
        for number in range(200):  # planned, not run: a read after each
            meta = CountedMeta(f"op{number}", False)
            state.ops[host][f"op{number}"] = StateOperationHostData(lambda: iter(()), {}, meta)
            assert read_fact(RunningKernel) == "6.1.0-50-amd64"
    assert walked == ["op0"]  # counted once, at the first read; nothing completed since


def test_changes_are_counted_whatever_order_operations_complete_in():
    """Operations completed out of their planned order, and one planned after a count: each
    change is counted once, and a read after it is stale; a completed operation is not walked
    again."""
    from pyinfra.api import StringCommand
    from pyinfra.api.state import StateOperationHostData
    from pyinfra.connectors.util import CommandOutput
    from pyinfra.context import ctx_host, ctx_state

    state, host, CountedMeta, walked = counted_host()
    reads = iter(range(100))
    host.get_fact = lambda fact, **kwargs: next(reads)
    metas = {}

    def plan(op_hash):
        metas[op_hash] = CountedMeta(op_hash, None)
        state.ops[host][op_hash] = StateOperationHostData(lambda: iter(()), {}, metas[op_hash])

    def complete(op_hash, changed):
        state.get_results_for_host(host).ops += 1
        metas[op_hash].set_complete(
            True, [StringCommand("x")] if changed else [], CommandOutput([])
        )

    with ctx_state.use(state), ctx_host.use(host):
        for op_hash in ("a", "b", "c"):
            plan(op_hash)
        assert read_fact(RunningKernel) == 0
        complete("c", changed=True)
        assert read_fact(RunningKernel) == 1  # c changed the host
        walked.clear()
        complete("a", changed=False)
        assert read_fact(RunningKernel) == 1  # a didn't
        assert set(walked) == {"a", "b"}  # c, complete before, not walked again
        plan("d")  # planned after the count: all walked again
        complete("d", changed=True)
        assert read_fact(RunningKernel) == 2
        complete("b", changed=False)
        assert read_fact(RunningKernel) == 2
