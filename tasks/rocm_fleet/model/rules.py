"""What a setting's value must be: a ``Rule`` (what is valid in words, the check, its JSON
Schema, the phrase for a value wrong in a known way), the few ways to build one (a grammar, a
choice, a whole number, optional, a list of, either) and the rules the settings use.

A ``Rule`` is a pydantic annotation: ``Annotated[list[str], list_of(USER_NAME, "user
names")]`` in ``model.settings`` makes pydantic run it on the value, collect its error with
the key and the value, and write its schema. The strings' grammars are ``model.grammar``'s,
matched whole.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticCustomError, core_schema

from rocm_fleet.model import grammar, matrix

# --- the rule and its builders ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Rule:
    """What a setting's value must be. ``valid``: what is valid, in words ("a list of user
    names"); ``accepts``: the check; ``schema``: its JSON Schema; ``explain``: for a value
    wrong in a known way, a phrase that says so instead of ``valid`` (None: ``valid``);
    ``normal``: the one spelling of a valid value (a fingerprint in upper case), so two
    spellings of one value never plan different things; ``meant``: for a value of the wrong
    shape, the value probably meant (``"alice"`` -> ``["alice"]``), for the hint;
    ``secret``: where a secret comes from, so a bad value may be the secret itself, given
    by mistake: an error never shows it."""

    valid: str
    accepts: Callable[[Any], bool]
    schema: dict[str, Any]
    explain: Callable[[Any], str | None] | None = None
    normal: Callable[[Any], Any] | None = None
    meant: Callable[[Any], Any] | None = None
    secret: bool = False

    def problem(self, value: Any) -> str | None:
        """None when ``value`` is valid, else what would be."""
        if self.accepts(value):
            return None
        return (self.explain(value) if self.explain else None) or self.valid

    def _validate(self, value: Any) -> Any:
        problem = self.problem(value)
        if problem is not None:
            raise PydanticCustomError("rocm_fleet_setting", "{valid}", {"valid": problem})
        return self.normal(value) if self.normal else value

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return core_schema.no_info_plain_validator_function(self._validate)

    def __get_pydantic_json_schema__(self, schema: Any, handler: Any) -> dict[str, Any]:
        return json.loads(json.dumps(self.schema))  # a copy pydantic may amend


def _string(pattern: str) -> dict[str, Any]:
    return {"type": "string", "pattern": f"^(?:{pattern})$"}


def grammar_rule(valid: str, pattern: str, **kwargs: Any) -> Rule:
    """A string matched whole by ``pattern`` (``grammar.full``)."""
    return Rule(valid, functools.partial(grammar.full, pattern), _string(pattern), **kwargs)


def checked(valid: str, check: Callable[[Any], bool], pattern: str, **kwargs: Any) -> Rule:
    """A string ``check`` (one of ``model.grammar``'s) accepts; ``pattern`` for editors."""
    return Rule(valid, check, _string(pattern), **kwargs)


def choice(*choices: str) -> Rule:
    return Rule(
        "one of " + ", ".join(repr(c) for c in choices),
        lambda value: value in choices,
        {"enum": list(choices)},
    )


def whole(minimum: int, maximum: int | None = None, valid: str | None = None) -> Rule:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum

    def accepts(value: Any) -> bool:
        number = isinstance(value, int) and not isinstance(value, bool)
        return number and value >= minimum and (maximum is None or value <= maximum)

    return Rule(valid or f"a whole number >= {minimum}", accepts, schema)


def optional(rule: Rule) -> Rule:
    """``rule``, or None (the setting left unset)."""

    def explain(value: Any) -> str:
        return f"{rule.problem(value)}; or leave it unset"

    return Rule(
        f"{rule.valid}; or leave it unset",
        lambda value: value is None or rule.accepts(value),
        {"anyOf": [rule.schema, {"type": "null"}]},
        explain,
        (lambda value: None if value is None else rule.normal(value)) if rule.normal else None,
        rule.meant,
        rule.secret,
    )


def _items_meant(value: Any) -> list[str]:
    """The names one string meant as a list: ``"alice, bob"`` and ``--data``'s
    ``rocm_users=[alice]`` (which reaches the inventory as the string ``"[alice]"``)."""
    text = value.strip().removeprefix("[").removesuffix("]")
    return [item.strip().strip("'\"") for item in text.split(",") if item.strip().strip("'\"")]


def list_of(item: Rule, what: str) -> Rule:
    def accepts(value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(item.accepts(v) for v in value)

    def explain(value: Any) -> str:
        if isinstance(value, str):
            # The commonest slip: one name, or names with commas, where a list belongs.
            return f"a list of {what}, written as a list even for one, e.g. {_items_meant(value)!r}"
        if not isinstance(value, (list, tuple)):
            return f"a list of {what}, e.g. ['...']"
        bad = next(v for v in value if not item.accepts(v))
        return f"a list of {what} ({bad!r} is not one)"

    return Rule(
        f"a list of {what}",
        accepts,
        {"type": "array", "items": item.schema},
        explain,
        meant=lambda value: _items_meant(value) if isinstance(value, str) else None,
    )


def either(valid: str, first: Rule, second: Rule, use_first: Callable[[Any], bool]) -> Rule:
    """``first`` for a value ``use_first`` picks (a URL), else ``second`` (a path, a name):
    the message is the one of the rule the value was meant for."""

    def explain(value: Any) -> str | None:
        return (
            first.problem(value) if use_first(value) else second.explain and second.problem(value)
        )

    return Rule(
        valid,
        lambda value: (first if use_first(value) else second).accepts(value),
        {"anyOf": [first.schema, second.schema]},
        explain,
    )


def _as_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _nonempty_string(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and value == value.strip()


def _quote_it(examples: str, example: str, key: str, what: str) -> Callable[[Any], str | None]:
    """A version typed as a number (``6.4`` in YAML or ``--data rocm_version=6.4``) has lost
    its trailing zeros and can't be told from another release: ask for a string, in a way
    that round-trips through ``--data`` (pyinfra reads its value as JSON)."""

    def explain(value: Any) -> str | None:
        if _as_number(value):
            return (
                f"a quoted {what} such as {examples} ({value!r} arrived as a number: quote "
                f"it in the inventory, or pass --data '{key}=\"{example}\"')"
            )
        return None

    return explain


FLAG = Rule("true or false", lambda value: isinstance(value, bool), {"type": "boolean"})
# For editors: the releases the matrix knows (the check itself says "did you mean" too).
RELEASE = Rule(
    "a release string such as '6.4.3'",
    _nonempty_string,
    {"type": "string", "enum": list(matrix.release_versions())},
    _quote_it("'6.4.3', '7.2.1' or '7.14.1'", "6.4.3", "rocm_version", "release string"),
)
TORCH_RELEASE = Rule(
    "a torch version string such as '2.9.1'",
    _nonempty_string,
    {"type": "string", "minLength": 1},
    _quote_it("'2.9.1'", "2.9.1", "torch_version", "torch version"),
)
COUNT = whole(0)
POSITIVE = whole(1)
PORT = whole(1, 65535, "a TCP port, 1 to 65535")

# Where credentials for a repository or an index belong instead of a URL, which ends up in
# world-readable apt sources, pip's and curl's command lines, bundle directory names and logs.
CREDENTIALS_BELONG = (
    "a URL without user or password: give apt its credentials with rocm_apt_auth (an "
    "apt_auth.conf(5) file the deploy writes to /etc/apt/auth.conf.d/, mode 0600) and pip "
    "with rocm_pip_netrc (a netrc file, mode 0600), each read where pyinfra runs from a "
    "0600 file or 'env:VARIABLE'"
)
URL_GRAMMAR = (
    "whose host is a DNS name or an IP address in normal form, with an optional port and a "
    "path of letters, digits and - . _ ~ % / : @ ! + , = (no quote, space, ;, $, &, "
    "braces, query or fragment)"
)


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def _url_problem(value: Any) -> str | None:
    if isinstance(value, str) and "@" in value.split("://", 1)[-1].split("/", 1)[0]:
        return CREDENTIALS_BELONG
    return f"an http:// or https:// URL {URL_GRAMMAR}" if _is_url(value) else None


HTTP_URL = checked(
    "an http:// or https:// URL", grammar.http_url, grammar.HTTP_URL, explain=_url_problem
)
PROXY_URL = checked(
    "an http:// URL of the proxy, e.g. 'http://proxy.example.org:3128'",
    grammar.proxy_url,
    grammar.PROXY_URL,
    explain=lambda value: (
        "a proxy URL without user or password (let the proxy admit the hosts by address)"
        if isinstance(value, str) and "@" in value
        else None
    ),
)
ABSOLUTE_PATH = checked(
    "an absolute path without spaces (letters, digits and / . _ - + @ % = , : ~; no . or "
    ".. segment)",
    grammar.absolute_path,
    grammar.ABSOLUTE_PATH,
)
ENV_NAME = grammar_rule("an environment variable name", grammar.ENV_NAME)
SECRET_SOURCE = dataclasses.replace(
    either(
        "the absolute path of a file of mode 0600 where pyinfra runs, or 'env:VARIABLE'",
        Rule(
            "'env:' and an environment variable name",
            lambda value: grammar.full(grammar.ENV_NAME, value[4:]),
            _string("env:" + grammar.ENV_NAME),
        ),
        ABSOLUTE_PATH,
        lambda value: isinstance(value, str) and value.startswith("env:"),
    ),
    secret=True,
)
URL_OR_PATH = either(
    "an http:// or https:// URL, or an absolute path on the host", HTTP_URL, ABSOLUTE_PATH, _is_url
)
MIRROR_NAME = either(
    "an inventory host name, or the http:// URL of a mirror",
    HTTP_URL,
    grammar_rule("an inventory host name", r"[A-Za-z0-9_.:-]+"),
    _is_url,
)
NO_PROXY_ENTRY = checked(
    "a host name, IP address, .domain suffix or CIDR range",
    grammar.no_proxy_entry,
    grammar.NO_PROXY,
)
IP_ADDRESS = checked(
    "an IPv4 or IPv6 address (in normal form: 10.0.0.5, fd00::5)",
    grammar.ip_address,
    f"{grammar.IPV4}|[0-9a-f:.]+",
)
IP_NETWORK = checked(
    "an IP address or CIDR network such as 10.0.0.0/24",
    grammar.ip_network,
    f"{grammar.IPV4}(?:/[0-9]{{1,2}})?|[0-9a-f:.]+(?:/[0-9]{{1,3}})?",
)
FINGERPRINT = grammar_rule(
    "40 hexadecimal digits (an OpenPGP v4 fingerprint)",
    grammar.FINGERPRINT,
    normal=lambda value: value.replace(" ", "").upper(),
)
SHA256 = grammar_rule(
    "64 lower-case hexadecimal digits (a SHA-256, as sha256sum prints it)", grammar.SHA256
)
# A bare number is seconds to systemd, and a slip: a unit is required, and a span of 0 too.
TIME_SPAN = Rule(
    "a systemd time span such as '1h', '30min' or '1h 30min'",
    lambda value: grammar.full(grammar.TIME_SPAN, value) and any(c in "123456789" for c in value),
    _string(grammar.TIME_SPAN),
)
USER_NAME = checked("a POSIX user name", grammar.user_name, grammar.USER_NAME)
# A pull node's target name: one path component of its TUF repository (nodes/NAME.json).
PULL_NODE_NAME = grammar_rule(
    "letters, digits, '.', '_' or '-', starting with a letter or digit",
    r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}",
)
PACKAGE_NAME = grammar_rule("a Debian package name", grammar.PACKAGE_NAME)
SLURM_GRES_TYPE = grammar_rule(
    "a Slurm GRES type: letters, digits, '_', '.', '-' (no ':', ',', '=' or space), e.g. 'mi300x'",
    grammar.SLURM_GRES_TYPE,
)
SLURM_NODE_NAME = grammar_rule(
    "one Slurm node name: letters, digits, '.', '_' or '-', starting with a letter or digit",
    grammar.SLURM_NODE_NAME,
)
DISTRO = choice(*matrix.DISTRO_KEYS)

_KNOWN_GFX = tuple(target.gfx for target in matrix.GPU_TARGETS)
_GFX_VALID = f"gfx targets the matrix knows ({', '.join(_KNOWN_GFX)}), one or a list"


def _gfx_items(value: Any) -> list[Any] | None:
    items = [value] if isinstance(value, str) else value
    return list(items) if isinstance(items, (list, tuple)) and items else None


GFX_TARGETS = Rule(
    _GFX_VALID,
    lambda value: (items := _gfx_items(value)) is not None and set(items) <= set(_KNOWN_GFX),
    {
        "anyOf": [
            {"enum": list(_KNOWN_GFX)},
            {"type": "array", "items": {"enum": list(_KNOWN_GFX)}, "minItems": 1},
        ]
    },
    lambda value: (
        f"{_GFX_VALID}; {', '.join(repr(g) for g in items if g not in _KNOWN_GFX)} is not one"
        if (items := _gfx_items(value))
        else None
    ),
)
