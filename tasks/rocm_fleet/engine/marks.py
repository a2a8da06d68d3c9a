"""A mark on a host for as long as a run changes it, outside the plan (no change reported); a
failing ``start`` fails the host at its first operation, its stderr the reason."""

from dataclasses import replace
from typing import Any

from pyinfra.api import QuoteString, StringCommand
from pyinfra.api.arguments import CONNECTOR_ARGUMENT_KEYS
from pyinfra.api.state import BaseStateCallback

from rocm_fleet.engine.run import state_callback


class _Marks(BaseStateCallback):
    # By host name: the planned host is pyinfra's context proxy, another host later.
    def __init__(self) -> None:
        self.commands: dict[str, tuple[StringCommand, StringCommand]] = {}  # start, end
        self.started: set[str] = set()
        self.marked: dict[str, tuple[Any, dict[str, Any]]] = {}  # the host, its connection

    def operation_host_start(self, state, host, op_hash) -> None:  # type: ignore[override]
        name = host.name
        if name not in self.commands or name in self.started or op_hash not in state.ops[host]:
            return
        self.started.add(name)
        if state.should_check_for_changes() and not state.get_meta_for_host(host).ops_change:
            return
        data = state.get_op_data_for_host(host, op_hash)
        arguments = {k: data.global_arguments[k] for k in CONNECTOR_ARGUMENT_KEYS
                     if k in data.global_arguments}  # fmt: skip
        start, _ = self.commands[name]
        marked, output = host.run_shell_command(start, **arguments)
        if marked:
            self.marked[name] = (host, arguments)
            return
        reason = output.stderr.strip() or f"could not mark {host.name} ({start})"
        failing = {**data.global_arguments, "_ignore_errors": False,
                   "_continue_on_error": False, "_retries": 0}  # fmt: skip
        fail = StringCommand("echo", QuoteString(reason), ">&2", "&&", "exit", "1")
        state.set_op_data_for_host(
            host,
            op_hash,
            replace(data, command_generator=lambda: iter([fail]), global_arguments=failing),
        )

    def operation_end(self, state, op_hash) -> None:  # type: ignore[override]
        order = state.get_op_order()
        if not order or op_hash != order[-1]:
            return
        marked, self.marked = self.marked, {}
        for name, (host, arguments) in marked.items():
            host.run_shell_command(self.commands[name][1], **arguments)


def mark_while_changing(current: Any, start: StringCommand, end: StringCommand) -> None:
    """Run ``start`` on ``current`` (a Host being planned) before its first operation when the run
    changes it, and ``end`` after the run's last operation."""
    marks = state_callback(current.state, _Marks)
    marks.commands[current.name] = (start, end)
