"""One rocm-fleet operation's body, run the way pyinfra plans it, with facts from a dict.

In the spirit of pyinfra's own per-operation fixtures (facts in, commands out):
``run_op(operation, facts, **arguments)`` calls the operation's ``_inner`` inside a pyinfra
State and host context and returns what it yielded, the noop reasons it gave and the facts
it read. ``facts`` answers each read by its ``unit.surveys.fact_key`` (the fact class and
its arguments, e.g. ``fact_key(FileDigest, path="/etc/apt/sources.list.d/rocm.list")``),
else by the fact class alone; a read it has no answer for is an error, so every fact a case
depends on is written out in the case. A ``Survey`` read is answered read by read the same
way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyinfra.api import Config, Inventory, State
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
