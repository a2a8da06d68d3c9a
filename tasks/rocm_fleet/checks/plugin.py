"""The pytest plugin of the node checks: where the hosts and what each should have come from.

    pytest --pyargs rocm_fleet.checks --rocm-inventory inventories/fleet.py
    pytest --pyargs rocm_fleet.checks --rocm-inventory inventories/fleet.py --rocm-limit gpu01
    pytest --pyargs rocm_fleet.checks --hosts=paramiko://root@gpu01 --rocm-version 6.4.3 \\
        --expected-gfx gfx1100
    pytest --pyargs rocm_fleet.checks --hosts=local:// --rocm-version 6.4.3   # on the node

(``rocm-fleet check`` runs the same with shorter options.) With --rocm-inventory, each host's
expectations (rocm_version, expected_gfx, users, venv) come from the same data the deploy
used, read by pyinfra's own inventory loader (group_data included, the same loader and
--limit as ``rocm-fleet audit``), so the checks can't disagree with the deploy about what
was asked for. SSH hosts are reached with their ``ssh_*`` data, ``@local`` runs on this
machine, ``_sudo`` runs the checks through sudo.

The plugin is registered with pytest through the ``pytest11`` entry point (as testinfra's
own is), so ``--pyargs rocm_fleet.checks`` finds its options; its options are prefixed so
they can't clash with another plugin's, and it does nothing unless these checks are
collected. ``-p no:rocm_fleet_checks`` turns it off.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest

from rocm_fleet.model.fleet import Fleet

#: the module whose checks this plugin drives
CHECKS_MODULE = "rocm_fleet.checks.test_node"
# testinfra host name -> that host's inventory data (with "name": its inventory name)
NODE_DATA: dict[str, dict] = {}
# With --rocm-inventory: the inventory's fleet model, the one the deploy and the audit read.
FLEETS: list[Fleet] = []
NO_EXPECTATIONS = (
    "rocm_fleet.checks: nothing to compare the hosts against: give the deploy's inventory "
    "(--rocm-inventory FILE; `rocm-fleet check FILE`) or say what the hosts should have "
    "(--rocm-version X.Y.Z [--expected-gfx gfxNNNN])"
)


def pytest_addoption(parser):
    group = parser.getgroup("rocm-fleet", "rocm-fleet node checks (rocm_fleet.checks)")
    group.addoption(
        "--rocm-inventory",
        metavar="FILE",
        help="pyinfra inventory to take the hosts and what each should have from",
    )
    group.addoption(
        "--rocm-limit",
        action="append",
        metavar="PATTERN",
        help="with --rocm-inventory: host names, groups or globs to check (repeatable, "
        "commas split)",
    )
    group.addoption("--rocm-version", help="with --hosts: the ROCm release expected")
    group.addoption("--expected-gfx", help="with --hosts: the gfx target(s) expected")


def spec(name: str, data: dict) -> str:
    """The testinfra host spec for an inventory host."""
    query = {}
    if data.get("_sudo"):
        query["sudo"] = "true"
        if data.get("_sudo_user"):
            query["sudo_user"] = data["_sudo_user"]
    if name == "@local":
        target = "local://"
    elif name.startswith("@docker/"):
        target = f"docker://{name.removeprefix('@docker/')}"
    elif name.startswith("@"):
        raise pytest.UsageError(
            f"{name}: the node checks reach hosts over SSH, @local and @docker/ only; "
            "pass this one with --hosts"
        )
    else:
        user = data.get("ssh_user") or "root"
        hostname = data.get("ssh_hostname") or name
        port = data.get("ssh_port") or 22
        if data.get("ssh_key"):
            query["ssh_identity_file"] = os.path.expanduser(data["ssh_key"])
        target = f"paramiko://{user}@{hostname}:{port}"
    return target + ("?" + urllib.parse.urlencode(query) if query else "")


def pytest_configure(config):
    inventory = config.getoption("rocm_inventory", None)
    if not inventory:
        return
    from rocm_fleet.cli.inventory import UsageError, load_inventory

    limits = [p for item in config.getoption("rocm_limit") or [] for p in item.split(",") if p]
    try:
        _, hosts = load_inventory(inventory, limits, check_for_changes=False)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    from rocm_fleet.engine.fleet import fleet_of

    FLEETS[:] = [fleet_of(hosts[0].inventory)] if hosts else []
    specs = []
    for host in hosts:
        data = host.data.dict()
        target = spec(host.name, data)
        key = "local" if target.startswith("local://") else data.get("ssh_hostname") or host.name
        NODE_DATA[key.removeprefix("@docker/")] = {"name": host.name, **data}
        specs.append(target)
    config.option.hosts = ",".join(specs)


def _is_check(item) -> bool:
    function = getattr(item, "function", None)
    return getattr(function, "__module__", None) == CHECKS_MODULE


def pytest_collection_modifyitems(config, items):
    """Checks with nothing to compare against fail the run with one reason: a node never
    checked must not be green in CI (skipping would exit 0)."""
    if not any(_is_check(item) for item in items):
        return
    if config.getoption("rocm_inventory", None) or config.getoption("rocm_version", None):
        return
    raise pytest.UsageError(NO_EXPECTATIONS)
