"""The exit statuses of every ``rocm-fleet`` command: one scheme, so a cron job or a CI step
reads any of them the same way.

=====  ====================================================================================
0      clean: everything asked about was checked and is as it should be (or the command did
       what it was asked to)
1      findings: something checked is not as it should be (a host drifted, a check failed,
       a matrix row is wrong, a bundle file could not be verified), each named
2      could not check: a host was unreachable or refused (its host key), the network or
       upstream did not answer; and nothing checked was found wrong (a finding wins: 1)
4      bad input: a bad option or argument, a missing or broken inventory, an invalid
       setting; one line on stderr, nothing checked and nothing changed
141    the reader of the output went away (``| head``), as the shell reports SIGPIPE
=====  ====================================================================================

4 is pytest's own status for a usage error, and what ``rocm-fleet check`` always said; 2 is
left to what it means for the audit and ``matrix check``: the answer is incomplete.
"""

from __future__ import annotations

import argparse
import enum
import sys
from collections.abc import Iterable
from typing import NoReturn


class Exit(enum.IntEnum):
    OK = 0
    FINDINGS = 1
    NOT_CHECKED = 2
    USAGE = 4
    BROKEN_PIPE = 141


#: the scheme in one line, for every command's ``--help`` (argparse's epilog)
EPILOG = (
    "exit status: 0 clean; 1 findings (something checked is not as it should be); "
    "2 could not check (unreachable, refused host key, network), nothing found wrong; "
    "4 bad input (an option, the inventory, a setting: one line on stderr)"
)


def epilog(details: str = "") -> str:
    """The scheme, then what its statuses mean for one command."""
    return f"{EPILOG}. {details}" if details else EPILOG


def described(doc: str | None) -> str | None:
    """A command's --help description from its module's docstring: the body without the
    first line, its "Exit status" paragraph (the epilog states it) and reST markup."""
    if not doc or "\n\n" not in doc:
        return None
    return doc.split("\n\n", 1)[1].rsplit("\n\nExit status", 1)[0].replace("``", "")


def worst(statuses: Iterable[int]) -> Exit:
    """One status for several outcomes: bad input, then findings, then could-not-check, then
    clean (a finding is news even when another host did not answer)."""
    found = set(statuses)
    for status in (Exit.USAGE, Exit.FINDINGS, Exit.NOT_CHECKED):
        if status in found:
            return status
    return Exit.OK


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with its usage errors given the scheme's status 4 (argparse's own is
    2, which here means "could not check"); subcommands' parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(Exit.USAGE, f"{self.prog}: error: {message}\n")
