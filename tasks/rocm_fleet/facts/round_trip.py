"""Many facts in one command: one SSH round trip instead of one per fact
(docs/decisions/one-survey.md).

:class:`Survey` runs each :class:`Read`'s command in a section of one script and parses it with
the fact's own ``process``, answering in the reads' order, as the fact alone would. A fact read
per path may answer all its reads in one section (``batch_command(kwargs_list)``,
``batch_process(output, kwargs_list)``); facts with the same command share one section.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyinfra.api import FactBase
from pyinfra.api.exceptions import FactProcessError
from typing_extensions import override

from rocm_fleet.facts._shell import joined
from rocm_fleet.model.host_survey import PER_PATH, HostSurvey

_MARKER = "__survey_section="
_RECORD = "\x1e"  # what the command turns newlines into (ASCII RS)


@dataclass(frozen=True)
class Read:
    """One fact of a survey: the field of ``HostSurvey`` it fills (for a field read once per
    path, ``PER_PATH``, the path is its ``path`` argument), the fact class, its arguments."""

    name: str
    fact: type[FactBase]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """What the read answers, once in a survey: its name, and the path of a per-path one."""
        return f"{self.name} {self.kwargs['path']}" if self.name in PER_PATH else self.name

    def __repr__(self) -> str:  # what pyinfra's debug log prints for the survey's arguments
        return self.key


def _records(output: list[str]) -> list[str]:
    """The command's lines back from its one line (the last newline became a trailing RS)."""
    records = [record for line in output for record in line.split(_RECORD)]
    return records[:-1] if records and records[-1] == "" else records


def _command(read: Read) -> str:
    """A read's shell command, whether its fact's ``command`` is a method or a string (as
    pyinfra allows for a fact without arguments)."""
    command = read.fact().command
    return command if isinstance(command, str) else str(command(**read.kwargs))


class Survey(FactBase["list[Any]"]):
    """
    The answers of several facts, read in one command: a list in the reads' order. A fact
    whose output is empty gets its ``default`` (as pyinfra does); a section that ends
    with an error doesn't stop the others (each section's stderr is dropped).

    .. code:: python

        [{"curl": "7.88.1-10+deb12u14", ...}, "6.1.0-28-amd64", ...]
    """

    @override
    def command(self, reads: list[Read] | tuple[Read, ...]) -> str:
        self._reads = list(reads)
        if len({read.key for read in self._reads}) != len(self._reads):
            raise ValueError("survey keys must be unique")
        # A batch is keyed by its first read's index: its reads' answers come from one section.
        self._batches: dict[int, list[int]] = {}
        first_of: dict[type[FactBase], int] = {}
        # Reads of different facts with the same command (one listing that answers several
        # questions) share the first one's section: read -> the read whose section it is.
        self._shared: dict[int, int] = {}
        section_of: dict[str, int] = {}
        sections = []
        for index, read in enumerate(self._reads):
            if hasattr(read.fact, "batch_command"):
                first = first_of.setdefault(read.fact, index)
                self._batches.setdefault(first, []).append(index)
                continue
            command = _command(read)
            self._shared[index] = section_of.setdefault(command, index)
            if self._shared[index] == index:
                sections.append(f"echo {_MARKER}{index}; {{ {command}; }} 2>/dev/null")
        for first, indexes in self._batches.items():
            fact = self._reads[first].fact
            command = fact.batch_command([self._reads[i].kwargs for i in indexes])  # type: ignore[attr-defined]
            sections.append(f"echo {_MARKER}{first}; {{ {command}; }} 2>/dev/null")
        # All of it as one line (records separated by RS): pyinfra reads a command's output
        # line by line through paramiko, whose cost per line was most of reading a survey of
        # some 360 lines (the package listing alone is one line per package).
        return f"{{ {'; '.join(sections)}; }} | tr '\\n' '\\036'; echo"

    @override
    def process(self, output: list[str]) -> list[Any]:
        sections: dict[int, list[str]] = {}
        current: list[str] | None = None
        for line in _records(output):
            if line.startswith(_MARKER):
                current = sections.setdefault(int(line[len(_MARKER) :]), [])
            elif current is not None:
                current.append(line)
        expected = {first for index, first in self._shared.items() if index == first}
        expected |= set(self._batches)
        if set(sections) != expected:
            raise FactProcessError(f"incomplete survey output: {joined(output)[-500:]!r}")
        answers: dict[int, Any] = {}
        for first, indexes in self._batches.items():
            fact = self._reads[first].fact
            kwargs_list = [self._reads[i].kwargs for i in indexes]
            values = fact.batch_process(sections[first], kwargs_list)  # type: ignore[attr-defined]
            answers.update(zip(indexes, values, strict=True))
        result = []
        for index, read in enumerate(self._reads):
            if index in answers:
                result.append(answers[index])
            else:
                fact = read.fact()
                lines = sections[self._shared[index]]
                result.append(fact.process(lines) if lines else fact.default())
        return result


def host_survey(reads: list[Read], answers: list[Any]) -> HostSurvey:
    """The record of a survey's answers: each in the field its read names (TypeError: a
    read names no field of ``HostSurvey``)."""
    single: dict[str, Any] = {}
    per_path: dict[str, dict[str, Any]] = {name: {} for name in PER_PATH}
    for read, answer in zip(reads, answers, strict=True):
        if read.name in PER_PATH:
            per_path[read.name][read.kwargs["path"]] = answer
        else:
            single[read.name] = answer
    return HostSurvey(**single, **per_path)
