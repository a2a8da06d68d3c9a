"""What every fact command here shares: quoting, exit-status trailers, markers, Python probes.

Every fact runs a POSIX ``sh`` command (dash on Debian) that always exits 0: pyinfra marks
a host failed when a fact command exits non-zero, and most tools probed here exit non-zero
for states we want to *report* (no GPU, Secure Boot unsupported, key not enrolled ...).
Where a tool's exit status matters it is printed as a trailer line ``__rc=N`` and parsed
back. Missing tools and files are reported with an ``__absent`` / ``__missing`` marker line
instead of pyinfra's ``requires_command``, because ``rocminfo`` usually lives in
``/opt/rocm/bin`` (not on ``PATH``) and pyinfra turns a missing ``requires_command`` binary
into a warning during execute.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from pyinfra.api import FactBase
from typing_extensions import override

from rocm_fleet import assets as files

RC_PREFIX = "__rc="
ABSENT = "__absent"
MISSING = "__missing"
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def quote(value: str) -> str:
    """Shell-quote a non-empty string argument (a fact argument that is empty is a bug)."""
    if not isinstance(value, str) or not value:
        raise TypeError(f"expected a non-empty string, got {value!r}")
    return shlex.quote(value)


def strip_ansi(line: str) -> str:
    return _ANSI_RE.sub("", line)


def split_rc(output: list[str]) -> tuple[list[str], int | None]:
    """Remove the ``__rc=N`` trailer (the last one wins) and return (lines, rc)."""
    lines = [strip_ansi(line) for line in output]
    rc = None
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith(RC_PREFIX):
            try:
                rc = int(lines[index][len(RC_PREFIX) :].strip())
            except ValueError:
                continue
            lines = lines[:index] + lines[index + 1 :]
            break
    return lines, rc


_YES = "__yes"


def yes_if(condition: str) -> str:
    """A command for a :class:`Condition`: says yes when the shell ``condition`` holds."""
    return f"if {condition}; then echo {_YES}; fi; true"


class Condition(FactBase[bool]):
    """A yes/no fact: whether a shell condition (its ``command`` is ``yes_if(...)``) holds on
    the host; False when it doesn't, or the output is empty."""

    @staticmethod
    def default() -> bool:
        return False

    @override
    def process(self, output: list[str]) -> bool:
        return _YES in [line.strip() for line in output]


def script_command(scripts: tuple[str, ...], args: tuple[str, ...] = ()) -> str:
    """``sh -c`` with the package's ``files/scripts/<name>.sh`` files, in order (functions
    first, the script last), and ``args`` as its positional parameters."""
    body = "".join(files.text(f"scripts/{name}.sh") for name in scripts)
    return " ".join(["sh", "-c", shlex.quote(body), scripts[-1], *map(shlex.quote, args)])


def joined(lines: list[str]) -> str:
    return "\n".join(line.rstrip() for line in lines).strip()


def python_command(python: str, body: str, timeout: int) -> str:
    """Run ``python body`` with a timeout, printing its exit status; ``__absent`` when the
    interpreter doesn't exist."""
    py = quote(python)
    return (
        f"if command -v {py} >/dev/null 2>&1; then "
        f'timeout {timeout} {py} {body} </dev/null 2>&1; echo "{RC_PREFIX}$?"; '
        f"else echo {ABSENT}; fi"
    )


def python_json(output: list[str], marker: str) -> tuple[Any, list[str], int | None]:
    """(JSON after ``marker`` or None, the lines, exit status) of a ``python_command``;
    ``ABSENT`` in place of the JSON when the interpreter doesn't exist."""
    lines, rc = split_rc(output)
    if rc is None and any(line.strip() == ABSENT for line in lines):
        return ABSENT, lines, rc
    for line in reversed(lines):
        if line.startswith(marker):
            try:
                return json.loads(line[len(marker) :]), lines, rc
            except ValueError:
                return None, lines, rc
    return None, lines, rc
