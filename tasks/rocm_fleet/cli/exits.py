"""The exit statuses of every ``rocm-fleet`` command (``EPILOG``) and the commands' shape."""

import enum
import os
import sys
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import click


class Exit(enum.IntEnum):
    OK = 0
    FINDINGS = 1
    NOT_CHECKED = 2
    USAGE = 4
    BROKEN_PIPE = 141


class UsageError(Exception):
    """A problem the user can fix (a missing file, a bad option): one line, exit status 4."""


def problem_lines(text: str) -> list[str]:
    """Bad input as one line per problem, whitespace collapsed."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()] or [""]


def print_problems(command: str, lines: Iterable[str]) -> None:
    """Every command's shape for bad input: ``COMMAND: PROBLEM``, one line each, on stderr."""
    for line in lines:
        print(f"{command}: {line}", file=sys.stderr)


#: the scheme in one line, for every command's ``--help`` (its epilog)
EPILOG = (
    "exit status: 0 clean; 1 findings (something checked is not as it should be); "
    "2 could not check (unreachable, refused host key, network), nothing found wrong; "
    "4 bad input (an option, the inventory, a setting: one line on stderr)"
)


def epilog(details: str = "") -> str:
    """The scheme, then what its statuses mean for one command."""
    return f"{EPILOG}. {details}" if details else EPILOG


def described(doc: str | None) -> str | None:
    """A module docstring as --help: after its first line, before "Exit status", unquoted."""
    if not doc or "\n\n" not in doc:
        return None
    return doc.split("\n\n", 1)[1].rsplit("\n\nExit status", 1)[0].replace("``", "")


def worst(statuses: Iterable[int]) -> Exit:
    """One status for several: bad input, then findings, then could-not-check, then clean."""
    found = set(statuses)
    return next((s for s in (Exit.USAGE, Exit.FINDINGS, Exit.NOT_CHECKED) if s in found), Exit.OK)


def option(*decls: str, **attrs: Any) -> click.Option:
    """``click.Option``, its flags given as ``add_argument`` takes them."""
    return click.Option(list(decls), **attrs)


class Command(click.Command):
    """A subcommand: ``run(args) -> exit status``; ``exclusive`` options; ``usage`` line;
    ``gevent``: the process monkey-patched first, as pyinfra's CLI has it (many hosts at once)."""

    def __init__(self, name: str, run: Callable[[Any], int], exclusive: tuple[str, ...] = (),
                 usage: str | None = None, gevent: bool = False, **attrs: Any) -> None:  # fmt: skip
        super().__init__(name, callback=self._run, **attrs)
        self.run, self.exclusive, self.usage, self.gevent = run, exclusive, usage, gevent

    def _run(self, **options: Any) -> int:
        ctx = click.get_current_context()
        # (click fills ``options`` in the order the command line gave them)
        given = [name for name in options if name in self.exclusive and options[name]]
        if len(given) > 1:
            flags = [f"--{name.replace('_', '-')}" for name in given]
            raise click.UsageError(f"argument {flags[1]}: not allowed with argument {flags[0]}")
        if self.gevent:  # before any socket or thread
            from rocm_fleet.engine.context import patch_as_cli

            patch_as_cli()
        return invoke(ctx, self.run, SimpleNamespace(**options, passed_on=ctx.obj or []))

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return [self.usage] if self.usage else super().collect_usage_pieces(ctx)


def invoke(ctx: click.Context, run: Callable[[Any], int], args: Any) -> int:
    """``run(args)``'s exit status; a ``UsageError`` a line per problem (4), a closed pipe 141."""
    try:
        status = int(run(args))
        sys.stdout.flush()
        return status
    except UsageError as exc:
        print_problems(" ".join(ctx.command_path.split()[:2]), problem_lines(str(exc)))
        return Exit.USAGE
    except BrokenPipeError:
        # The reader has gone: point stdout at devnull so the flush at exit doesn't raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.BROKEN_PIPE
