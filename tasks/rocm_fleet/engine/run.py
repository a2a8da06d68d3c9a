"""The run as pyinfra's ``State`` holds it (planning or executing, the deploy call's arguments,
``-v``, operation hashes, callbacks), read through ``version.internal``."""

from collections.abc import Callable
from typing import Any, TypeVar

from pyinfra import host
from pyinfra.api.state import BaseStateCallback

from rocm_fleet.engine.version import internal


def executing() -> bool:
    """Whether the run is executing now; False while planning (and always in ``--dry``)."""
    return bool(internal(host.state, "is_executing"))


def deploy_arguments(target: Any = None) -> dict[str, Any]:
    """The global arguments the ``@deploy`` call planned on ``target`` (default: the current host)
    was given, e.g. ``{"_sudo": True}``; {} outside a deploy."""
    return dict(internal(host if target is None else target, "current_deploy_kwargs") or {})


def sudo_asked(target: Any = None) -> bool:
    """Whether rocm-fleet's commands on ``target`` (default: the current host) run through sudo:
    ``_sudo`` on the deploy call, else in the host's data."""
    current = host if target is None else target
    return bool(deploy_arguments(current).get("_sudo", current.data.get("_sudo", False)))


def verbose() -> bool:
    """Whether pyinfra prints the facts it loads (``-v``)."""
    return bool(internal(host.state, "print_fact_info"))


def operation_hash(meta: Any) -> str:
    """pyinfra's hash of the operation whose call returned ``meta``."""
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
    """The ``kind`` callback handler of ``state``, added on first ask (one per run)."""
    handlers = internal(state, "callback_handlers")
    found = next((h for h in handlers if isinstance(h, kind)), None)
    if found is None:
        found = kind()
        state.add_callback_handler(found)
    return found


def after_operation(meta: Any, step: Callable[[], None]) -> None:
    """Call ``step()`` once, after operation ``meta`` has ended on every host (real runs only)."""
    steps = state_callback(host.state, _AfterOperations).steps.setdefault(operation_hash(meta), [])
    if step not in steps:
        steps.append(step)
