"""Run the node checks against real hosts, named directly or taken from a pyinfra inventory.

    pytest tests/node --inventory inventories/lab.py            # every host, with its data
    pytest tests/node --inventory inventories/lab.py --limit gpu01
    pytest tests/node --hosts=paramiko://root@gpu01 --rocm-version 6.4.3 --expected-gfx gfx1100
    pytest tests/node --hosts=local:// --rocm-version 6.4.3    # on the node itself

With --inventory, each host's expectations (rocm_version, expected_gfx, users, venv) come
from the same data the deploy used, read by pyinfra's own inventory loader (group_data
included, the same loader and --limit as ``rocm-fleet audit``), so the checks can't
disagree with the deploy about what was asked for. SSH hosts are reached with their
``ssh_*`` data, ``@local`` runs on this machine, ``_sudo`` runs the checks through sudo.

Every check first needs its host to answer: an unreachable host fails each of its checks
with one line saying so (no check passes without having connected).
"""

from __future__ import annotations

import os
import urllib.parse

import pytest

from rocm_fleet.model.config import Config, ConfigError, load_config
from rocm_fleet.model.fleet import Fleet

# testinfra host name -> that host's inventory data (with "name": its inventory name)
NODE_DATA: dict[str, dict] = {}
# With --inventory: the inventory's fleet model, the one the deploy and the audit read.
FLEETS: list[Fleet] = []
# testinfra host name -> why it could not be reached (asked once per host)
UNREACHABLE: dict[str, str] = {}
NO_EXPECTATIONS = (
    "--hosts needs --rocm-version (and --expected-gfx) to know what the node should have; "
    "or take hosts and their data from the deploy's inventory with --inventory"
)


def pytest_addoption(parser):
    group = parser.getgroup("rocm-fleet")
    group.addoption("--inventory", help="pyinfra inventory file to take hosts and data from")
    group.addoption(
        "--limit",
        action="append",
        help="with --inventory: host names, groups or globs to check (repeatable, commas split)",
    )
    group.addoption("--rocm-version", help="with --hosts: the ROCm release expected")
    group.addoption("--expected-gfx", help="with --hosts: the gfx target expected")


def _spec(name: str, data: dict) -> str:
    """The testinfra host spec for an inventory host."""
    query = {}
    if data.get("_sudo"):
        query["sudo"] = "true"
        if data.get("_sudo_user"):
            query["sudo_user"] = data["_sudo_user"]
    if name == "@local":
        spec = "local://"
    elif name.startswith("@docker/"):
        spec = f"docker://{name.removeprefix('@docker/')}"
    elif name.startswith("@"):
        raise pytest.UsageError(
            f"{name}: tests/node reaches hosts over SSH, @local and @docker/ only; "
            "pass this one with --hosts"
        )
    else:
        user = data.get("ssh_user") or "root"
        hostname = data.get("ssh_hostname") or name
        port = data.get("ssh_port") or 22
        if data.get("ssh_key"):
            query["ssh_identity_file"] = os.path.expanduser(data["ssh_key"])
        spec = f"paramiko://{user}@{hostname}:{port}"
    return spec + ("?" + urllib.parse.urlencode(query) if query else "")


def pytest_configure(config):
    inventory = config.getoption("inventory", None)
    if not inventory:
        return
    from rocm_fleet.cli.inventory import UsageError, load_inventory

    limits = [p for item in config.getoption("limit") or [] for p in item.split(",") if p]
    try:
        _, hosts = load_inventory(inventory, limits, check_for_changes=False)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    from rocm_fleet.engine.fleet import fleet_of

    FLEETS[:] = [fleet_of(hosts[0].inventory)]
    specs = []
    for host in hosts:
        data = host.data.dict()
        spec = _spec(host.name, data)
        key = "local" if spec.startswith("local://") else data.get("ssh_hostname") or host.name
        NODE_DATA[key.removeprefix("@docker/")] = {"name": host.name, **data}
        specs.append(spec)
    config.option.hosts = ",".join(specs)


def pytest_collection_modifyitems(config, items):
    """Hosts named with --hosts and no expectations: every check skips, with one reason."""
    if config.getoption("inventory", None) or config.getoption("rocm_version", None):
        return
    skip = pytest.mark.skip(reason=NO_EXPECTATIONS)
    for item in items:
        item.add_marker(skip)


@pytest.fixture(autouse=True)
def connected(host):
    """Every check needs its host to answer first; an unreachable one fails each check
    with one line (asked once per host), never a connection library's traceback."""
    name = host.backend.get_hostname()
    if name not in UNREACHABLE:
        try:
            result = host.run("true")
            UNREACHABLE[name] = "" if result.rc == 0 else f"`true` exited {result.rc}"
        except Exception as exc:  # each backend (paramiko, ssh, docker) raises its own
            UNREACHABLE[name] = f"{type(exc).__name__}: {exc}".strip()
    if UNREACHABLE[name]:
        pytest.fail(f"{name}: could not run a command there: {UNREACHABLE[name]}", pytrace=False)


@pytest.fixture(scope="module")
def node(host, request) -> Config:
    """The validated inventory data for the host under test."""
    name = host.backend.get_hostname()
    data = NODE_DATA.get(name)
    try:
        if data is not None and FLEETS:
            return FLEETS[0].config(data["name"])
        data = {"rocm_version": request.config.getoption("rocm_version")}
        if request.config.getoption("expected_gfx"):
            data["expected_gfx"] = request.config.getoption("expected_gfx")
        return load_config(data, name)
    except ConfigError as exc:
        pytest.fail(str(exc), pytrace=False)
