"""Secrets a host needs (apt's and pip's credentials), read where pyinfra runs from the source
a setting names (``env:VARIABLE`` or a 0600 file); a ``Secret`` is never shown."""

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: Settings naming a secret's source; an error never shows their values.
SECRET_SOURCE_SETTINGS = frozenset({"rocm_apt_auth", "rocm_pip_netrc"})


def shown_value(key: str, value: object) -> str:
    """``repr(value)`` for an error about ``key``; nothing of it for a secret source's."""
    if key in SECRET_SOURCE_SETTINGS and value is not None:
        return "<not shown: it may be the secret itself>"
    return repr(value)


class SecretError(ValueError):
    """A secret's source that can't serve; the message names it, never the secret."""


@dataclass(frozen=True, slots=True, repr=False)
class Secret:
    """Text that is never shown: ``reveal()`` gives it to the one writer that needs it."""

    _text: str

    def reveal(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


def check_private(path: str) -> None:
    """Raises SecretError unless ``path`` can be read and is 0600 or stricter."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError as exc:
        raise SecretError(f"can't read {path}: {exc.strerror}") from None
    if mode & 0o077:
        raise SecretError(f"{path} is readable by others (mode {mode:04o}): chmod 600 {path}")


def read_secret(source: str, environ: Mapping[str, str] | None = None) -> Secret:
    """The netrc-style secret ``source`` names (``env:NAME`` or a path); raises SecretError
    for an unset variable, a missing or non-private file, or no ``machine`` entry."""
    environ = os.environ if environ is None else environ
    if source.startswith("env:"):
        name = source[4:]
        text = environ.get(name, "")
        where = f"the environment variable {name}"
        if not text.strip():
            raise SecretError(f"{where} is not set (or empty) where pyinfra runs")
    else:
        where = source
        check_private(source)
        try:
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
