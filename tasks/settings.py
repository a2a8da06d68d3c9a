"""Inventory settings: how a concern declares its keys, and validation of host data.

Every ``tasks/`` module declares its own keys as a tuple of :class:`Setting` (key, default,
meaning, check). ``tasks.config`` gathers them; the README table is generated from the
same tuples, so documentation and code cannot drift apart.

Checks return ``None`` when the value is fine, otherwise a phrase that says what would be
valid ("a list of user names"). The error message names the host, the key and the value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Check = Callable[[Any], "str | None"]


@dataclass(frozen=True)
class Setting:
    key: str
    default: Any
    meaning: str
    check: Check


def any_value(_value: Any) -> str | None:
    return None


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def string(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "a non-empty string"


def optional(check: Check) -> Check:
    def _check(value: Any) -> str | None:
        if value is None:
            return None
        problem = check(value)
        return f"{problem}, or None" if problem else None

    return _check


def one_of(*choices: str) -> Check:
    def _check(value: Any) -> str | None:
        return None if value in choices else "one of " + ", ".join(repr(c) for c in choices)

    return _check


def http_url(value: Any) -> str | None:
    valid = isinstance(value, str) and re.match(r"^https?://[^/\s]+(/\S*)?$", value)
    return None if valid else "an http:// or https:// URL"


def absolute_path(value: Any) -> str | None:
    valid = isinstance(value, str) and value.startswith("/") and not re.search(r"\s", value)
    return None if valid else "an absolute path without spaces"


def fingerprint(value: Any) -> str | None:
    valid = isinstance(value, str) and re.fullmatch(r"[0-9A-Fa-f]{40}", value)
    return None if valid else "40 hexadecimal digits (an OpenPGP v4 fingerprint)"


def count(value: Any) -> str | None:
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if valid else "a whole number >= 0"


_NAME = re.compile(r"^[a-z_][a-z0-9_-]*[$]?$")


def list_of(item_check: Check, what: str) -> Check:
    def _check(value: Any) -> str | None:
        if not isinstance(value, (list, tuple)):
            return f"a list of {what}"
        for item in value:
            if item_check(item) is not None:
                return f"a list of {what} ({item!r} is not one)"
        return None

    return _check


def user_name(value: Any) -> str | None:
    valid = isinstance(value, str) and len(value) <= 32 and _NAME.match(value)
    return None if valid else "a POSIX user name"


def package_name(value: Any) -> str | None:
    valid = isinstance(value, str) and re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", value)
    return None if valid else "a Debian package name"
