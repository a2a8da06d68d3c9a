"""Loading an inventory as pyinfra's CLI does and running hosts in pyinfra's context, for
rocm-fleet's own commands (``engine/inventory.py``, ``engine/context.py``)."""

from __future__ import annotations

import json
import subprocess
import sys

from pyinfra import host as current_host
from pyinfra import state as current_state
from pyinfra.api import Config, Inventory, State

from rocm_fleet.engine.context import on_each_host


def test_each_host_runs_with_the_state_and_itself_current_and_its_own_outcome():
    inventory = Inventory((["ws1", "ws2", "ws3"], {}))
    state = State(inventory, Config())
    hosts = list(inventory)

    def each(host):
        if host.name == "ws2":
            raise RuntimeError("ws2 is down")
        return current_host.name, current_state == state

    results = on_each_host(state, hosts, each)
    assert results[0] == ("ws1", True) and results[2] == ("ws3", True)
    assert isinstance(results[1], RuntimeError) and str(results[1]) == "ws2 is down"


# Loading imports pyinfra's CLI, which monkey-patches the process for gevent: in a child.
# Nothing on its command line names the inventory (as under `pytest --inventory=...`), so
# only the loader's own record can tell where a key was set.
LOAD = """
import sys
sys.argv = ["rocm-fleet"]
from rocm_fleet.cli.inventory import load_inventory
from rocm_fleet.engine.inventory import loaded_from
from rocm_fleet.engine.origin import origin
_, hosts = load_inventory("inventories/fleet.py", [], check_for_changes=False)
ws1 = hosts[0]
print(loaded_from(ws1.inventory))
print(origin(ws1, "rocm_users"))
print(origin(ws1, "rocm_version"))
_, hosts = load_inventory("ws8,ws9", [], check_for_changes=False)
print(loaded_from(hosts[0].inventory), [h.name for h in hosts])
"""


def test_the_loader_keeps_the_file_so_a_key_is_traced_to_it(tmp_path):
    (tmp_path / "inventories/group_data").mkdir(parents=True)
    (tmp_path / "inventories/fleet.py").write_text(
        'radeon = [("ws1", {"rocm_users": ["alice"]})]\n'
    )
    (tmp_path / "inventories/group_data/radeon.py").write_text('rocm_version = "6.4.3"\n')
    result = subprocess.run(
        [sys.executable, "-c", LOAD],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "inventories/fleet.py",
        "inventories/fleet.py",
        "inventories/group_data/radeon.py",
        "None ['ws8', 'ws9']",
    ]


# pyinfra's CLI module monkey-patches the process for gevent on import: in a child.
LIMITS = """
import json, logging
from pyinfra.api import Inventory
from pyinfra_cli.cli import _get_inventory_pattern_matches
from rocm_fleet.engine.inventory import matching
logging.disable(logging.WARNING)  # pyinfra's own "No host matches found" for "nothing*"
inventory = Inventory((["ws1", "ws2", "mi300x", "gpus"], {}),
                      gpus=(["ws2", "ws1"], {}), big=(["mi300x"], {}))
for pattern in ("gpus", "big", "ws*", "*", "mi300x", "w?2", "nothing*", "[wm]*"):
    theirs = _get_inventory_pattern_matches(inventory, [pattern], "--limit")
    ours = matching(inventory, pattern)
    print(json.dumps([pattern, sorted(h.name for h in theirs), [h.name for h in ours]]))
"""


def test_a_limit_picks_the_hosts_pyinfras_cli_picks_in_the_inventorys_order():
    """``engine.inventory.matching`` against pyinfra's own rule, on the installed pyinfra (the
    newest 3.x under ``make pyinfra-next``): a group wins over a host of the same name, else
    a glob over the host names."""
    result = subprocess.run(
        [sys.executable, "-c", LIMITS], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    seen = {}
    for line in result.stdout.splitlines():
        pattern, theirs, ours = json.loads(line)
        assert sorted(ours) == theirs, pattern
        seen[pattern] = ours
    assert seen["gpus"] == ["ws1", "ws2"]  # the group, in the inventory's order
    assert seen["w?2"] == ["ws2"] and seen["nothing*"] == []
    assert seen["*"] == ["ws1", "ws2", "mi300x", "gpus"]
