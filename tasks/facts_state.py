"""(to be merged into tasks/facts.py) Small state facts behind tasks.operations."""

from __future__ import annotations

import shlex

from pyinfra.api import FactBase


class KeyringFingerprints(FactBase[list[str] | None]):
    """
    Primary-key fingerprints in a binary (dearmored) keyring, None when the file is missing.

    .. code:: python

        ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"]
    """

    def command(self, path: str) -> str:
        q = shlex.quote(path)
        return (
            f"if ! test -e {q}; then echo __missing; "
            f"elif command -v gpg >/dev/null; then "
            f"gpg --batch --with-colons --show-keys {q} 2>/dev/null || true; "
            f"else echo __nogpg; fi"
        )

    def process(self, output: list[str]) -> list[str] | None:
        if "__missing" in output:
            return None
        fingerprints, primary = [], False
        for line in output:
            fields = line.split(":")
            if fields[0] in ("pub", "sub"):
                primary = fields[0] == "pub"
            elif fields[0] == "fpr" and primary and len(fields) > 9:
                fingerprints.append(fields[9].upper())
                primary = False
        return fingerprints


class StaleAgainst(FactBase[bool]):
    """
    True when ``stamp`` is missing or any of ``inputs`` is newer than it.
    """

    def command(self, stamp: str, inputs: list[str]) -> str:
        s = shlex.quote(stamp)
        newer = " || ".join(f"test {shlex.quote(i)} -nt {s}" for i in inputs) or "false"
        return f"if ! test -e {s} || {newer}; then echo stale; else echo fresh; fi"

    def process(self, output: list[str]) -> bool:
        return "stale" in output


class UserGroups(FactBase[list[str] | None]):
    """
    Group names of ``user`` (primary and supplementary), None when there is no such user.
    """

    def command(self, user: str) -> str:
        q = shlex.quote(user)
        return f"if id {q} >/dev/null 2>&1; then id -nG {q}; else echo __nouser; fi"

    def process(self, output: list[str]) -> list[str] | None:
        text = " ".join(output).strip()
        return None if text == "__nouser" else text.split()
