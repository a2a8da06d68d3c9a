"""engine.marks: a command before a host's first changing operation and one after the run's
last, outside the plan, run for real with pyinfra's API on @local (in a temp directory)."""

from __future__ import annotations

import shlex

import pyinfra
import pytest
from pyinfra.api import Config, Inventory, State, StringCommand
from pyinfra.api.connect import connect_all
from pyinfra.api.operation import add_op
from pyinfra.api.operations import run_ops
from pyinfra.context import ctx_host
from pyinfra.operations import server

from rocm_fleet.engine.marks import mark_while_changing


def run(tmp_path, start: str, changes: bool = True) -> tuple[State, list[str]]:
    log = tmp_path / "log"
    inventory = Inventory((["@local"], {}))
    state = State(inventory, Config())
    connect_all(state)
    host = inventory.get_host("@local")
    with ctx_host.use(host):  # the deploy hands over pyinfra's context proxy of its host
        mark_while_changing(pyinfra.host, StringCommand(start), StringCommand(f"echo end >> {log}"))
    if changes:
        add_op(state, server.shell, commands=[f"echo first >> {log}"])
        add_op(state, server.shell, commands=[f"echo second >> {log}"])
    else:  # an operation with nothing to do
        add_op(state, server.shell, commands=[])
    run_ops(state)
    return state, log.read_text().split() if log.exists() else []


def test_the_mark_is_made_before_the_first_operation_and_taken_after_the_last(tmp_path):
    state, log = run(tmp_path, f"echo start >> {tmp_path / 'log'}")
    assert log == ["start", "first", "second", "end"]
    assert not state.failed_hosts


def test_a_mark_that_fails_fails_the_host_before_anything_ran(tmp_path, caplog):
    with pytest.raises(Exception, match="No hosts remaining"):
        run(tmp_path, "echo " + shlex.quote("a pull is running") + " >&2; exit 1")
    assert not (tmp_path / "log").exists()
    assert "a pull is running" in caplog.text


def test_a_run_that_changes_nothing_marks_nothing(tmp_path):
    _, log = run(tmp_path, f"echo start >> {tmp_path / 'log'}", changes=False)
    assert log == []
