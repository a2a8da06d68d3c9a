"""Many facts in one command, one SSH round trip (docs/decisions/one-survey.md): each read's
command in a section, parsed by the fact's own ``process``; facts with the same command share a
section, and a per-path fact with ``batch_command``/``batch_process`` answers its reads in one."""

import functools
from dataclasses import dataclass, field
from typing import Any

from pyinfra.api import FactBase
from pyinfra.api.exceptions import FactProcessError

from rocm_fleet.facts._shell import ForgedSection, joined, sections
from rocm_fleet.model.host_survey import PER_PATH, HostSurvey

_MARKER = "__survey_section="
_RECORD = "\x1e"  # what the command turns newlines into (ASCII RS)


@dataclass(frozen=True)
class Read:
    """One fact of a survey: the ``HostSurvey`` field it fills, the fact class, its arguments."""

    name: str
    fact: type[FactBase]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def key(self) -> str:
        return f"{self.name} {self.kwargs['path']}" if self.name in PER_PATH else self.name

    @functools.cached_property
    def identity(self) -> tuple[str, type[FactBase], str]:
        """What the read's section of a survey command is built from."""
        return (self.name, self.fact, repr(self.kwargs))

    def __repr__(self) -> str:  # what pyinfra's debug log prints for the survey's arguments
        return self.key


@dataclass(frozen=True)
class Unreadable:
    """A survey's output that can't be taken as answers, and why (``reason``: the node's text in
    it is untrusted); ``forged``: a section's text posed as another section."""

    reason: str
    forged: bool


def _records(output: list[str]) -> list[str]:
    records = [record for line in output for record in line.split(_RECORD)]
    return records[:-1] if records and records[-1] == "" else records


def _command(read: Read) -> str:
    """A read's shell command (a fact's ``command`` may be a string)."""
    command = read.fact().command
    return command if isinstance(command, str) else str(command(**read.kwargs))


# reads' key -> (command, batches, shared) of ``_layout``, the most recently used last
_LAYOUTS: dict[tuple, tuple[str, dict[int, list[int]], dict[int, int]]] = {}
_KEPT_LAYOUTS = 16


def _layout(reads: list[Read]) -> tuple[str, dict[int, list[int]], dict[int, int]]:
    """The survey's command; each batch's read indexes by its first read's index (its reads'
    answers come from one section); each read's section (the first read of its command)."""
    if len({read.key for read in reads}) != len(reads):
        raise ValueError("survey keys must be unique")
    batches: dict[int, list[int]] = {}
    first_of: dict[type[FactBase], int] = {}
    shared: dict[int, int] = {}
    section_of: dict[str, int] = {}
    parts = []
    for index, read in enumerate(reads):
        if hasattr(read.fact, "batch_command"):
            first = first_of.setdefault(read.fact, index)
            batches.setdefault(first, []).append(index)
            continue
        command = _command(read)
        shared[index] = section_of.setdefault(command, index)
        if shared[index] == index:
            parts.append(f"echo {_MARKER}{index}; {{ {command}; }} 2>/dev/null")
    for first, indexes in batches.items():
        fact = reads[first].fact
        command = fact.batch_command([reads[i].kwargs for i in indexes])  # type: ignore[attr-defined]
        parts.append(f"echo {_MARKER}{first}; {{ {command}; }} 2>/dev/null")
    # One line, records separated by RS: paramiko's cost is per line.
    return f"{{ {'; '.join(parts)}; }} | tr '\\n' '\\036'; echo", batches, shared


class Survey(FactBase["list[Any] | Unreadable"]):
    """The answers of several facts in the reads' order; empty output gets the fact's
    ``default``, and a failing section (its stderr dropped) doesn't stop the others. Output that
    misses a section or names one twice (here or in a read's own sections) is ``Unreadable``."""

    def command(self, reads: list[Read] | tuple[Read, ...]) -> str:
        self._reads = list(reads)
        # Hosts of one fleet mostly ask the same reads: their command is built once.
        key = tuple(read.identity for read in self._reads)
        layout = _LAYOUTS.pop(key, None) or _layout(self._reads)
        _LAYOUTS[key] = layout
        while len(_LAYOUTS) > _KEPT_LAYOUTS:
            del _LAYOUTS[next(iter(_LAYOUTS))]
        command, self._batches, self._shared = layout
        return command

    def process(self, output: list[str]) -> list[Any] | Unreadable:
        try:
            return self._answers(output)
        except FactProcessError as exc:
            return Unreadable(str(exc), forged=isinstance(exc, ForgedSection))

    def _answers(self, output: list[str]) -> list[Any]:
        found = sections(_records(output), _MARKER).items()
        by_index = {int(index): lines for index, lines in found}
        expected = {first for index, first in self._shared.items() if index == first}
        expected |= set(self._batches)
        if set(by_index) != expected:
            raise FactProcessError(f"incomplete survey output: {joined(output)[-500:]!r}")
        answers: dict[int, Any] = {}
        for first, indexes in self._batches.items():
            fact = self._reads[first].fact
            kwargs_list = [self._reads[i].kwargs for i in indexes]
            values = fact.batch_process(by_index[first], kwargs_list)  # type: ignore[attr-defined]
            answers.update(zip(indexes, values, strict=True))
        result = []
        for index, read in enumerate(self._reads):
            if index in answers:
                result.append(answers[index])
            else:
                fact = read.fact()
                lines = by_index[self._shared[index]]
                result.append(fact.process(lines) if lines else fact.default())
        return result


def host_survey(reads: list[Read], answers: list[Any]) -> HostSurvey:
    """The ``HostSurvey`` of a survey's answers (TypeError: a read names no field of it)."""
    single: dict[str, Any] = {}
    per_path: dict[str, dict[str, Any]] = {name: {} for name in PER_PATH}
    for read, answer in zip(reads, answers, strict=True):
        if read.name in PER_PATH:
            per_path[read.name][read.kwargs["path"]] = answer
        else:
            single[read.name] = answer
    return HostSurvey(**single, **per_path)
