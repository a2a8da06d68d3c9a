"""Faster, equivalent versions of pyinfra internals that planning calls per operation (the
operation order, the global arguments, ``signature``, ``make_hash``, the decorators' ``context``),
once-per-process tuning (GC, logging, gevent, context stand-ins) and a cheaper import of the
deploy's modules (``importing()``); docs/decisions/planning-speedups.md says why each is
equivalent. In effect only inside ``speedups()`` and ``importing()``, on ``TESTED_PYINFRA`` (else
one warning), unless ``ROCM_FLEET_PYINFRA_SPEEDUPS=0``."""

import contextlib
import functools
import gc
import importlib
import inspect
import logging
import os
import sys
from collections.abc import Callable, Iterator
from copy import copy
from types import FunctionType, MethodType
from typing import Any, TypeVar

import gevent
import pyinfra
from pyinfra.context import ContextManager, ContextObject

from rocm_fleet.engine.collector import paused
from rocm_fleet.engine.frames import find_caller, line_of
from rocm_fleet.engine.version import TESTED_PYINFRA, minor, pyinfra_version

logger = logging.getLogger("pyinfra")

#: Set to 0 (or "off", "no", "false") to plan with pyinfra's own functions.
OPT_OUT = "ROCM_FLEET_PYINFRA_SPEEDUPS"


@functools.cache
def _pyinfra_modules() -> dict[str, Any]:
    """pyinfra's modules the replacements go into, and the functions they stand for (read once)."""
    # import_module: `pyinfra.api.operation` as an attribute is the decorator.
    modules = {
        name: importlib.import_module(f"pyinfra.api.{name}")
        for name in ("operation", "util", "arguments", "deploy", "facts")
    }
    return {
        **modules,
        "all_global_arguments": modules["arguments"].all_global_arguments,
        "pop_global_arguments": modules["arguments"].pop_global_arguments,
        "get_operation_order_from_stack": modules["operation"].get_operation_order_from_stack,
        "signature": modules["operation"].signature,
        "make_hash": modules["util"].make_hash,
        "context": modules["operation"].context,  # the module pyinfra.context
    }


def _original(name: str) -> Any:
    return _pyinfra_modules()[name]


_warned = False


def enabled() -> bool:
    """Whether the replacements may be used: not opted out, and on the tested minor (else one
    warning, once)."""
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
    """``pyinfra.api.arguments.all_global_arguments``, computed once; a new list each call."""
    return list(_global_arguments())


def _unwrapped(obj: Any) -> Any:
    """What a pyinfra context stand-in (``context.host``) stands for now, else ``obj``: each
    attribute read through the stand-in costs a failed lookup first."""
    if isinstance(obj, ContextObject):
        # (a greenlet's own container has no module until it sets one: ContextManager.get)
        module = getattr(_object_attribute(obj, "_container"), "module", None)
        return obj if module is None else module
    return obj


_object_attribute = object.__getattribute__


def _stand_in_attribute(stand_in: Any, key: str) -> Any:
    """``ContextObject``'s attribute read as pyinfra's: a name not starting with ``_`` (none is
    the stand-in's own) is read from the object it stands for now, else from its base class,
    without a failed lookup on the stand-in first; other names as Python reads them, then
    ``ContextObject.__getattr__``."""
    if key[0] == "_":
        return _object_attribute(stand_in, key)
    module = _object_attribute(stand_in, "_container").module
    if module is None:
        return getattr(_object_attribute(stand_in, "_base_cls"), key)
    return getattr(module, key)


def _stand_in_write(stand_in: Any, key: str, value: Any) -> None:
    """``ContextObject.__setattr__``, its own names read without ``_stand_in_attribute``."""
    if key in ("_container", "_base_cls"):
        return object.__setattr__(stand_in, key, value)
    module = _object_attribute(stand_in, "_container").module
    if module is None:
        raise TypeError("Cannot assign to context base module")
    return setattr(module, key, value)


def _manager_get(manager: Any) -> Any:
    """``ContextManager.get``, the stand-in's container read without ``_stand_in_attribute``."""
    return getattr(_object_attribute(manager.context, "_container"), "module", None)


def _manager_set(manager: Any, module: Any) -> None:
    """``ContextManager.set``, the stand-in's container read without ``_stand_in_attribute``."""
    _object_attribute(manager.context, "_container").module = module


#: (pyinfra's class, name) -> ours, for the context stand-ins and their managers
_STAND_INS = {
    (ContextObject, "__getattribute__"): _stand_in_attribute,
    (ContextObject, "__setattr__"): _stand_in_write,
    (ContextManager, "get"): _manager_get,
    (ContextManager, "set"): _manager_set,
}
#: what pyinfra's classes hold there (None: nothing, Python's own)
_PYINFRAS = {(cls, name): vars(cls).get(name) for cls, name in _STAND_INS}


def get_operation_order_from_stack(state: Any) -> list[int]:
    """``pyinfra.api.util.get_operation_order_from_stack``, from the frames themselves."""
    state = _unwrapped(state)
    frames = []
    frame = sys._getframe(1)  # the caller's, as inspect.stack() inside pyinfra's starts
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()  # outermost first, as pyinfra's reversed(stack())
    start = 0
    deploy_filename = state.current_deploy_filename
    if deploy_filename and frames:
        # The first frame of the deploy file, else the last (as pyinfra's loop leaves it).
        deploy_frames = (
            index
            for index, outer in enumerate(frames)
            if outer.f_code.co_filename == deploy_filename
        )
        start = next(deploy_frames, len(frames) - 1)
    line_numbers = [state.current_op_file_number] if pyinfra.is_cli else []
    install_dir = _original("util").PYINFRA_INSTALL_DIR
    for outer in frames[start:]:
        if not outer.f_code.co_filename.startswith(install_dir):
            line_numbers.append(line_of(outer))
    return line_numbers


@functools.cache
def signature(function: Callable[..., Any]) -> inspect.Signature:
    """``inspect.signature`` (what pyinfra's operation decorator binds each call's arguments
    with), computed once per operation function."""
    return _original("signature")(function)


@functools.lru_cache(maxsize=4096)
def _hash_of_order(order: tuple[int, ...]) -> str:
    return _original("make_hash")(list(order))


def make_hash(obj: Any) -> str:
    """``pyinfra.api.util.make_hash``; an operation's order (line numbers, the same on every
    host) hashed once."""
    if type(obj) is list and all(type(number) is int for number in obj):
        return _hash_of_order(tuple(obj))
    return _original("make_hash")(obj)


#: (key, value type, value) of scalar global arguments that passed their type check, and
#: (key, type, function) of functions and bound methods (``_if=op.did_change``) that did
_CHECKED: set[tuple[str, type, Any]] = set()
_SCALARS = (bool, int, float, str, type(None))


def _checked_as(key: str, value: Any) -> tuple[str, type, Any] | None:
    """What a passed check is remembered as: a scalar by its value; a function by itself and a
    bound method by its function (typeguard checks a callable by its signature alone, which
    a method's object doesn't change: ``inspect.signature``); None for any other value."""
    kind = type(value)
    if kind in _SCALARS or kind is FunctionType:
        return key, kind, value
    if kind is MethodType and type(value.__func__) is FunctionType:
        return key, kind, value.__func__
    return None


def _check_type(raise_if_bad_type: Callable[..., None], key: str, value: Any, type_: Any) -> None:
    """pyinfra's type check of a global argument, once per scalar value, function or bound
    method's function (same key, same type)."""
    checked = _checked_as(key, value)
    if checked is not None and checked in _CHECKED:
        return
    raise_if_bad_type(value, type_, _original("arguments").ArgumentTypeError,
                      f"Invalid argument `{key}`:")  # fmt: skip
    if checked is not None:
        _CHECKED.add(checked)


@functools.cache
def _argument_table() -> tuple[tuple[str, Any, Any, Any], ...]:
    """(key, type, default function, handler) of each global argument, in pyinfra's order."""
    meta_of = _original("arguments").all_argument_meta
    return tuple(
        (key, type_, meta_of[key].default, meta_of[key].handler)
        for key, type_ in _global_arguments()
    )


def pop_global_arguments(state: Any, host: Any, kwargs: dict[str, Any]) -> Any:
    """``pyinfra.api.arguments.pop_global_arguments`` (3.10) line for line, with the host's data
    merged once (``HostData.dict()``, copied as ``__getattr__`` copies), the types and metas
    looked up once, and a scalar value's type check remembered once it passed."""
    pyinfra_arguments = _original("arguments")
    raise_if_bad_type = pyinfra_arguments.raise_if_bad_type
    ctx_config = pyinfra_arguments.ctx_config

    state, host = _unwrapped(state), _unwrapped(host)
    config = state.config
    if ctx_config.isset():
        config = ctx_config.get()
    meta_kwargs: dict[str, Any] = host.current_deploy_kwargs or {}
    host_data = host.data.dict()

    arguments: dict[str, Any] = {}
    found_keys: list[str] = []
    for key, type_, default_of, handler in _argument_table():
        default: Any = default_of(config)
        if key in host_data:
            default = copy(host_data[key])
        if key in kwargs:
            found_keys.append(key)
            value = kwargs.pop(key)
        else:
            value = meta_kwargs.get(key, default)
        if handler:
            value = handler(config, value)
        if value != default and (
            type(value) not in _SCALARS or (key, type(value), value) not in _CHECKED
        ):
            _check_type(raise_if_bad_type, key, value, type_)
        arguments[key] = value
    return arguments, found_keys


class _ContextNow:
    """``pyinfra.context`` as pyinfra's operation and deploy decorators read it while rocm-fleet
    plans: ``state`` and ``host`` are the objects pyinfra's stand-ins stand for in this greenlet
    now (the stand-ins themselves when none is set), so the decorators' many reads of them (and
    the command generator's, run for the same host) don't each look the object up again
    through the stand-in; any other name is the module's."""

    @property
    def state(self) -> Any:
        return _unwrapped(_context_module().state)

    @property
    def host(self) -> Any:
        return _unwrapped(_context_module().host)

    def __getattr__(self, name: str) -> Any:
        return getattr(_context_module(), name)


def _context_module() -> Any:
    return _original("context")


#: what ``pyinfra.api.operation`` and ``.deploy`` read as ``context`` inside ``speedups()``
context = _ContextNow()


# Where pyinfra's modules hold each function by name (`from .arguments import ...`).
_HELD_IN = {
    "get_operation_order_from_stack": ("operation",),
    "signature": ("operation",),
    "make_hash": ("operation",),
    "all_global_arguments": ("arguments",),
    "pop_global_arguments": ("arguments", "operation", "deploy", "facts"),
    "context": ("operation", "deploy"),
}
_OURS = {
    "get_operation_order_from_stack": get_operation_order_from_stack,
    "all_global_arguments": all_global_arguments,
    "pop_global_arguments": pop_global_arguments,
    "signature": signature,
    "make_hash": make_hash,
    "context": context,
}
# Open ``speedups`` blocks (hosts are planned on greenlets at once).
_active = 0
_tuned = False


#: objects allocated between two young collections (Python's default: 700)
GC_YOUNG = 10_000


def _tune_once() -> None:
    """The first time a plan starts: what is alive then frozen out of the collector's passes,
    young collections every ``GC_YOUNG`` allocations, log records without the thread's name and
    with their caller's line remembered (``find_caller``), greenlets without their spawning
    stack, the context stand-ins' own lookups (``_STAND_INS``)."""
    global _tuned
    if not _tuned:
        _tuned = True
        gc.freeze()
        gc.set_threshold(max(GC_YOUNG, gc.get_threshold()[0]), *gc.get_threshold()[1:])
        logging.logThreads = False
        logger.findCaller = functools.partial(find_caller, logger)  # type: ignore[method-assign]
        gevent.config.track_greenlet_tree = False
        for (cls, name), ours in _STAND_INS.items():
            setattr(cls, name, ours)


def _put(functions: dict[str, Any]) -> None:
    for name, function in functions.items():
        for module in _HELD_IN[name]:
            setattr(_original(module), name, function)


@contextlib.contextmanager
def speedups() -> Iterator[bool]:
    """Plan with the replacements inside the block when ``enabled()``; pyinfra's own are back when
    the last open block (of any host) ends. Yields whether they are in use."""
    global _active
    if not enabled():
        yield False
        return
    if _active == 0:
        _tune_once()
        _put(_OURS)
    _active += 1
    try:
        yield True
    finally:
        _active -= 1
        if _active == 0:
            _put({name: _original(name) for name in _OURS})


@contextlib.contextmanager
def importing() -> Iterator[bool]:
    """While rocm-fleet's deploy modules are imported (``compose``), when ``enabled()``: fact
    classes checked against ``all_global_arguments()`` computed once, the collector ``paused``,
    and what the import made frozen at the end. Both as they were after. Yields whether in
    effect."""
    if not enabled():
        yield False
        return
    facts = _original("facts")
    theirs = facts.all_global_arguments
    facts.all_global_arguments = all_global_arguments
    try:
        with paused():
            yield True
            gc.freeze()
    finally:
        facts.all_global_arguments = theirs


F = TypeVar("F", bound=Callable[..., Any])


def planned_with_speedups(deploy_function: F) -> F:
    """Plan everything ``deploy_function`` calls inside ``speedups()`` (put under ``@deploy``)."""

    @functools.wraps(deploy_function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with speedups():
            return deploy_function(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
