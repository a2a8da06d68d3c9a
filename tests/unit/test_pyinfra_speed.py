"""rocm_fleet.engine.speedups's replacements answer as pyinfra's own: the operation order on real
call stacks, the global arguments, and the global arguments popped for a host over every
layer of its data; they apply only while rocm-fleet's deploy is planned, and step aside
(pyinfra's own functions) when opted out or on another pyinfra minor."""

from __future__ import annotations

import functools
import logging
import textwrap
from types import SimpleNamespace

import pyinfra
import pytest
from pyinfra.api import util

from rocm_fleet.engine import speedups as _pyinfra
from rocm_fleet.engine.version import minor
from unit.surveys import SurveyHost, fresh_survey, plan


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


def test_the_order_is_pyinfras_again_from_remembered_lines_and_through_the_stand_in():
    """Lines are remembered per code object and instruction: asked again, from another line of
    the same code and through pyinfra's ``context.state``, the answers are still pyinfra's."""
    from pyinfra.context import ctx_state
    from pyinfra.context import state as stand_in

    deploy = SimpleNamespace(current_deploy_filename=None, current_op_file_number=1)

    def both(of):
        return util.get_operation_order_from_stack(deploy), _pyinfra.get_operation_order_from_stack(
            of
        )

    with ctx_state.use(deploy):
        answers = [both(deploy), both(stand_in), both(deploy)]
        answers += [both(stand_in), both(deploy)]  # another line of this function
    for theirs, ours in answers:
        assert ours == theirs and len(ours) >= 2
    assert answers[0] == answers[2] and answers[3][0][-2] != answers[0][0][-2]


@pytest.mark.parametrize("is_cli", [True, False])
@pytest.mark.parametrize("deploy_file", [True, False])
def test_the_fast_order_is_pyinfras(tmp_path, monkeypatch, is_cli, deploy_file):
    theirs, ours = orders(tmp_path, "deploy" if deploy_file else None, is_cli, monkeypatch)
    assert ours == theirs and len(ours) >= 3  # ask, helper, task (and more outside)
    if deploy_file:
        assert (ours[0] if not is_cli else ours[1]) == 8  # the deploy file's `task(ASK)` line


def held() -> dict[str, object]:
    """What pyinfra's modules call now, by where they hold each function."""
    import importlib

    found = {}
    for function, modules in _pyinfra._HELD_IN.items():
        for module in modules:
            found[f"{module}.{function}"] = getattr(
                importlib.import_module(f"pyinfra.api.{module}"), function
            )
    return found


class Recording(SurveyHost):
    """A harness host that notes what pyinfra calls while rocm-fleet's deploy reads it."""

    seen: dict[str, object] | None = None

    def __call__(self, fact, *args, **kwargs):
        self.seen = held()
        return super().__call__(fact, *args, **kwargs)


@pytest.mark.skipif(
    minor(_pyinfra.pyinfra_version()) != _pyinfra.TESTED_PYINFRA,
    reason="another pyinfra minor (make pyinfra-next): the speedups step aside, as the next "
    "test shows; the comparisons above say whether they still answer as pyinfra's",
)
def test_rocm_fleets_deploy_is_planned_with_them_and_nothing_else_is():
    before = held()
    assert before["operation.get_operation_order_from_stack"] is not (
        _pyinfra.get_operation_order_from_stack
    )
    host = Recording(fresh_survey("debian-12"))
    plan({"rocm_version": "6.4.3"}, host)
    assert host.seen == {
        name: getattr(_pyinfra, name.split(".")[1]) for name in before
    }  # inside rocm_node: every one of ours
    assert held() == before  # after it: pyinfra's own, for the user's operations


@pytest.mark.skipif(
    minor(_pyinfra.pyinfra_version()) != _pyinfra.TESTED_PYINFRA,
    reason="another pyinfra minor: the speedups step aside (the next test)",
)
def test_the_first_plan_tunes_the_collector_and_log_records_once(monkeypatch):
    calls = []
    monkeypatch.setattr(_pyinfra, "_tuned", False)
    monkeypatch.setattr(_pyinfra.logging, "logThreads", True)
    monkeypatch.setattr(_pyinfra.gevent.config, "track_greenlet_tree", True)
    monkeypatch.delattr(_pyinfra.logger, "findCaller", raising=False)
    monkeypatch.setattr(_pyinfra.gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(_pyinfra.gc, "get_threshold", lambda: (700, 10, 10))
    monkeypatch.setattr(_pyinfra.gc, "set_threshold", lambda *t: calls.append(t))
    monkeypatch.setenv(_pyinfra.OPT_OUT, "0")
    plan({"rocm_version": "6.4.3"}, SurveyHost(fresh_survey("debian-12")))
    assert calls == [] and _pyinfra.logging.logThreads  # opted out: Python's own settings
    assert _pyinfra.gevent.config.track_greenlet_tree  # and gevent's
    assert "findCaller" not in vars(_pyinfra.logger)  # and the logger's
    monkeypatch.delenv(_pyinfra.OPT_OUT)
    for _ in range(2):
        plan({"rocm_version": "6.4.3"}, SurveyHost(fresh_survey("debian-12")))
    assert calls == ["freeze", (_pyinfra.GC_YOUNG, 10, 10)]  # once per process
    assert not _pyinfra.logging.logThreads and not _pyinfra.gevent.config.track_greenlet_tree
    assert _pyinfra.logger.findCaller.func is _pyinfra.find_caller


def test_opted_out_or_on_another_pyinfra_they_step_aside_with_one_warning(monkeypatch, caplog):
    before = held()
    monkeypatch.setenv(_pyinfra.OPT_OUT, "0")
    host = Recording(fresh_survey("debian-12"))
    plan({"rocm_version": "6.4.3"}, host)
    assert host.seen == before and "speedups" not in caplog.text
    monkeypatch.delenv(_pyinfra.OPT_OUT)
    monkeypatch.setattr(_pyinfra, "pyinfra_version", lambda: "3.11.0")
    monkeypatch.setattr(_pyinfra, "_warned", False)
    for _ in range(2):
        host = Recording(fresh_survey("debian-12"))
        planned = plan({"rocm_version": "6.4.3"}, host)
        assert host.seen == before and not planned.refused
    (warning,) = [r for r in caplog.records if "planning speedups" in r.getMessage()]
    assert "pyinfra 3.11.0 is not the 3.10.x" in warning.getMessage()


def test_the_tested_minor_is_the_one_pyproject_pins_and_this_one():
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    (pin,) = [d for d in pyproject["project"]["dependencies"] if d.startswith("pyinfra")]
    low = _pyinfra.TESTED_PYINFRA  # from the tested minor to the next major's
    assert pin == f"pyinfra>={low[0]}.{low[1]},<{low[0] + 1}"
    assert minor("3.10.0") == (3, 10) and minor("3.11.0rc1") == (3, 11)


def test_the_global_arguments_are_pyinfras():
    theirs = _pyinfra._original("all_global_arguments")()
    assert _pyinfra.all_global_arguments() == theirs and "_sudo" in dict(theirs)
    assert _pyinfra.all_global_arguments() is not _pyinfra.all_global_arguments()


def test_the_collector_is_paused_inside_and_as_it_was_after():
    import gc

    from rocm_fleet.engine.collector import paused

    with paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ImportError), paused():  # also when the import fails
        raise ImportError("no such module")
    assert gc.isenabled()
    gc.disable()  # off before: off after
    try:
        with paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _define_facts() -> tuple[str, str]:
    """A fact class's name as pyinfra's ``__init_subclass__`` sets it, and its refusal of a
    ``command`` taking a global argument."""
    from pyinfra.api import FactBase

    class Fine(FactBase):
        def command(self, path):
            return f"cat {path}"

    with pytest.raises(TypeError) as refused:

        class Reserved(FactBase):
            def command(self, path, _sudo):
                return f"cat {path}"

    return Fine.name, str(refused.value)


@pytest.mark.skipif(
    minor(_pyinfra.pyinfra_version()) != _pyinfra.TESTED_PYINFRA,
    reason="another pyinfra minor: the speedups step aside",
)
def test_fact_classes_defined_while_importing_are_pyinfras_and_collection_comes_back(
    monkeypatch,
):
    from pyinfra.api import facts

    theirs, pyinfras = facts.all_global_arguments, _define_facts()
    with _pyinfra.importing() as used:
        assert used and facts.all_global_arguments is _pyinfra.all_global_arguments
        assert not _pyinfra.gc.isenabled()
        assert _define_facts() == pyinfras  # same name, same refusal
    assert facts.all_global_arguments is theirs and _pyinfra.gc.isenabled()
    monkeypatch.setenv(_pyinfra.OPT_OUT, "0")
    with _pyinfra.importing() as used:
        assert not used and facts.all_global_arguments is theirs and _pyinfra.gc.isenabled()


def test_global_arguments_popped_as_pyinfra_pops_them():
    """Every layer of a host's data (override, host, groups in order, all, @deploy data
    defaults), @deploy kwargs and operation kwargs: the same arguments, keys and leftovers,
    and a value taken from the data is a copy, as pyinfra's."""
    from pyinfra import context
    from pyinfra.api import Config, Inventory, State
    from pyinfra.context import ctx_host, ctx_state

    env = {"FROM": "group"}
    inventory = Inventory(
        ([("h1", {"_sudo": True, "_sudo_user": "host-user", "rocm_version": "6.4.3"})], {}),
        override_data={"_timeout": 7},
        first=(["h1"], {"_env": env, "_shell_executable": "bash", "_sudo_user": "group"}),
        second=(["h1"], {"_shell_executable": "zsh", "_retries": 2}),
    )
    state = State(inventory, Config())
    host = inventory.get_host("h1")
    original = _pyinfra._original("pop_global_arguments")
    cases = [
        ({}, None, None),
        ({"_sudo": False, "packages": ["curl"]}, None, None),
        ({"_env": {"A": "1"}, "name": "x"}, {"_retries": 5}, {"_chdir": "/tmp"}),
        ({"_ignore_errors": True}, {"_sudo_user": "deploy"}, {"_sudo_user": "data"}),
    ]
    for op_kwargs, deploy_kwargs, deploy_data in cases:
        host.current_deploy_kwargs, host.current_deploy_data = deploy_kwargs, deploy_data
        theirs_kwargs, ours_kwargs = dict(op_kwargs), dict(op_kwargs)
        theirs = original(state, host, theirs_kwargs)
        ours = _pyinfra.pop_global_arguments(state, host, ours_kwargs)
        assert ours == theirs, (op_kwargs, deploy_kwargs, deploy_data)
        assert ours_kwargs == theirs_kwargs
        with ctx_state.use(state), ctx_host.use(host):  # as pyinfra passes them: stand-ins
            stand_ins = _pyinfra.pop_global_arguments(context.state, context.host, dict(op_kwargs))
        assert stand_ins == theirs
    host.current_deploy_kwargs = host.current_deploy_data = None
    arguments, _ = _pyinfra.pop_global_arguments(state, host, {})
    assert arguments["_timeout"] == 7 and arguments["_shell_executable"] == "zsh"
    assert arguments["_sudo_user"] == "host-user" and arguments["_env"] == env
    assert arguments["_env"] is not env  # a copy, as HostData gives


def test_a_bad_global_argument_is_refused_as_pyinfra_refuses_it_every_time():
    """The type check is remembered only for values that passed it: a bad value fails on each
    call with pyinfra's message, a good scalar passes again (checked once)."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.exceptions import ArgumentTypeError

    inventory = Inventory(([("h1", {})], {}))
    state = State(inventory, Config())
    host = inventory.get_host("h1")
    original = _pyinfra._original("pop_global_arguments")
    for _ in range(2):
        for bad in ({"_sudo": "yes"}, {"_timeout": "7"}, {"_sudo_user": 5}):
            messages = []
            for pop in (original, _pyinfra.pop_global_arguments):
                with pytest.raises(ArgumentTypeError) as raised:
                    pop(state, host, dict(bad))
                messages.append(str(raised.value))
            assert messages[0] == messages[1] and "Invalid argument" in messages[0]
        good = {"_sudo": True, "_timeout": 7, "_sudo_user": "deploy"}
        assert _pyinfra.pop_global_arguments(state, host, dict(good)) == original(
            state, host, dict(good)
        )


def test_a_callable_global_argument_is_checked_once_per_function_as_pyinfra_checks_it():
    """``_if=op.did_change``: a bound method's check is remembered by its function (typeguard
    checks a callable's signature, the same for every object it is bound to); a callable that
    fails (it needs an argument) is refused with pyinfra's message every time, before or after
    a good one passed; the same arguments as pyinfra's."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.api.exceptions import ArgumentTypeError

    class Meta:
        def did_change(self) -> bool:
            return True

        def needs_one(self, extra) -> bool:
            return bool(extra)

    def plain() -> bool:
        return True

    inventory = Inventory(([("h1", {})], {}))
    state = State(inventory, Config())
    host = inventory.get_host("h1")
    original = _pyinfra._original("pop_global_arguments")
    checked = []
    real = _pyinfra._check_type

    def counted(raise_if_bad_type, key, value, type_):
        checked.append(key)
        return real(raise_if_bad_type, key, value, type_)

    for _ in range(2):
        for bad in (Meta().needs_one, lambda extra: extra):
            messages = []
            for pop in (original, _pyinfra.pop_global_arguments):
                with pytest.raises(ArgumentTypeError) as raised:
                    pop(state, host, {"_if": bad})
                messages.append(str(raised.value))
            assert messages[0] == messages[1] and "Invalid argument `_if`" in messages[0]
        for good in (Meta().did_change, Meta().did_change, plain, [plain]):
            assert _pyinfra.pop_global_arguments(state, host, {"_if": good}) == original(
                state, host, {"_if": good}
            )
    assert _pyinfra._checked_as("_if", Meta().did_change) == _pyinfra._checked_as(
        "_if", Meta().did_change
    )
    assert _pyinfra._checked_as("_if", [plain]) is None  # a list: checked every time
    before = len(_pyinfra._CHECKED)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_pyinfra, "_check_type", counted)
        _pyinfra._check_type(
            _pyinfra._original("arguments").raise_if_bad_type, "_if", Meta().did_change, None
        )
    assert len(_pyinfra._CHECKED) == before and checked == ["_if"]  # remembered: not again


def test_what_the_import_made_is_left_out_of_collections_after_importing(monkeypatch):
    """``importing()`` ends by freezing what is alive (``gc.freeze``), the collector paused till
    then; not when opted out, nor when the import failed."""
    calls = []
    monkeypatch.setattr(_pyinfra.gc, "freeze", lambda: calls.append(_pyinfra.gc.isenabled()))
    with _pyinfra.importing() as used:
        assert calls == []
    assert calls == ([False] if used else [])
    with pytest.raises(ImportError), _pyinfra.importing():
        raise ImportError("no such module")
    monkeypatch.setenv(_pyinfra.OPT_OUT, "0")
    with _pyinfra.importing():
        pass
    assert calls == ([False] if used else [])


def test_the_decorators_context_reads_what_the_stand_ins_stand_for_now():
    """Inside ``speedups()``, pyinfra's operation (and deploy) decorator reads ``context.state`` and
    ``context.host`` as the objects pyinfra's stand-ins stand for now, in this greenlet (the
    stand-ins when none is set); any other name as ``pyinfra.context``'s; after, the module."""
    import importlib

    import gevent
    from pyinfra import context as module
    from pyinfra.api import Config, Inventory, State
    from pyinfra.context import ctx_host, ctx_state

    decorator = importlib.import_module("pyinfra.api.operation")  # the attribute: the decorator

    inventory = Inventory(([("h1", {}), ("h2", {})], {}))
    state = State(inventory, Config())
    h1, h2 = inventory.get_host("h1"), inventory.get_host("h2")
    with _pyinfra.speedups() as used:
        ours = decorator.context
        assert not used or ours is _pyinfra.context
        with ctx_state.use(state), ctx_host.use(h1):
            assert ours.state is state and ours.host is h1
            assert ours.ctx_host is module.ctx_host and ours.config is module.config

            def other_greenlet():
                with ctx_host.use(h2):
                    return ours.host is h2 and ours.state is state

            assert gevent.spawn(other_greenlet).get() and ours.host is h1
            assert gevent.spawn(lambda: ours.host).get() is module.host  # none set there
    assert decorator.context is module


def test_an_operations_signature_is_inspects_and_binds_as_it_does():
    import inspect

    def operation(packages: list[str], present: bool = True, *, name: str | None = None):
        yield from ()

    ours = _pyinfra.signature(operation)
    assert ours == inspect.signature(operation) and _pyinfra.signature(operation) is ours
    assert ours.bind(["curl"], present=False).arguments == {"packages": ["curl"], "present": False}
    with pytest.raises(TypeError, match="unexpected keyword argument 'presnt'"):
        ours.bind(["curl"], presnt=False)
    with pytest.raises(TypeError):
        inspect.signature(operation).bind(["curl"], presnt=False)


def test_an_operations_hash_is_pyinfras():
    from pyinfra.api.util import make_hash

    orders = [[8], [1, 77, 12, 230], [0, 35, 35, 101, 9, 2], []]
    others = [[1, True, None], ("a", 3), {"k": [1, 2]}, [1, "2"]]  # not an order: pyinfra's
    for value in orders + others:
        assert _pyinfra.make_hash(value) == make_hash(value), value
    assert _pyinfra.make_hash([1, 77, 12, 230]) == _pyinfra.make_hash([1, 77, 12, 230])
    assert _pyinfra._hash_of_order.cache_info().hits >= 1


class Base:
    """What a stand-in stands for before it is set (pyinfra's: the ``Host`` class)."""

    kind = "base"

    @property
    def shout(self):
        return self.name.upper()


class Thing(Base):
    def __init__(self, name):
        self.name, self._private = name, f"_{name}"

    def __repr__(self):
        return f"Thing({self.name})"


def pyinfras_own(monkeypatch):
    """pyinfra's own context classes again (the first plan gave them ``_STAND_INS``)."""
    theirs = {f"{cls.__name__}.{name}": f for (cls, name), f in _pyinfra._PYINFRAS.items()}
    assert theirs["ContextObject.__getattribute__"] is None  # object's
    assert {f.__module__ for f in theirs.values() if f} == {"pyinfra.context"}
    for (cls, name), theirs in _pyinfra._PYINFRAS.items():
        if theirs is None:
            monkeypatch.delattr(cls, name, raising=False)
        else:
            monkeypatch.setattr(cls, name, theirs)


def stand_in_story(context_cls) -> list:
    """Everything a pyinfra context stand-in answers, as (what, answer or error) pairs: reads
    before its object is set (from the base class), reads, writes, ``use`` of another object
    and back, the stand-in's own names, and missing names."""
    import gevent
    from pyinfra.context import ContextManager

    manager = ContextManager("host", context_cls)
    manager.set_base(Base)
    stand_in = manager.context
    story = []

    def note(what, read):
        try:
            answer = read()
        except Exception as error:  # the error is the answer compared
            answer = (type(error), str(error))
        story.append((what, answer))

    def reads(when):
        for key in ("kind", "name", "shout", "_private", "missing", "_missing", "_base_cls"):
            note(f"{when} .{key}", lambda key=key: getattr(stand_in, key))
        note(f"{when} hasattr", lambda: (hasattr(stand_in, "name"), hasattr(stand_in, "nope")))
        note(f"{when} own", lambda: (stand_in._get_module(), type(stand_in), str(stand_in)))
        note(f"{when} a greenlet's", lambda: gevent.spawn(getattr, stand_in, "name", None).get())

    reads("unset")
    note("write unset", lambda: setattr(stand_in, "name", "x"))
    one, two = Thing("one"), Thing("two")
    manager.set(one)
    reads("set")
    note("write", lambda: (setattr(stand_in, "name", "uno"), one.name, stand_in.name))
    with manager.use(two):
        reads("used")
        note("write used", lambda: (setattr(stand_in, "kind", "mine"), two.kind, one.kind))
    reads("back")
    manager.reset()
    reads("reset")
    return [(what, repr(answer)) for what, answer in story]


@pytest.mark.parametrize("kind", ["ContextObject", "LocalContextObject"])
def test_a_stand_in_reads_as_pyinfras_own(monkeypatch, kind):
    """``_stand_in_attribute`` (pyinfra's ``context.host``/``.state`` read at once) answers
    every read, write, context switch and miss as pyinfra's own ``ContextObject``."""
    from pyinfra import context

    context_cls = getattr(context, kind)
    pyinfras_own(monkeypatch)
    theirs = stand_in_story(context_cls)
    for (cls, name), ours in _pyinfra._STAND_INS.items():
        monkeypatch.setattr(cls, name, ours)
    assert stand_in_story(context_cls) == theirs
    missing = (AttributeError, "'Thing' object has no attribute 'missing'")
    assert ("set .missing", repr(missing)) in theirs
    assert ("used .name", repr("two")) in theirs and ("back .name", repr("uno")) in theirs


@pytest.mark.skipif(
    minor(_pyinfra.pyinfra_version()) != _pyinfra.TESTED_PYINFRA,
    reason="another pyinfra minor: the speedups step aside",
)
def test_the_first_plan_gives_the_stand_ins_the_fast_read_unless_opted_out(monkeypatch):
    from pyinfra.context import ContextObject

    monkeypatch.setattr(_pyinfra, "_tuned", False)
    pyinfras_own(monkeypatch)
    monkeypatch.setenv(_pyinfra.OPT_OUT, "0")
    plan({"rocm_version": "6.4.3"}, SurveyHost(fresh_survey("debian-12")))
    assert "__getattribute__" not in vars(ContextObject)
    assert not any(vars(cls).get(name) is ours for (cls, name), ours in _pyinfra._STAND_INS.items())
    monkeypatch.delenv(_pyinfra.OPT_OUT)
    plan({"rocm_version": "6.4.3"}, SurveyHost(fresh_survey("debian-12")))
    assert all(vars(cls)[name] is ours for (cls, name), ours in _pyinfra._STAND_INS.items())


def _log_from_here(log: logging.Logger, **kwargs) -> None:
    log.warning("line", **kwargs)


def _log_deeper(log: logging.Logger, **kwargs) -> None:
    _log_from_here(log, **kwargs)


def test_log_records_name_their_caller_as_pythons_logger_does():
    """pyinfra's logger's ``findCaller`` (its line remembered per code object and instruction)
    gives each record the file, line, function and stack Python's gives, from any caller."""
    kept: dict[str, list] = {"ours": [], "theirs": []}

    class Keep(logging.Handler):
        def __init__(self, into: list) -> None:
            super().__init__()
            self.into = into

        def emit(self, record: logging.LogRecord) -> None:
            self.into.append((record.pathname, record.lineno, record.funcName, record.stack_info))

    loggers = {}
    for name, records in kept.items():
        log = loggers[name] = logging.getLogger(f"rocm_fleet.test.caller.{name}")
        log.addHandler(Keep(records))
        log.propagate = False
    ours = loggers["ours"]
    ours.findCaller = functools.partial(_pyinfra.find_caller, ours)  # as _tune_once sets it
    try:
        for _ in range(2):  # the second time from remembered lines
            for kwargs in ({}, {"stacklevel": 2}, {"stack_info": True}):
                for log in loggers.values():
                    _log_from_here(log, **kwargs)
                    _log_deeper(log, **kwargs)
                    log.warning("here", **kwargs)
    finally:
        for log in loggers.values():
            log.handlers.clear()
    assert kept["ours"] == kept["theirs"] and len(kept["ours"]) == 18
    assert {line[2] for line in kept["ours"]} >= {"_log_from_here", "_log_deeper"}
