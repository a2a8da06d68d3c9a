"""Faster, equivalent versions of three pyinfra internals that planning calls per operation.

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
a converged host cost on the controller (py-spy, 16 hosts). Here it is pyinfra's function
with the host's data read once per call, with ``HostData.dict()`` (pyinfra's own
first-layer-wins merge, the order its ``__getattr__`` walks) and the copy its
``__getattr__`` makes of each value. Same arguments, same found keys, same kwargs left
(``tests/unit/test_pyinfra_speed.py`` compares the two over every data layer).

All three are proposed upstream in ``docs/pyinfra-proposals.md`` (with what they gain).

Where and when they apply (``speedups``, which ``rocm_node`` wraps itself in): only while
rocm-fleet's own deploy is being planned, so a user's operations planned outside it are
planned by pyinfra's own functions; only on the pyinfra minor they were written and tested
against (``TESTED_PYINFRA``: on any other, pyinfra's own functions, and one warning); and
never when ``ROCM_FLEET_PYINFRA_SPEEDUPS=0`` (pyinfra's own functions, silently).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from copy import copy
from typing import Any, TypeVar

import pyinfra

# The pyinfra minor the replacements were written against and are tested on
# (tests/unit/test_pyinfra_speed.py), the one pyproject.toml's pin starts at.
from rocm_fleet.engine.version import TESTED_PYINFRA, minor, pyinfra_version

logger = logging.getLogger("pyinfra")

#: Set to 0 (or "off", "no", "false") to plan with pyinfra's own functions.
OPT_OUT = "ROCM_FLEET_PYINFRA_SPEEDUPS"


@functools.cache
def _pyinfra_modules() -> dict[str, Any]:
    """pyinfra's modules the replacements go into, and its functions they stand for (read
    once, and only on the tested minor: another may lack them)."""
    # The modules themselves: `pyinfra.api.operation` as an attribute is the decorator of
    # that name, which the package re-exports over its module.
    modules = {
        name: importlib.import_module(f"pyinfra.api.{name}")
        for name in ("operation", "util", "arguments", "deploy", "facts")
    }
    return {
        **modules,
        "all_global_arguments": modules["arguments"].all_global_arguments,
        "pop_global_arguments": modules["arguments"].pop_global_arguments,
        "get_operation_order_from_stack": modules["operation"].get_operation_order_from_stack,
    }


def _original(name: str) -> Any:
    return _pyinfra_modules()[name]


_warned = False


def enabled() -> bool:
    """Whether the replacements may be used now: not opted out, and on the tested minor
    (else one warning, the first time it is asked)."""
    global _warned
    if os.environ.get(OPT_OUT, "1").strip().lower() in ("0", "off", "no", "false"):
        return False
    version = pyinfra_version()
    if minor(version) == TESTED_PYINFRA:
        return True
    if not _warned:
        _warned = True
        tested = ".".join(map(str, TESTED_PYINFRA))
        logger.warning(
            f"rocm-fleet: pyinfra {version} is not the {tested}.x its planning speedups were "
            "tested on: planning with pyinfra's own functions (slower, same plan)"
        )
    return False


@functools.cache
def _global_arguments() -> tuple[tuple[str, type], ...]:
    return tuple(_original("all_global_arguments")())


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
    install_dir = _original("util").PYINFRA_INSTALL_DIR
    for outer in frames[start:]:
        if not outer.f_code.co_filename.startswith(install_dir):
            line_numbers.append(outer.f_lineno)
    return line_numbers


def pop_global_arguments(state: Any, host: Any, kwargs: dict[str, Any]) -> Any:
    """``pyinfra.api.arguments.pop_global_arguments`` (3.10) reading the host's data once.

    pyinfra's loop, line for line, but each argument's host default is looked up in one merge
    of the host's data (``HostData.dict()``: first layer wins, the order its ``__getattr__``
    walks) and copied as ``__getattr__`` copies, instead of one walk of the layers per
    argument; and the types are the ones computed once. As proposed upstream
    (``docs/pyinfra-3.10-planning.patch``).
    """
    pyinfra_arguments = _original("arguments")
    argument_meta_of = pyinfra_arguments.all_argument_meta
    raise_if_bad_type = pyinfra_arguments.raise_if_bad_type
    ctx_config = pyinfra_arguments.ctx_config

    config = state.config
    if ctx_config.isset():
        config = ctx_config.get()
    meta_kwargs: dict[str, Any] = host.current_deploy_kwargs or {}
    host_data = host.data.dict()

    arguments: dict[str, Any] = {}
    found_keys: list[str] = []
    for key, type_ in _global_arguments():
        argument_meta = argument_meta_of[key]
        handler = argument_meta.handler
        default: Any = argument_meta.default(config)
        if key in host_data:
            default = copy(host_data[key])
        if key in kwargs:
            found_keys.append(key)
            value = kwargs.pop(key)
        else:
            value = meta_kwargs.get(key, default)
        if handler:
            value = handler(config, value)
        if value != default:
            raise_if_bad_type(
                value, type_, pyinfra_arguments.ArgumentTypeError, f"Invalid argument `{key}`:"
            )
        arguments[key] = value
    return arguments, found_keys


# Where pyinfra's modules hold each function by name (`from .arguments import ...`).
_HELD_IN = {
    "get_operation_order_from_stack": ("operation",),
    "all_global_arguments": ("arguments",),
    "pop_global_arguments": ("arguments", "operation", "deploy", "facts"),
}
_OURS = {
    "get_operation_order_from_stack": get_operation_order_from_stack,
    "all_global_arguments": all_global_arguments,
    "pop_global_arguments": pop_global_arguments,
}
# How many plans are inside ``speedups`` now (hosts are planned on greenlets, at once).
_active = 0


def _put(functions: dict[str, Any]) -> None:
    for name, function in functions.items():
        for module in _HELD_IN[name]:
            setattr(_original(module), name, function)


@contextlib.contextmanager
def speedups() -> Iterator[bool]:
    """Plan with the replacements inside the block, when ``enabled()``; pyinfra's own
    functions are back once the last block open (of any host's plan) ends. Yields whether
    they are in use."""
    global _active
    if not enabled():
        yield False
        return
    if _active == 0:
        _put(_OURS)
    _active += 1
    try:
        yield True
    finally:
        _active -= 1
        if _active == 0:
            _put({name: _original(name) for name in _OURS})


F = TypeVar("F", bound=Callable[..., Any])


def planned_with_speedups(deploy_function: F) -> F:
    """Plan everything ``deploy_function`` calls inside ``speedups()`` (put under ``@deploy``)."""

    @functools.wraps(deploy_function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with speedups():
            return deploy_function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
