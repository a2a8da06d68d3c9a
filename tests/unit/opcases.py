"""One rocm-fleet operation's body, run the way pyinfra plans it, with facts from a dict.

In the spirit of pyinfra's own per-operation fixtures (facts in, commands out):
``run_op(operation, facts, **arguments)`` calls the operation's ``_inner`` inside a pyinfra
State and host context and returns what it yielded, the noop reasons it gave and the facts
it read. ``facts`` answers each read by its ``unit.surveys.fact_key`` (the fact class and
its arguments, e.g. ``fact_key(FileDigest, path="/etc/apt/sources.list.d/rocm.list")``),
else by the fact class alone; a read it has no answer for is an error, so every fact a case
depends on is written out in the case. A ``Survey`` read is answered read by read the same
way.

A case can also be data (``tests/unit/operations/<module.op>/<case>.json``, run by
``unit.operations.test_operation_cases``): ``CaseFacts`` answers from its facts, ``rendered``
writes each command the way such a case states it, ``case_key`` names a read.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from importlib import import_module
from typing import Any

from pyinfra.api import Config, Inventory, State, StringCommand
from pyinfra.context import ctx_host, ctx_state

from rocm_fleet.facts.round_trip import Survey
from unit.surveys import Answers, FactKey, answered, fact_key, is_script, script_call


@dataclass
class OpResult:
    commands: list[Any]
    noops: list[str]
    reads: list[FactKey]  # in the order the operation read them
    state: Any = None  # the State it ran in

    @property
    def facts_read(self) -> list[type]:
        """The classes of the facts read, in order."""
        return [read.fact for read in self.reads]

    @property
    def texts(self) -> list[str]:
        return [str(c) for c in self.commands]

    @property
    def scripts(self) -> list[tuple[str, list[str]]]:
        """(script name, arguments) of each command made by ``operations._script.script``."""
        return [script_call(c) for c in self.commands if is_script(c)]


def run_op(
    op: Any, facts: Answers, executing: bool = False, diff: bool = False, **arguments: Any
) -> OpResult:
    """Run ``op``'s body for a host named "node" while planning (or, with ``executing``,
    while pyinfra executes; with ``diff``, as under ``--diff``), every fact answered from
    ``facts``."""
    inventory = Inventory((["node"], {}))
    state = State(inventory, Config(DIFF=diff))
    state.is_executing = executing
    node = inventory.get_host("node")
    reads: list[FactKey] = []
    noops: list[str] = []

    def answer(fact: type, kwargs: dict[str, Any]) -> Any:
        key = fact_key(fact, **kwargs)
        reads.append(key)
        found, value = answered(facts, key)
        if found:
            return value
        raise KeyError(f"no answer for {key} in the case's facts")

    def get_fact(fact: type, *args: Any, **kwargs: Any) -> Any:
        if fact is Survey:
            return [answer(read.fact, read.kwargs) for read in kwargs["reads"]]
        return answer(fact, kwargs)

    node.get_fact = get_fact
    node.noop = noops.append
    with ctx_state.use(state), ctx_host.use(node):
        commands = list(op._inner(**arguments))
    return OpResult(commands, noops, reads, state)


# --- cases as data ----------------------------------------------------------------------------


def fact_name(fact: type) -> str:
    """A fact class's dotted path, as a case's facts name it (``rocm_fleet.facts.apt.X``)."""
    return f"{fact.__module__}.{fact.__qualname__}"


def _text(value: Any) -> str:
    """An argument's value as a case writes it: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def case_key(key: FactKey) -> str:
    """A read as a case names it: ``"name=value"`` pairs, by name, joined by ``", "`` (a value
    that isn't a string written as JSON), e.g. ``path=/etc/x``; ``""`` for no arguments."""
    return ", ".join(f"{name}={_text(value)}" for name, value in key.arguments)


class CaseFacts(dict):
    """A case's ``facts`` as ``run_op``'s answers: by the fact class's dotted path, a fact
    without arguments answered by its value, one with arguments by ``{case_key: answer}``, as
    pyinfra's own cases write them (``{"files.File": {"path=/etc/x": {...}}}``)."""

    def __init__(self, facts: dict[str, Any]):
        super().__init__(facts)
        self.given = {
            (name, arguments)
            for name, value in facts.items()
            for arguments in (value if _takes_arguments(name) else [""])
        }

    def _found(self, key: Any) -> tuple[bool, Any]:
        if not isinstance(key, FactKey) or not dict.__contains__(self, fact_name(key.fact)):
            return False, None
        value = dict.__getitem__(self, fact_name(key.fact))
        if not key.arguments:
            return True, value
        return case_key(key) in value, value.get(case_key(key))

    def __contains__(self, key: Any) -> bool:
        return self._found(key)[0]

    def __getitem__(self, key: Any) -> Any:
        found, value = self._found(key)
        if not found:
            raise KeyError(key)
        return value

    def read(self, reads: list[FactKey]) -> set[tuple[str, str]]:
        """(fact, arguments) of ``reads``, to compare with ``given``."""
        return {(fact_name(key.fact), case_key(key)) for key in reads}


def _takes_arguments(name: str) -> bool:
    module, _, cls = name.rpartition(".")
    command = getattr(import_module(module), cls)().command
    return not isinstance(command, str) and bool(inspect.signature(command).parameters)


def rendered(command: Any) -> Any:
    """A command as a case states it: a package script as ``{"script", "args"}``, a command
    behind the safe path check as that script with ``"then"`` the command, any other as its
    text. (A command of another kind is a TypeError: its case stays in Python.)"""
    if is_script(command):
        name, args = script_call(command)
        return {"script": name, "args": args}
    if isinstance(command, StringCommand) and is_script(command.bits[0]) and len(command.bits) > 2:
        name, args = script_call(command.bits[0])
        if command.bits[1] == "&&":
            return {"script": name, "args": args, "then": str(StringCommand(*command.bits[2:]))}
    if isinstance(command, (str, StringCommand)):
        return str(command)
    raise TypeError(f"{command!r} can't be stated as data")
