"""Where an inventory key was set (engine/origin.py), and an error raised from that line: what
pyinfra's CLI prints as the error's place ("pyinfra error in FILE line N")."""

from __future__ import annotations

import sys
from inspect import getframeinfo
from traceback import walk_tb

import pytest
from pyinfra.api import Config, Inventory, State
from pyinfra.api.util import PYINFRA_INSTALL_DIR

from rocm_fleet.deploy.node import InventoryError, host_config
from rocm_fleet.engine.origin import origin, raise_at


def place(error: BaseException):
    """pyinfra_cli.exceptions.get_frame_line_from_tb, which the test process may not import
    (gevent): the innermost frame outside pyinfra."""
    for frame, _ in reversed(list(walk_tb(error.__traceback__))):
        info = getframeinfo(frame)
        if not info.filename.startswith(PYINFRA_INSTALL_DIR):
            return info.filename, info.lineno
    return None


@pytest.fixture
def fleet(tmp_path, monkeypatch):
    """inventories/lab.py with two groups, group_data/radeon.py, and --data, as the CLI
    builds them: the inventory file on the command line, every host in its stem's group."""
    (tmp_path / "inventories").mkdir()
    lab = tmp_path / "inventories" / "lab.py"
    lab.write_text(
        'radeon = [\n    ("ws1", {"rocm_users": "alice"}),\n]\ninstinct = [("mi1", {})]\n'
    )
    (tmp_path / "group_data").mkdir()
    (tmp_path / "group_data" / "radeon.py").write_text(
        '# Radeon workstations\nexpected_gfx = "gfx1100"\nrocm_version = "7.14"\n'
    )
    inventory = Inventory(
        (["ws1", "mi1"], {"rocm_reboot": "never"}),
        override_data={"torch_version": 2.5},
        radeon=(["ws1"], {"rocm_version": "7.14", "expected_gfx": "gfx1100"}),
        instinct=(["mi1"], {"rocm_version": "6.4.3"}),
        lab=(["ws1", "mi1"], {}),
    )
    inventory.get_host_data("ws1")["rocm_users"] = "alice"
    state = State(inventory, Config())
    state.cwd = str(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["pyinfra", "inventories/lab.py", "deploy.py"])
    return inventory, lab


def test_each_layer_of_host_data_is_named(fleet):
    inventory, _ = fleet
    ws1, mi1 = inventory.get_host("ws1"), inventory.get_host("mi1")
    assert origin(ws1, "torch_version") == "--data"
    assert origin(ws1, "rocm_users") == "inventories/lab.py"
    assert origin(ws1, "rocm_version") == "group_data/radeon.py"
    # a group of the inventory file itself, with no group_data file: its name
    assert origin(mi1, "rocm_version") == "the inventory's group 'instinct'"
    assert origin(mi1, "rocm_reboot") == "the inventory's all group"
    assert origin(mi1, "rocm_driver") is None


def test_an_error_is_raised_from_the_line_that_set_the_key(fleet):
    inventory, _ = fleet
    ws1 = inventory.get_host("ws1")
    with pytest.raises(InventoryError) as raised:
        raise_at(InventoryError("bad", "rocm_version"), ws1, "rocm_version")
    assert place(raised.value) == ("group_data/radeon.py", 3)
    with pytest.raises(InventoryError) as raised:
        raise_at(InventoryError("bad", "rocm_users"), ws1, "rocm_users")
    assert place(raised.value) == ("inventories/lab.py", 2)


def test_bad_data_names_its_file_in_the_message_and_as_the_place(fleet):
    inventory, _ = fleet
    ws1 = inventory.get_host("ws1")
    inventory.get_override_data().clear()
    del inventory.get_host_data("ws1")["rocm_users"]
    with pytest.raises(InventoryError) as raised:
        host_config(ws1)
    message = str(raised.value)
    assert message.startswith(
        "ws1: inventory key 'rocm_version' has value '7.14' (set in group_data/radeon.py); "
        "did you mean '7.14.1'"
    )
    assert "\n" not in message
    assert place(raised.value) == ("group_data/radeon.py", 3)
    assert "rocm_fleet" not in place(raised.value)[0]


def test_a_missing_required_key_points_at_the_hosts_line(fleet):
    inventory, _ = fleet
    mi1 = inventory.get_host("mi1")
    inventory.get_group_data("instinct").pop("rocm_version")
    with pytest.raises(InventoryError) as raised:
        host_config(mi1)
    assert str(raised.value).startswith("mi1: inventory key 'rocm_version' is required")
    assert place(raised.value) == ("inventories/lab.py", 4)


def test_a_group_data_file_is_named_only_when_it_sets_the_key(fleet):
    """group_data/radeon.py exists but doesn't set rocm_reboot; the inventory file's group
    does: that file and line are named, not the group_data file."""
    inventory, lab = fleet
    lab.write_text(
        'radeon = (\n    [("ws1", {"rocm_users": "alice"})],\n    {"rocm_reboot": "soon"},\n)\n'
        'instinct = [("mi1", {})]\n'
    )
    inventory.get_group_data("radeon")["rocm_reboot"] = "soon"
    ws1 = inventory.get_host("ws1")
    assert origin(ws1, "rocm_reboot") == "inventories/lab.py"
    assert origin(ws1, "expected_gfx") == "group_data/radeon.py"
    with pytest.raises(InventoryError) as raised:
        raise_at(InventoryError("bad", "rocm_reboot"), ws1, "rocm_reboot")
    assert place(raised.value) == ("inventories/lab.py", 3)


def test_the_last_assignment_in_the_last_group_data_file_is_the_place(fleet, tmp_path):
    """pyinfra reads group_data of the working directory, then of the inventory's
    directory, each updating the last; in one file the last assignment is the value."""
    inventory, _ = fleet
    (tmp_path / "inventories" / "group_data").mkdir()
    (tmp_path / "inventories" / "group_data" / "radeon.py").write_text(
        'rocm_version = "7.2.1"\n# a second thought\nrocm_version = "7.14"\n'
    )
    ws1 = inventory.get_host("ws1")
    assert origin(ws1, "rocm_version") == "inventories/group_data/radeon.py"
    with pytest.raises(InventoryError) as raised:
        raise_at(InventoryError("bad", "rocm_version"), ws1, "rocm_version")
    assert place(raised.value) == ("inventories/group_data/radeon.py", 3)


def test_a_key_given_with_data_is_placed_on_data_not_in_rocm_fleet(fleet):
    inventory, _ = fleet
    ws1 = inventory.get_host("ws1")
    inventory.get_override_data()["rocm_users"] = "[alice]"
    with pytest.raises(InventoryError) as raised:
        host_config(ws1)
    message = str(raised.value)
    assert "'rocm_users' has value '[alice]' (set in --data)" in message
    assert "e.g. ['alice']; on the command line: --data 'rocm_users=[\"alice\"]'" in message
    assert place(raised.value) == ("--data", 1)


def test_every_bad_key_names_its_own_file(fleet):
    inventory, _ = fleet
    ws1 = inventory.get_host("ws1")
    inventory.get_override_data().clear()
    inventory.get_group_data("radeon")["expected_gfx"] = "rx7900"
    with pytest.raises(InventoryError) as raised:
        host_config(ws1)
    lines = str(raised.value).splitlines()
    assert [line.split(" (set in ")[1].split(")")[0] for line in lines] == [
        "inventories/lab.py",  # rocm_users, the host's own entry
        "group_data/radeon.py",  # expected_gfx
    ]
    assert place(raised.value) == ("inventories/lab.py", 2)


def test_a_run_stopped_by_bad_data_says_every_hosts_at_once(fleet):
    inventory, _ = fleet
    inventory.get_override_data().clear()
    inventory.get_group_data("instinct")["rocm_reboot_parallel"] = 0
    with pytest.raises(InventoryError) as raised:
        host_config(inventory.get_host("ws1"), every_host=True)
    lines = str(raised.value).splitlines()
    assert [line.split(":")[0] for line in lines] == ["ws1", "mi1"]
    assert lines[1] == (
        "mi1: inventory key 'rocm_reboot_parallel' has value 0 (set in the inventory's group "
        "'instinct'); expected a whole number >= 1"
    )
    assert place(raised.value) == ("inventories/lab.py", 2)  # ws1's first key
    with pytest.raises(InventoryError) as raised:
        host_config(inventory.get_host("ws1"))  # the audit's row: this host's alone
    assert [line.split(":")[0] for line in str(raised.value).splitlines()] == ["ws1"]
