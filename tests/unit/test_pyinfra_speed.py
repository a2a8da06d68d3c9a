"""rocm_fleet._pyinfra's operation order equals pyinfra's own, on real call stacks."""

from __future__ import annotations

import textwrap
from types import SimpleNamespace

import pyinfra
import pytest
from pyinfra.api import util

from rocm_fleet import _pyinfra


def orders(tmp_path, deploy_filename: str | None, is_cli: bool, monkeypatch):
    """Both functions' answers from the same frames: a "deploy file" calling a task module
    calling a nested helper, which asks for the order."""
    monkeypatch.setattr(pyinfra, "is_cli", is_cli)
    deploy = tmp_path / "deploy.py"
    deploy.write_text(
        textwrap.dedent(
            """
            def task(ask):
                return helper(ask)

            def helper(ask):
                return ask()

            result = task(ASK)
            """
        )
    )
    state = SimpleNamespace(
        current_deploy_filename=deploy_filename and str(deploy), current_op_file_number=3
    )

    def ask():
        return util.get_operation_order_from_stack(state), _pyinfra.get_operation_order_from_stack(
            state
        )

    namespace = {"ASK": ask}
    exec(compile(deploy.read_text(), str(deploy), "exec"), namespace)  # as pyinfra's exec_file
    return namespace["result"]


@pytest.mark.parametrize("is_cli", [True, False])
@pytest.mark.parametrize("deploy_file", [True, False])
def test_the_fast_order_is_pyinfras(tmp_path, monkeypatch, is_cli, deploy_file):
    theirs, ours = orders(tmp_path, "deploy" if deploy_file else None, is_cli, monkeypatch)
    assert ours == theirs and len(ours) >= 3  # ask, helper, task (and more outside)
    if deploy_file:
        assert (ours[0] if not is_cli else ours[1]) == 8  # the deploy file's `task(ASK)` line


def test_planning_rocm_fleet_uses_it():
    import importlib

    import rocm_fleet.node  # noqa: F401  (installs it)

    module = importlib.import_module("pyinfra.api.operation")
    assert module.get_operation_order_from_stack is _pyinfra.get_operation_order_from_stack
    arguments = importlib.import_module("pyinfra.api.arguments")
    assert arguments.all_global_arguments is _pyinfra.all_global_arguments


def test_the_global_arguments_are_pyinfras():
    theirs = _pyinfra._original_global_arguments()
    assert _pyinfra.all_global_arguments() == theirs and "_sudo" in dict(theirs)
    assert _pyinfra.all_global_arguments() is not _pyinfra.all_global_arguments()
