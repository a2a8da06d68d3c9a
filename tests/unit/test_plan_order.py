"""engine.plan.planned_operations: each host's operations in pyinfra's plan order."""

from __future__ import annotations

import runpy
from pathlib import Path

from pyinfra.api import Config, Inventory, State

from rocm_fleet.engine.plan import plan_deploy, plan_in_parallel, planned_operations
from unit.surveys import SurveyHost, converged_survey

ROOT = Path(__file__).resolve().parents[2]
DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip


def test_each_hosts_operations_come_in_pyinfras_order_for_all_hosts():
    # Hosts whose plans branch (the DKMS driver's operations on two of them, an absent
    # PyTorch on one), planned in one state as the audit plans them: each host's operations,
    # read from its own order, are pyinfra's order of all the hosts' operations kept to it.
    dkms = {**DATA, "rocm_driver": "dkms"}
    hosts = {
        "inbox": (DATA, converged_survey(DATA, "ubuntu-24.04")),
        "dkms1": (dkms, converged_survey(dkms, "debian-12")),
        "notorch": ({**DATA, "torch": "none"}, converged_survey(DATA, "ubuntu-24.04")),
        "dkms2": (dkms, converged_survey(dkms, "debian-12")),
    }
    inventory = Inventory(([(name, dict(data)) for name, (data, _) in hosts.items()], {}))
    state = State(inventory, Config())
    deploy_file = str(ROOT / "deploy.py")
    state.current_deploy_filename = deploy_file
    state.current_op_file_number = 0
    for host in inventory:
        host.connected = True
        host.get_fact = SurveyHost(hosts[host.name][1])
    results = plan_in_parallel(
        state,
        list(inventory),
        lambda host: plan_deploy(state, host, lambda: runpy.run_path(deploy_file)),
    )
    assert not [r for r in results if isinstance(r, BaseException)], results
    everyone = state.get_op_order()
    lengths = set()
    for host in inventory:
        mine = [op.names for op in planned_operations(state, host)]
        theirs = [
            sorted(state.op_meta[op_hash].names)
            for op_hash in everyone
            if op_hash in state.ops[host]
        ]
        assert mine == theirs, host.name
        lengths.add(len(mine))
    assert len(lengths) > 1  # the plans did branch
