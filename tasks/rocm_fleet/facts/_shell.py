"""What fact commands share. Each is POSIX ``sh`` and exits 0; a tool's exit status comes back
as a trailer line ``__rc=N``, a missing tool or file as an ``__absent`` / ``__missing`` line."""

import contextlib
import re
import shlex

from pyinfra.api import FactBase
from pyinfra.api.exceptions import FactProcessError

from rocm_fleet import assets as files
from rocm_fleet.model.untrusted import visible

RC_PREFIX = "__rc="
ABSENT = "__absent"
MISSING = "__missing"
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def quote(value: str) -> str:
    """Shell-quote a non-empty string; TypeError otherwise."""
    if not isinstance(value, str) or not value:
        raise TypeError(f"expected a non-empty string, got {value!r}")
    return shlex.quote(value)


def split_rc(output: list[str]) -> tuple[list[str], int | None]:
    """(lines without the last ``__rc=N`` trailer, N or None); ANSI escapes removed."""
    lines = [_ANSI_RE.sub("", line) for line in output]
    for index in reversed(range(len(lines))):
        if lines[index].startswith(RC_PREFIX):
            with contextlib.suppress(ValueError):
                rc = int(lines[index][len(RC_PREFIX) :].strip())
                return lines[:index] + lines[index + 1 :], rc
    return lines, None


_YES = "__yes"


def yes_if(condition: str) -> str:
    """A :class:`Condition` command: prints yes when the shell ``condition`` holds."""
    return f"if {condition}; then echo {_YES}; fi; true"


class Condition(FactBase[bool]):
    """A yes/no fact (``command`` is ``yes_if(...)``); False on empty output."""

    default = bool

    def process(self, output: list[str]) -> bool:
        return _YES in [line.strip() for line in output]


def script_command(scripts: tuple[str, ...], args: tuple[str, ...] = ()) -> str:
    """``files/scripts/<name>.sh`` of each of ``scripts`` (the last runs) with ``args``, in a
    subshell with IFS and options as ``sh -c`` starts (a survey's sections share one shell): no
    ``sh`` process started (a survey runs several)."""
    body = "".join(files.text(f"scripts/{name}.sh") for name in scripts)
    return f"( IFS=' \t\n'; set +euf -- {' '.join(map(shlex.quote, args))}\n{body}\n)"


def print_file(path: str) -> str:
    """Shell printing the file ``path`` (a shell word) as ``cat`` does (a last line without a
    newline gets one), nothing when it can't be read: builtins only, no process started."""
    loop = 'while IFS= read -r _line || [ -n "$_line" ]; do printf "%s\\n" "$_line"; done'
    return f"{loop} 2>/dev/null <{path}"


class ForgedSection(FactProcessError):
    """An output naming a section twice: a section's text (a file, a tool's output) posing as
    another's."""


def sections(lines: list[str], prefix: str) -> dict[str, list[str]]:
    """The lines after each ``<prefix>NAME`` line, by NAME (those before the first dropped);
    ``ForgedSection`` when a NAME comes twice."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith(prefix):
            name = line[len(prefix) :].strip()
            if name in found:
                raise ForgedSection(f"output names section {visible(name)!r} twice: refused")
            current = found[name] = []
        elif current is not None:
            current.append(line)
    return found


def joined(lines: list[str]) -> str:
    return "\n".join(line.rstrip() for line in lines).strip()
