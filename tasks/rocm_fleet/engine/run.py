"""The run as pyinfra's ``State`` holds it, for the operations and deploys that ask.

Whether the run is planning or executing, what the deploy call being planned was given
(``rocm_node(_sudo=True)``), whether pyinfra was asked for the facts it loaded (``-v``), an
operation's identity, and a step once an operation has ended on every host: pyinfra 3.10
keeps each on its ``State``, ``Host`` or ``OperationMeta`` with no public call, so they are
read here, through ``version.internal`` (one error naming what moved, on a pyinfra without it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pyinfra import host
from pyinfra.api.state import BaseStateCallback

from rocm_fleet.engine.version import internal


def executing() -> bool:
    """Whether the run is executing its operations now; False while it plans them (``--dry``
    never executes), so an operation can ask the host only when it would change it."""
    return bool(internal(host.state, "is_executing"))


def deploy_arguments(target: Any = None) -> dict[str, Any]:
    """The global arguments (``_sudo``, ``_env``, ...) the ``@deploy`` call being planned on
    ``target`` (a pyinfra ``Host``; default: the current host) was given, e.g.
    ``rocm_node(_sudo=True)``; {} outside a deploy."""
    return dict(internal(host if target is None else target, "current_deploy_kwargs") or {})


def sudo_asked(target: Any = None) -> bool:
    """Whether rocm-fleet's commands on ``target`` (a pyinfra ``Host``; default: the current
    host) run through sudo: ``_sudo`` on the deploy call (``rocm_node(_sudo=True)``) or in
    the host's data. The one rule for the deploy and for what runs outside it (``rocm-fleet
    roll``'s Slurm commands, where only the data can ask), as the node checks read it too."""
    current = host if target is None else target
    return bool(deploy_arguments(current).get("_sudo", current.data.get("_sudo", False)))


def verbose() -> bool:
    """Whether pyinfra was asked to print the facts it loads (``pyinfra -v``): a message that
    summarised a list may print it in full."""
    return bool(internal(host.state, "print_fact_info"))


def operation_hash(meta: Any) -> str:
    """The hash pyinfra's state (and its callbacks) name an operation by, from the
    ``OperationMeta`` the operation call returned."""
    return internal(meta, "_hash")


class _AfterOperations(BaseStateCallback):
    """Steps to take once an operation has ended on every host, by its hash."""

    def __init__(self) -> None:
        self.steps: dict[str, list[Callable[[], None]]] = {}

    def operation_end(self, state, op_hash) -> None:  # type: ignore[override]
        for step in self.steps.get(op_hash, ()):
            step()


Handler = TypeVar("Handler", bound=BaseStateCallback)


def state_callback(state: Any, kind: type[Handler]) -> Handler:
    """The callback handler of ``kind`` (a ``BaseStateCallback``) of pyinfra's ``state``,
    added on the first ask: one per run, however many hosts ask."""
    handlers = internal(state, "callback_handlers")
    found = next((h for h in handlers if isinstance(h, kind)), None)
    if found is None:
        found = kind()
        state.add_callback_handler(found)
    return found


def after_operation(meta: Any, step: Callable[[], None]) -> None:
    """Call ``step()`` once the operation ``meta`` (an operation call's return, on the
    current host) has ended on every host of the run: once, however many hosts ask for the
    same step (a real run only: planning and ``--dry`` end no operation)."""
    steps = state_callback(host.state, _AfterOperations).steps.setdefault(operation_hash(meta), [])
    if step not in steps:
        steps.append(step)
