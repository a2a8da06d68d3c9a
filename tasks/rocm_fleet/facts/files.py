"""File facts."""

import base64
import binascii
import re
from typing import Any

from pyinfra.api import FactBase
from pyinfra.api.exceptions import FactProcessError

from rocm_fleet.facts._shell import (
    ABSENT,
    MISSING,
    Condition,
    print_file,
    quote,
    script_command,
    yes_if,
)
from rocm_fleet.model.answers import FileDigestDict, LastPull


class FileDigest(FactBase[FileDigestDict | None]):
    """Octal mode, SHA-256 and mtime (seconds) of a regular file; None when it isn't one."""

    def command(self, path: str) -> str:
        q = quote(path)
        return (
            f"if test -f {q}; then stat -c '%a %Y' {q} && sha256sum < {q}; else echo {ABSENT}; fi"
        )

    def process(self, output: list[str]) -> FileDigestDict | None:
        if not output or output[0].strip() == ABSENT or len(output) < 2:
            return None
        mode, _, mtime = output[0].strip().partition(" ")
        return {"mode": mode, "sha256": output[1].split()[0], "mtime": int(mtime or 0)}

    @staticmethod
    def batch_command(kwargs_list: list[dict[str, Any]]) -> str:
        words = " ".join(quote(kwargs["path"]) for kwargs in kwargs_list)
        return (
            f'set --; for f in {words}; do if test -f "$f"; then set -- "$@" "$f"; fi; done; '
            'if [ $# -gt 0 ]; then stat -c \'%a %Y %n\' -- "$@"; sha256sum -- "$@"; fi; set --'
        )

    @staticmethod
    def batch_process(output: list[str], kwargs_list: list[dict[str, Any]]) -> list[Any]:
        stats: dict[str, tuple[str, int]] = {}
        sums: dict[str, str] = {}
        for line in output:
            found = _SHA256_LINE.match(line)
            if found:  # sha256sum escapes a name holding a backslash or newline, and says so
                name = found["name"]
                if found["escaped"]:
                    name = _UNESCAPE.sub(lambda m: "\n" if m[1] == "n" else m[1], name)
                sums[name] = found["sha256"]
            else:
                mode, _, rest = line.partition(" ")
                mtime, _, name = rest.partition(" ")
                if mode.isdigit() and mtime.isdigit():
                    stats[name] = (mode, int(mtime))
        return [
            {"mode": stats[p][0], "sha256": sums[p], "mtime": stats[p][1]}
            if p in stats and p in sums
            else None
            for p in (kwargs["path"] for kwargs in kwargs_list)
        ]


_UNESCAPE = re.compile(r"\\(.)")
_SHA256_LINE = re.compile(r"^(?P<escaped>\\?)(?P<sha256>[0-9a-f]{64}) [ *](?P<name>.*)$")


class FileText(FactBase[str | None]):
    """The text of the regular file ``path``, lines ending in a newline; None when it isn't one
    or is a link (never read through it). Read for ``--diff`` only."""

    def command(self, path: str) -> str:
        q = quote(path)
        return f"if test -f {q} && ! test -L {q}; then cat {q}; else echo {ABSENT}; fi"

    def process(self, output: list[str]) -> str | None:
        return None if output == [ABSENT] else "".join(f"{line}\n" for line in output)


class FileLines(FactBase[list[str] | None]):
    """pyinfra's ``FileContents`` answer (the file's lines; None when ``path`` doesn't exist or
    is empty), read as base64 so that a survey carries any byte and a last line without a
    newline."""

    def command(self, path: str) -> str:
        q = quote(path)
        return f"( test -e {q} && base64 {q} ) || echo {MISSING}"  # as FileContents reads

    def process(self, output: list[str]) -> list[str] | None:
        if output == [MISSING]:
            return None
        try:
            text = base64.b64decode("".join(output)).decode(errors="replace")
        except binascii.Error as exc:
            raise FactProcessError(f"file contents not in base64: {exc}") from None
        lines = text.split("\n")  # as pyinfra splits a command's output
        return lines[:-1] if text.endswith("\n") else lines


class DirectoryExists(Condition):
    """Whether ``path`` is a directory."""

    def command(self, path: str) -> str:
        return yes_if(f"test -d {quote(path)}")


class LockHeld(Condition):
    """Whether a process holds the flock(1) lock ``path`` (taken for an instant to look)."""

    def command(self, path: str) -> str:
        q = quote(path)
        return yes_if(f"test -e {q} && ! flock --nonblock {q} true 2>/dev/null")


class Ledger(FactBase[list[str]]):
    """The entries (one a line) of one of rocm-fleet's ledgers, in order; [] without it."""

    default = list

    def command(self, path: str) -> str:
        return f"{print_file(quote(path))}; true"

    def process(self, output: list[str]) -> list[str]:
        return [line.strip() for line in output if line.strip()]


class WritableByOthers(FactBase[str | None]):
    """The first directory above ``path`` breaking the safe path rule, else the first path under
    it (itself included) not root's alone, as ``OWNER MODE PATH`` (both blank where stat could
    not answer); None when none."""

    def command(self, path: str) -> str:
        return script_command(("safe-path", "writable-by-others"), (path,))

    def process(self, output: list[str]) -> str | None:
        found = [line.rstrip() for line in output if line.strip()]
        return found[0] if found else None

    @staticmethod
    def batch_command(kwargs_list: list[dict[str, Any]]) -> str:
        """The survey's reads of several paths in one script (one ``stat`` for them all)."""
        return script_command(
            ("safe-path", "writable-by-others"), tuple(kwargs["path"] for kwargs in kwargs_list)
        )

    @staticmethod
    def batch_process(output: list[str], kwargs_list: list[dict[str, Any]]) -> list[str | None]:
        if len(kwargs_list) == 1:
            return [WritableByOthers().process(output)]
        found: dict[int, list[str]] = {}
        current: list[str] = []
        for line in output:
            marker = _BATCH_PATH.match(line)
            if marker:
                current = found.setdefault(int(marker[1]), [])
            else:
                current.append(line)
        fact = WritableByOthers()
        return [fact.process(found.get(index, [])) for index in range(len(kwargs_list))]


_BATCH_PATH = re.compile(r"__path=([0-9]{1,4})$")


_PULL_RESULT = re.compile(r'rocm_fleet_pull_last_run\{result="([a-z-]{1,40})"\} 1')
_PULL_STARTED = re.compile(r"rocm_fleet_pull_last_run_timestamp_seconds ([0-9]{1,12})")


class PullStatus(FactBase[LastPull | None]):
    """The last pull's result and start time from its node_exporter textfile; None without it."""

    def command(self, path: str) -> str:
        q = quote(path)
        return (
            f"if test -f {q}; then grep -E '^rocm_fleet_pull_last_run(_timestamp_seconds)? ?[ {{]'"
            f" {q} || true; else echo {ABSENT}; fi"
        )

    def process(self, output: list[str]) -> LastPull | None:
        if output and output[0].strip() == ABSENT:
            return None
        result, started = "unknown", 0
        for line in output:
            if found := _PULL_RESULT.fullmatch(line.strip()):
                result = found[1]
            elif found := _PULL_STARTED.fullmatch(line.strip()):
                started = int(found[1])
        return LastPull(result=result, started=started)
