"""Faster, equivalent versions of two pyinfra internals that planning calls per operation.

1. An operation's call-site order.

In CLI mode pyinfra identifies an operation by the line numbers of the stack that called
it (``pyinfra.api.util.get_operation_order_from_stack``, pyinfra 3.10). It walks the stack
with ``inspect.stack()`` and ``inspect.getframeinfo()``, which read every frame's source
file for context lines and search ``sys.modules`` for its module: about 3 ms for each
operation called, which was most of what planning a converged host cost on the controller
(``bench/fleet.py``; profiled with cProfile, ``inspect.getmodule`` first by own time). Only
each frame's file name and line number are used, and the frames carry both; this reads
them there. Same answer, same order (``tests/unit/test_pyinfra_speed.py`` compares the two
on real call stacks).

2. The global arguments' names and types (``pyinfra.api.arguments.all_global_arguments``),
which ``pop_global_arguments`` asks for at every operation call and which pyinfra computes
each time with ``typing.get_type_hints`` on a TypedDict that never changes; computed once.

3. The host's data as ``pop_global_arguments`` reads it. At every operation and deploy call
it looks up each of some thirty global arguments (``_sudo``, ``_env``, ...) in
``host.data``, and each lookup walks the host's data layers, calling a function for each
that rebuilds it (the groups' data is merged anew every time): about half of what planning
a converged host cost on the controller (py-spy, 16 hosts). Here the function gets a view
of the host whose data is read once per call, with ``HostData.dict()`` (pyinfra's own
first-layer-wins merge, the order its ``__getattr__`` walks) and the copy its
``__getattr__`` makes of each value. Same arguments, same found keys, same kwargs left
(``tests/unit/test_pyinfra_speed.py`` compares the two over every data layer).

All three are worth proposing upstream; until then ``rocm_fleet.deploy.node`` installs them for runs
that plan rocm-fleet's deploy.
"""

from __future__ import annotations

import functools
import importlib
import sys
from copy import copy
from typing import Any

import pyinfra

# The modules themselves: `pyinfra.api.operation` as an attribute is the decorator of that
# name, which the package re-exports over its module.
_operation = importlib.import_module("pyinfra.api.operation")
_util = importlib.import_module("pyinfra.api.util")
_arguments = importlib.import_module("pyinfra.api.arguments")
_deploy = importlib.import_module("pyinfra.api.deploy")
_facts = importlib.import_module("pyinfra.api.facts")
_original_global_arguments = _arguments.all_global_arguments
_original_pop_global_arguments = _arguments.pop_global_arguments


@functools.cache
def _global_arguments() -> tuple[tuple[str, type], ...]:
    return tuple(_original_global_arguments())


def all_global_arguments() -> list[tuple[str, type]]:
    """``pyinfra.api.arguments.all_global_arguments``, computed once (a new list each call,
    as pyinfra's, so a caller may change it)."""
    return list(_global_arguments())


def get_operation_order_from_stack(state: Any) -> list[int]:
    """``pyinfra.api.util.get_operation_order_from_stack``, from the frames themselves."""
    frames = []
    frame = sys._getframe(1)  # the caller's, as inspect.stack() inside pyinfra's starts
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()  # outermost first, as pyinfra's reversed(stack())
    start = 0
    if state.current_deploy_filename and frames:
        # The first frame of the deploy file; as pyinfra's loop leaves it, the last frame
        # when there is none.
        deploy_frames = (
            index
            for index, outer in enumerate(frames)
            if outer.f_code.co_filename == state.current_deploy_filename
        )
        start = next(deploy_frames, len(frames) - 1)
    line_numbers = [state.current_op_file_number] if pyinfra.is_cli else []
    for outer in frames[start:]:
        if not outer.f_code.co_filename.startswith(_util.PYINFRA_INSTALL_DIR):
            line_numbers.append(outer.f_lineno)
    return line_numbers


class _DataReadOnce:
    """``host.data`` merged once: what ``HostData.__getattr__`` would answer, key by key."""

    __slots__ = ("_host", "_merged")

    def __init__(self, host: Any):
        self._host = host
        self._merged = host.data.dict()

    def __getattr__(self, key: str) -> Any:
        try:
            value = self._merged[key]
        except KeyError:
            raise AttributeError(f"Host `{self._host}` has no data `{key}`") from None
        return copy(value)  # as HostData: changing what it returns changes no data


class _HostDataReadOnce:
    """A host whose ``data`` is read once; everything else is the host's own."""

    def __init__(self, host: Any):
        self._host = host
        self.data = _DataReadOnce(host)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._host, name)


def pop_global_arguments(state: Any, host: Any, kwargs: dict[str, Any]) -> Any:
    """``pyinfra.api.arguments.pop_global_arguments`` reading the host's data once."""
    return _original_pop_global_arguments(state, _HostDataReadOnce(host), kwargs)


def install() -> None:
    """Use them for every operation planned from now on (idempotent)."""
    _operation.get_operation_order_from_stack = get_operation_order_from_stack
    _arguments.all_global_arguments = all_global_arguments
    # where pyinfra's modules hold the function by name (`from .arguments import ...`)
    for module in (_arguments, _operation, _deploy, _facts):
        module.pop_global_arguments = pop_global_arguments
