"""A host's data validated in one pass of pydantic (``TypeAdapter(Settings)``): every bad key
is one ``PydanticCustomError`` of type ``rocm_fleet_setting`` whose message names the host,
the key, the value, where the inventory set it and what would be valid (or which setting an
unknown key is probably a slip for); then the settings another one requires."""

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
    """The line that says ``key``'s ``value`` is bad: ``valid`` says what would be valid ("a
    list of user names"), or is a whole suggestion ("did you mean ..."); ``meant``, the value
    a ``--data`` of the wrong shape probably meant, gives the ``--data`` that passes it."""
    said = valid if valid.startswith("did you mean") else f"expected {valid}"
    # A bad value of a secret's source may be the secret itself: never shown.
    shown = shown_value(key, without_credentials(value))
    hint = ""
    if meant is not None and origin is not None and origin(key) == "--data":
        hint = f"; on the command line: --data '{key}={json.dumps(meant)}'"
    return f"{host}: inventory key {key!r} has value {shown}{_where(origin, key)}; {said}{hint}"


def without_credentials(value: Any) -> Any:
    """``value`` with a URL's user and password (up to the authority's last ``@``, RFC 3986)
    replaced by ``***``."""
    if isinstance(value, str):
        return re.sub(r"(?<=://)[^/?#\s]*@", "***@", value)
    return value


def _where(origin: Origin | None, key: str) -> str:
    found = origin(key) if origin else None
    return f" (set in {found})" if found else ""


def _key_problems(data: Mapping[str, Any], host: str, origin: Origin | None) -> list[Any]:
    """Renamed keys, near-misses of a setting, and required ones not set."""
    problems = []
    for key in data:
        if key in SETTINGS or key.startswith(("_", "ssh_")):
            continue
        # Where a key was set is looked up for a problem only (each lookup reads the file).
        if key in RENAMED:
            where = _where(origin, key)
            line = f"{host}: inventory key {key!r}{where} was renamed to {RENAMED[key]!r}"
        elif near := near_misses(key):
            # Any other key may be another deploy's: only a near-miss is taken for a typo.
            where = _where(origin, key)
            line = f"{host}: unknown inventory key {key!r}{where}: did you mean {_or(near)}?"
        else:
            continue
        problems.append((key, data[key], line))
    for key, what in REQUIRED.items():
        if key not in data:
            line = f"{host}: inventory key {key!r} is required and not set: set it to {what}"
            problems.append((key, None, line))
    return [_error(key, value, line) for key, value, line in problems]


def _error(key: str, value: Any, line: str) -> Any:
    """The error of ``key``, its message ``line``."""
    error = PydanticCustomError("rocm_fleet_setting", "{line}", {"line": line})
    return {"type": error, "loc": (key,), "input": value}


def _host_data(data: Any, handler: Callable[[Any], Settings], info: ValidationInfo) -> Settings:
    """Every problem of a host's data at once (a fleet's inventory is fixed in one round,
    not one key per run), then the settings another one requires."""
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
                f"{getattr(settings, switch)!r}{_where(origin, switch)} and not set: "
                f"set it to {what}"
            )
            raise ValidationError.from_exception_data("Settings", [_error(key, None, line)])
    return settings


_SCHEMA = TypeAdapter(Annotated[Settings, WrapValidator(_host_data)])


def validated(
    data: Mapping[str, Any], host: str = "host", origin: Origin | None = None
) -> Settings:
    """``data``'s settings (other keys ignored), checked, normalised and with defaults
    applied; a ValidationError with one error for each bad key of ``host``, its message the
    line that says so (``origin`` names where the inventory set a key)."""
    return _SCHEMA.validate_python(data, context={"host": host, "origin": origin})


def _or(names: tuple[str, ...]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def schema_adapter() -> TypeAdapter[Settings]:
    """pydantic's view of ``Settings``, which validates and writes the JSON Schema."""
    return _SCHEMA
