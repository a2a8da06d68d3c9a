"""rocm_fleet.engine.factcache: one read between two changes."""

from __future__ import annotations

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
        calls.append((fact.__name__, kwargs))
        return next(answers) if fact is RunningKernel else {"mode": "644", "sha256": "0" * 64,
                                                                "mtime": 1}  # fmt: skip

    host.get_fact = get_fact
    with ctx_state.use(state), ctx_host.use(host):
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert calls == [("KernelVersion", {})]  # the second read was served from the first
        read_fact(FileDigest, path="/a")
        read_fact(FileDigest, path="/b")  # other arguments: another read
        read_fact(FileDigest, path="/a")
        assert [c[1] for c in calls[1:]] == [{"path": "/a"}, {"path": "/b"}]

        # An operation that changed the host (say, a reboot) makes the value stale.
        meta = OperationMeta("hash", True)
        state.ops[host]["hash"] = StateOperationHostData(lambda: iter(()), {}, meta)
        meta.set_complete(True, [StringCommand("reboot")], CommandOutput([]))
        assert read_fact(RunningKernel) == "6.12.95+deb12-amd64"
        assert len(calls) == 4

        # One that ran without changing anything doesn't.
        quiet = OperationMeta("quiet", False)
        state.ops[host]["quiet"] = StateOperationHostData(lambda: iter(()), {}, quiet)
        quiet.set_complete(True, [], CommandOutput([]))
        assert read_fact(RunningKernel) == "6.12.95+deb12-amd64" and len(calls) == 4

        remember_fact(RunningKernel, "7.0.0-1-amd64")  # read as part of a larger read
        assert read_fact(RunningKernel) == "7.0.0-1-amd64" and len(calls) == 4
