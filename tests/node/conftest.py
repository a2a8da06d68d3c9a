"""Run the node checks against real hosts, named directly or taken from a pyinfra inventory.

    pytest tests/node --inventory inventories/lab.py            # every host, with its data
    pytest tests/node --inventory inventories/lab.py --limit gpu01
    pytest tests/node --hosts=paramiko://root@gpu01 --rocm-version 6.4.3 --expected-gfx gfx1100

With --inventory, each host's expectations (rocm_version, expected_gfx, users, venv) come
from the same data the deploy used, read by pyinfra's own inventory loader (group_data
included), so the checks can't disagree with the deploy about what was asked for.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest

from rocm_fleet.config import Config, load_config

NODE_DATA: dict[str, dict] = {}


def pytest_addoption(parser):
    group = parser.getgroup("rocm-fleet")
    group.addoption("--inventory", help="pyinfra inventory file to take hosts and data from")
    group.addoption("--limit", help="comma-separated inventory host names to check")
    group.addoption("--rocm-version", help="with --hosts: the ROCm release expected")
    group.addoption("--expected-gfx", help="with --hosts: the gfx target expected")


def _spec(name: str, data: dict) -> str:
    user = data.get("ssh_user") or "root"
    hostname = data.get("ssh_hostname") or name
    port = data.get("ssh_port") or 22
    query = {}
    if data.get("ssh_key"):
        query["ssh_identity_file"] = os.path.expanduser(data["ssh_key"])
    spec = f"paramiko://{user}@{hostname}:{port}"
    return spec + ("?" + urllib.parse.urlencode(query) if query else "")


def pytest_configure(config):
    inventory = config.getoption("inventory", None)
    if not inventory:
        return
    from pyinfra.api import State
    from pyinfra.context import ctx_state
    from pyinfra_cli.inventory import make_inventory

    limit = set(filter(None, (config.getoption("limit") or "").split(",")))
    with ctx_state.use(State()):  # the loader runs group_data files in a pyinfra context
        hosts = list(make_inventory(inventory, cwd=os.getcwd()))
    specs = []
    for host in hosts:
        if limit and host.name not in limit:
            continue
        data = host.data.dict()
        NODE_DATA[data.get("ssh_hostname") or host.name] = {"name": host.name, **data}
        specs.append(_spec(host.name, data))
    config.option.hosts = ",".join(specs)


@pytest.fixture(scope="module")
def node(host, request) -> Config:
    """The validated inventory data for the host under test."""
    data = NODE_DATA.get(host.backend.get_hostname())
    if data is None:
        data = {}
        if request.config.getoption("rocm_version"):
            data["rocm_version"] = request.config.getoption("rocm_version")
        if request.config.getoption("expected_gfx"):
            data["expected_gfx"] = request.config.getoption("expected_gfx")
        if "rocm_version" not in data:
            pytest.skip("no inventory data: pass --inventory, or --rocm-version with --hosts")
    return load_config(data, host.backend.get_hostname())
