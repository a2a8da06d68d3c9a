"""Secrets a host needs (apt's and pip's credentials), read where pyinfra runs.

A setting names where a secret comes from (``env:VARIABLE``, or a file of mode 0600), never
the secret: inventories are shared and kept in git. ``read_secret`` checks the source and
returns a ``Secret``, whose ``repr`` and ``str`` are masked, so neither an error, a log line
nor pyinfra's output of an operation's arguments can show it; the deploy writes it to the
host through an upload (``operations.files.uploaded_file``), never on a command line.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

#: The settings that name where a secret comes from. A value given to one that is not such a
#: source may be the secret itself, pasted in by mistake: an error never shows it.
SECRET_SOURCE_SETTINGS = frozenset({"rocm_apt_auth", "rocm_pip_netrc"})


def shown_value(key: str, value: object) -> str:
    """``value`` as an error about setting ``key`` may show it: ``repr`` of it, unless
    ``key`` is a secret source's (then neither the value nor its length)."""
    if key in SECRET_SOURCE_SETTINGS and value is not None:
        return "<not shown: it may be the secret itself>"
    return repr(value)


class SecretError(ValueError):
    """A secret's source that can't serve; the message names it, never the secret."""


class Secret:
    """Text that is never shown: ``reveal()`` gives it to the one writer that needs it."""

    __slots__ = ("_text",)

    def __init__(self, text: str):
        self._text = text

    def reveal(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other.reveal() == self._text

    def __hash__(self) -> int:
        return hash(self._text)


def read_secret(source: str, environ: Mapping[str, str] | None = None) -> Secret:
    """The secret ``source`` names (``env:NAME`` or a path), as netrc-style text: lines of
    ``machine HOST login USER password SECRET`` (netrc(5), apt_auth.conf(5)). SecretError
    when the variable is unset or empty, the file is missing or readable by others, or the
    text holds no ``machine`` entry."""
    environ = os.environ if environ is None else environ
    if source.startswith("env:"):
        name = source[4:]
        text = environ.get(name, "")
        where = f"the environment variable {name}"
        if not text.strip():
            raise SecretError(f"{where} is not set (or empty) where pyinfra runs")
    else:
        where = source
        try:
            mode = stat.S_IMODE(os.stat(source).st_mode)
            if mode & 0o077:
                raise SecretError(
                    f"{source} is readable by others (mode {mode:04o}): chmod 600 {source}"
                )
            text = Path(source).read_text()
        except OSError as exc:
            raise SecretError(f"can't read {source}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise SecretError(f"{source} is not text") from None
    if "machine" not in text.split():
        raise SecretError(
            f"{where} holds no 'machine HOST login USER password SECRET' line (netrc(5))"
        )
    return Secret(text if text.endswith("\n") else text + "\n")
