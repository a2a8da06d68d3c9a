"""The public API a user's own project composes (README, "Using rocm-fleet from your own
project"): ``rocm_node()`` beside the project's own deploys, pyinfra's global arguments
through it, a per-concern deploy called alone with ``host_config(host)``, and a refused
host getting none of rocm-fleet's operations.

Each project deploy file is planned through pyinfra's API as ``--dry`` plans it, against a
survey of a freshly installed Ubuntu 24.04 host with an RX 7900 XTX (``unit.surveys``);
nothing runs anywhere.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

from pyinfra.api import Config, Inventory, State
from pyinfra.context import ctx_host, ctx_state

from rocm_fleet.facts.users import GroupMembership
from unit.surveys import SurveyHost, fresh_survey

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}

SITE = """
from pyinfra.operations import files, server

def before():
    server.shell(name="Site | drain the node", commands=["true"])

def after():
    files.line(name="Site | banner", path="/etc/motd", line="managed by the site")
"""


def plan_project(
    tmp_path: Path, deploy: str, data: dict, survey: dict, other: dict | None = None
) -> tuple[list, State]:
    """(op names in plan order with their global arguments, the state) for a project whose
    deploy.py is ``deploy`` (its site_ops.py beside it), planned for one host "node"; facts
    outside preflight's survey are answered from ``other`` (``SurveyHost.other``)."""
    (tmp_path / "site_ops.py").write_text(SITE)
    (tmp_path / "deploy.py").write_text(deploy)
    inventory = Inventory(([("node", dict(data))], {}))
    state = State(inventory, Config())
    node = inventory.get_host("node")
    node.connected = True
    state.activate_host(node)
    node.get_fact = SurveyHost(survey, other or {})
    sys.path.insert(0, str(tmp_path))  # as pyinfra puts the project's directory
    try:
        with ctx_state.use(state), ctx_host.use(node):
            runpy.run_path(str(tmp_path / "deploy.py"))
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("site_ops", None)
    ops = []
    for op_hash in state.get_op_order():
        if op_hash in state.ops[node]:
            name = next(iter(state.get_op_meta(op_hash).names))
            ops.append((name, state.get_op_data_for_host(node, op_hash).global_arguments))
    return ops, state


def fresh() -> dict:
    return fresh_survey("ubuntu-24.04")


def test_rocm_node_composes_between_a_projects_own_operations(tmp_path):
    ops, state = plan_project(
        tmp_path,
        "import site_ops\nfrom rocm_fleet.deploy import rocm_node\n\n"
        "site_ops.before()\nrocm_node()\nsite_ops.after()\n",
        DATA,
        fresh(),
    )
    names = [name for name, _ in ops]
    assert names[0] == "Site | drain the node" and names[-1] == "Site | banner", names
    ours = names[1:-1]
    assert ours and all(name.startswith("rocm-fleet | ") for name in ours), ours
    assert any(name.startswith("rocm-fleet | Verify | ") for name in ours)
    assert not state.failed_hosts


def test_global_arguments_given_to_rocm_node_reach_every_operation_inside(tmp_path):
    ops, _ = plan_project(
        tmp_path,
        "from rocm_fleet.deploy import rocm_node\n\nrocm_node(_sudo=True)\n",
        DATA,
        fresh(),
    )
    assert ops and all(arguments["_sudo"] is True for _, arguments in ops), [
        name for name, arguments in ops if not arguments["_sudo"]
    ]


def test_a_per_concern_deploy_alone_plans_only_its_concern(tmp_path):
    # No preflight ran: the deploy reads the group membership from the host itself.
    membership = {"groups": ["video", "render"], "users": {"alice": ["alice"]}}
    ops, _ = plan_project(
        tmp_path,
        "from pyinfra import host\n"
        "from rocm_fleet.deploy.groups import configure_groups\n"
        "from rocm_fleet.deploy.node import host_config\n\n"
        "configure_groups(host_config(host))\n",
        {**DATA, "rocm_users": ["alice"]},
        fresh(),
        {GroupMembership: membership},
    )
    names = [name for name, _ in ops]
    assert names and all(name.startswith("GPU groups | ") for name in names), names


def test_a_refused_host_gets_none_of_rocm_fleets_operations(tmp_path):
    ops, state = plan_project(
        tmp_path,
        "from rocm_fleet.deploy import rocm_node\n\nrocm_node()\n",
        DATA,
        fresh_survey("ubuntu-24.04", arch="arm64"),
    )
    assert [getattr(h, "name", None) for h in state.failed_hosts] == ["node"]
    names = [name for name, _ in ops]
    assert all(name.startswith("rocm-fleet | Preflight") for name in names), names
