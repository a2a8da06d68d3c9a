"""engine.host_plans.planned_operations: each host's operations in pyinfra's plan order."""

from __future__ import annotations

from rocm_fleet.engine.host_plans import planned_operations
from unit.surveys import converged_survey, plan_fleet

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip


def test_each_hosts_operations_come_in_pyinfras_order_for_all_hosts():
    # Hosts whose plans branch (the DKMS driver's operations on two of them, an absent
    # PyTorch on one), planned in one state as the audit plans them: each host's operations,
    # read from its own order, are pyinfra's order of all the hosts' operations kept to it.
    dkms = {**DATA, "rocm_driver": "dkms"}
    notorch = {**DATA, "pytorch_install": False}
    state = plan_fleet({
        "inbox": (DATA, converged_survey(DATA, "ubuntu-24.04")),
        "dkms1": (dkms, converged_survey(dkms, "debian-12")),
        "notorch": (notorch, converged_survey(notorch, "ubuntu-24.04")),
        "dkms2": (dkms, converged_survey(dkms, "debian-12")),
    })  # fmt: skip
    everyone = state.get_op_order()
    lengths = set()
    for host in state.inventory:
        mine = [op.names for op in planned_operations(state, host)]
        theirs = [
            sorted(state.op_meta[op_hash].names)
            for op_hash in everyone
            if op_hash in state.ops[host]
        ]
        assert mine == theirs, host.name
        lengths.add(len(mine))
    assert len(lengths) > 1  # the plans did branch
