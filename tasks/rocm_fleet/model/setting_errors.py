"""A host's data validated in one pass of pydantic: one error per bad key, its message naming the
host, key, value, where it was set and what is valid (docs/decisions/refusing-a-host.md)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError, ValidationInfo, WrapValidator
from pydantic_core import PydanticCustomError

from rocm_fleet.model.secrets import shown_value
from rocm_fleet.model.settings import (
    OR_UNSET,
    RENAMED,
    REQUIRED,
    REQUIRED_WITH,
    SETTINGS,
    UNSET,
    Settings,
    near_misses,
)

#: Where the inventory set a key ("FILE line N", "--data"), None when unknown.
Origin = Callable[[str], "str | None"]


def bad_value(
    host: str, key: str, value: Any, valid: str, origin: Origin | None, meant: Any = None
) -> str:
    """The line that says ``key``'s ``value`` is bad: ``valid`` says what is valid, or is a
    suggestion ("did you mean ..."); ``meant``, what a ``--data`` probably meant."""
    said = valid if valid.startswith("did you mean") else f"expected {valid}"
    shown = shown_value(key, without_credentials(value))
    hint = ""
    if meant is not None and origin is not None and origin(key) == "--data":
        hint = f"; on the command line: --data '{key}={json.dumps(meant)}'"
    return f"{host}: inventory key {key!r} has value {shown}{set_in(origin, key)}; {said}{hint}"


def without_credentials(value: Any) -> Any:
    """``value`` with a URL's user and password (up to the authority's last ``@``) as ``***``."""
    if isinstance(value, str):
        return re.sub(r"(?<=://)[^/?#\s]*@", "***@", value)
    return value


def set_in(origin: Origin | None, key: str) -> str:
    """`` (set in FILE line N)`` for ``key``; empty when unknown."""
    found = origin(key) if origin else None
    return f" (set in {found})" if found else ""


def _key_problems(data: Mapping[str, Any], host: str, origin: Origin | None) -> list[Any]:
    """Renamed keys, near-misses of a setting, and required ones not set."""
    errors = []
    for key in data:
        if key in SETTINGS or key.startswith(("_", "ssh_")):
            continue
        if key in RENAMED:
            line = f"inventory key {key!r}{set_in(origin, key)} was renamed to {RENAMED[key]!r}"
        elif near := near_misses(key):
            line = f"unknown inventory key {key!r}{set_in(origin, key)}: did you mean {_or(near)}?"
        else:
            continue
        errors.append(_error(key, data[key], f"{host}: {line}"))
    for key, what in REQUIRED.items():
        if key not in data:
            line = f"{host}: inventory key {key!r} is required and not set: set it to {what}"
            errors.append(_error(key, None, line))
    return errors


def _error(key: str, value: Any, line: str) -> Any:
    error = PydanticCustomError("rocm_fleet_setting", "{line}", {"line": line})
    return {"type": error, "loc": (key,), "input": value}


def _host_data(data: Any, handler: Callable[[Any], Settings], info: ValidationInfo) -> Settings:
    """Every problem of a host's data at once, then the settings another one requires."""
    host, origin = (info.context or {}).get("host", "host"), (info.context or {}).get("origin")
    errors = _key_problems(data, host, origin)
    try:
        settings = handler({key: value for key, value in data.items() if key in SETTINGS})
    except ValidationError as exc:
        for error in exc.errors():
            key, context = error["loc"][0], error.get("ctx") or {}
            valid = context.get("valid", error["msg"]) + (OR_UNSET if key in UNSET else "")
            problem = bad_value(host, key, data[key], valid, origin, context.get("meant"))
            errors.append(_error(key, data[key], problem))
    if errors:
        raise ValidationError.from_exception_data("Settings", errors)
    for key, (switch, what) in REQUIRED_WITH.items():
        if getattr(settings, switch) and getattr(settings, key) is None:
            line = (
                f"{host}: inventory key {key!r} is required with {switch}: "
                f"{getattr(settings, switch)!r}{set_in(origin, switch)} and not set: "
                f"set it to {what}"
            )
            raise ValidationError.from_exception_data("Settings", [_error(key, None, line)])
    return settings


#: pydantic's view of ``Settings``, which validates and writes the JSON Schema.
SCHEMA = TypeAdapter(Annotated[Settings, WrapValidator(_host_data)])


def validated(
    data: Mapping[str, Any], host: str = "host", origin: Origin | None = None
) -> Settings:
    """``data``'s settings (other keys ignored), checked, with defaults; a ValidationError
    with one error per bad key of ``host`` (``origin`` names where a key was set)."""
    return SCHEMA.validate_python(data, context={"host": host, "origin": origin})


def _or(names: tuple[str, ...]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
