"""Many facts in one command: one SSH round trip instead of one per fact.

A :class:`Read` names a fact and its arguments under a key; :class:`Survey` runs each read's
command in a section of one shell script and parses each section with that fact's own
``process``, so a fact's answer is the same whether it is read alone or in a survey. A fact
read many times over (a digest per managed file) may read them all in one section: it
defines ``batch_command(kwargs_list)`` and ``batch_process(output, kwargs_list)``, which
answer what each read alone would, with a process per batch instead of one per read. The
preflight reads everything the plan of a converged host needs in one survey and remembers
each answer (``engine.factcache``), so planning asks the host nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyinfra.api import FactBase
from pyinfra.api.exceptions import FactProcessError
from typing_extensions import override

from rocm_fleet.facts._shell import joined

_MARKER = "__survey_section="
_RECORD = "\x1e"  # what the command turns newlines into (ASCII RS)


@dataclass(frozen=True)
class Read:
    """One fact of a survey: its key in the result, the fact class, its arguments."""

    key: str
    fact: type[FactBase]
    kwargs: dict[str, Any] = field(default_factory=dict)

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


class Survey(FactBase["dict[str, Any]"]):
    """
    The answers of several facts, read in one command: ``{read.key: answer}``. A fact
    whose output is empty gets its ``default`` (as pyinfra does); a section that ends
    with an error doesn't stop the others (each section's stderr is dropped).

    .. code:: python

        {"packages": {"curl": "7.88.1-10+deb12u14", ...}, "kernel": "6.1.0-28-amd64", ...}
    """

    @override
    def command(self, reads: list[Read] | tuple[Read, ...]) -> str:
        self._reads = list(reads)
        if len({read.key for read in self._reads}) != len(self._reads):
            raise ValueError("survey keys must be unique")
        # A batch is keyed by its first read's index: its reads' answers come from one section.
        self._batches: dict[int, list[int]] = {}
        first_of: dict[type[FactBase], int] = {}
        sections = []
        for index, read in enumerate(self._reads):
            if hasattr(read.fact, "batch_command"):
                first = first_of.setdefault(read.fact, index)
                self._batches.setdefault(first, []).append(index)
            else:
                sections.append(f"echo {_MARKER}{index}; {{ {_command(read)}; }} 2>/dev/null")
        for first, indexes in self._batches.items():
            fact = self._reads[first].fact
            command = fact.batch_command([self._reads[i].kwargs for i in indexes])  # type: ignore[attr-defined]
            sections.append(f"echo {_MARKER}{first}; {{ {command}; }} 2>/dev/null")
        # All of it as one line (records separated by RS): pyinfra reads a command's output
        # line by line through paramiko, whose cost per line was most of reading a survey of
        # some 360 lines (the package listing alone is one line per package).
        return f"{{ {'; '.join(sections)}; }} | tr '\\n' '\\036'; echo"

    @override
    def process(self, output: list[str]) -> dict[str, Any]:
        sections: dict[int, list[str]] = {}
        current: list[str] | None = None
        for line in _records(output):
            if line.startswith(_MARKER):
                current = sections.setdefault(int(line[len(_MARKER) :]), [])
            elif current is not None:
                current.append(line)
        batched = {index for indexes in self._batches.values() for index in indexes}
        expected = {i for i in range(len(self._reads)) if i not in batched} | set(self._batches)
        if set(sections) != expected:
            raise FactProcessError(f"incomplete survey output: {joined(output)[-500:]!r}")
        answers: dict[int, Any] = {}
        for first, indexes in self._batches.items():
            fact = self._reads[first].fact
            kwargs_list = [self._reads[i].kwargs for i in indexes]
            values = fact.batch_process(sections[first], kwargs_list)  # type: ignore[attr-defined]
            answers.update(zip(indexes, values, strict=True))
        result = {}
        for index, read in enumerate(self._reads):
            if index in answers:
                result[read.key] = answers[index]
            else:
                fact = read.fact()
                lines = sections[index]
                result[read.key] = fact.process(lines) if lines else fact.default()
        return result
