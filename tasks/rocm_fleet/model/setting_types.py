"""The ``Annotated`` types of the settings: pydantic's metadata check a value, ``Valid`` says what
is valid when they refuse it (the error ``invalid`` makes)."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any, Literal

from annotated_types import Predicate
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Discriminator,
    Field,
    Strict,
    StringConstraints,
    Tag,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError, core_schema

from rocm_fleet.model import container_toolkit, gpu_targets, grammar, matrix


def invalid(valid: str, **context: Any) -> PydanticCustomError:
    """The error of a refused value: ``valid`` says what is valid or what is wrong (filled last:
    it may quote the value)."""
    return PydanticCustomError("rocm_fleet_setting", "{valid}", {**context, "valid": valid})


@dataclass(frozen=True)
class Valid:
    """What a setting's value must be, in words: the message when the metadata before it refuse
    a value, unless they raised ``invalid``; for a list, which item is bad."""

    text: str

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return core_schema.no_info_wrap_validator_function(self._said, handler(source))

    def _said(self, value: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(value)
        except ValidationError as exc:
            error = exc.errors()[0]
            if error["type"] == "rocm_fleet_setting":
                raise
            if error["loc"] and isinstance(error["loc"][0], int):
                raise invalid(f"{self.text} ({error['input']!r} is not one)") from None
            if error["type"] == "list_type" and isinstance(value, str):
                meant = _items_meant(value)
                raise invalid(
                    f"{self.text}, written as a list even for one, e.g. {meant!r}", meant=meant
                ) from None
            if error["type"] == "list_type":
                raise invalid(f"{self.text}, e.g. ['...']") from None
            raise invalid(self.text) from None


def _items_meant(value: str) -> list[str]:
    """The names one string meant as a list: ``"alice, bob"``, ``--data``'s ``"[alice]"``."""
    text = value.strip().removeprefix("[").removesuffix("]")
    return [item.strip().strip("'\"") for item in text.split(",") if item.strip().strip("'\"")]


def _grammar(pattern: str, valid: str | None = None) -> Any:
    """A string ``pattern`` matches whole (pydantic's Rust engine), JSON Schema's pattern too."""
    string = Annotated[str, StringConstraints(strict=True, pattern=f"^(?:{pattern})$")]
    return Annotated[string, Valid(valid)] if valid else string


def _checked(accepts: Callable[[Any], bool], pattern: str, valid: str | None = None) -> Any:
    """A string ``accepts`` (a ``model.grammar`` check beyond the Rust engine) takes; ``pattern``
    for editors."""
    schema = WithJsonSchema({"type": "string", "pattern": f"^(?:{pattern})$"})
    string = Annotated[str, Strict(), Predicate(accepts), schema]
    return Annotated[string, Valid(valid)] if valid else string


def _either(valid: str, first: Any, second: Any, use_first: Callable[[Any], bool]) -> Any:
    """``first`` for a value ``use_first`` picks, else ``second``; ``valid`` says what is valid."""
    union = Annotated[
        Annotated[first, Tag("first")] | Annotated[second, Tag("second")],
        Discriminator(lambda value: "first" if use_first(value) else "second"),
    ]
    schema = [TypeAdapter(first).json_schema(), TypeAdapter(second).json_schema()]
    return Annotated[union, WithJsonSchema({"anyOf": schema}), Valid(valid)]


def one_of(*choices: str) -> Any:
    valid = Valid("one of " + ", ".join(repr(c) for c in choices))
    return Annotated[Literal[choices], WithJsonSchema({"enum": list(choices)}), valid]


def _whole(minimum: int, maximum: int | None = None, valid: str | None = None) -> Any:
    valid = valid or f"a whole number >= {minimum}"
    return Annotated[int, Strict(), Field(ge=minimum, le=maximum), Valid(valid)]


# A list, or a tuple (as a list): a set has no order.
_LIST = (
    Strict(),
    BeforeValidator(lambda value: list(value) if isinstance(value, tuple) else value),
)


def _list_of(item: Any, what: str) -> Any:
    return Annotated[list[item], *_LIST, Valid(f"a list of {what}")]


def _version(valid: str, examples: str, example: str, key: str, what: str) -> Any:
    """A version string; a number (``6.4`` in YAML) is refused, saying how to quote it."""

    def explain(value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise invalid(
                f"a quoted {what} such as {examples} ({value!r} arrived as a number: quote "
                f"it in the inventory, or pass --data '{key}=\"{example}\"')"
            )
        return value

    string = StringConstraints(strict=True, min_length=1)
    trimmed = Predicate(lambda value: value == value.strip())
    return Annotated[str, string, trimmed, BeforeValidator(explain), Valid(valid)]


Flag = Annotated[bool, Strict(), Valid("true or false")]
Count = _whole(0)
Positive = _whole(1)
Port = _whole(1, 65535, "a TCP port, 1 to 65535")
Release = Annotated[
    _version(
        "a release string such as '6.4.3'",
        "'6.4.3', '7.2.1' or '7.14.1'",
        "6.4.3",
        "rocm_version",
        "release string",
    ),
    WithJsonSchema({"type": "string", "enum": list(matrix.release_versions())}),
]
TorchRelease = _version(
    "a torch version string such as '2.9.1'", "'2.9.1'", "2.9.1", "torch_version", "torch version"
)

# A URL's credentials would reach world-readable apt sources, command lines and logs.
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


def _url(value: str) -> bool:
    if grammar.http_url(value):
        return True
    if "@" in value.split("://", 1)[-1].split("/", 1)[0]:
        raise invalid(CREDENTIALS_BELONG)
    if _is_url(value):
        raise invalid(f"an http:// or https:// URL {URL_GRAMMAR}")
    return False


def _proxy(value: str) -> bool:
    if "@" in value:
        raise invalid(
            "a proxy URL without user or password (let the proxy admit the hosts by address)"
        )
    return grammar.http_url(value, grammar.PROXY_URL)


HttpUrl = _checked(_url, grammar.HTTP_URL, "an http:// or https:// URL")
ProxyUrl = _checked(
    _proxy,
    grammar.PROXY_URL,
    "an http:// URL of the proxy, e.g. 'http://proxy.example.org:3128'",
)
_Path = _checked(partial(grammar.full, grammar.ABSOLUTE_PATH), grammar.ABSOLUTE_PATH)
AbsolutePath = Annotated[
    _Path,
    Valid(
        "an absolute path without spaces (letters, digits and / . _ - + @ % = , : ~; no . or "
        ".. segment)"
    ),
]
EnvName = _grammar(grammar.ENV_NAME, "an environment variable name")
#: Where a secret comes from (an error never shows it: ``secrets.SECRET_SOURCE_SETTINGS``).
SecretSource = _either(
    "the absolute path of a file of mode 0600 where pyinfra runs, or 'env:VARIABLE'",
    _grammar("env:" + grammar.ENV_NAME, "'env:' and an environment variable name"),
    _Path,
    lambda value: isinstance(value, str) and value.startswith("env:"),
)
UrlOrPath = _either(
    "an http:// or https:// URL, or an absolute path on the host", HttpUrl, _Path, _is_url
)
MirrorName = _either(
    "an inventory host name, or the http:// URL of a mirror",
    HttpUrl,
    _grammar(r"[A-Za-z0-9_.:-]+"),
    _is_url,
)
IpAddress = _checked(
    grammar.ip_address,
    f"{grammar.IPV4}|[0-9a-f:.]+",
    "an IPv4 or IPv6 address (in normal form: 10.0.0.5, fd00::5)",
)
Fingerprint = Annotated[
    _grammar(grammar.FINGERPRINT),
    AfterValidator(lambda value: value.replace(" ", "").upper()),
    Valid("40 hexadecimal digits (an OpenPGP v4 fingerprint)"),
]
Sha256 = _grammar(
    grammar.SHA256, "64 lower-case hexadecimal digits (a SHA-256, as sha256sum prints it)"
)
# A unit is required (a bare number is a slip), and a span of 0 is refused.
TimeSpan = Annotated[
    _grammar(grammar.TIME_SPAN),
    Predicate(lambda value: any(c in "123456789" for c in value)),
    Valid("a systemd time span such as '1h', '30min' or '1h 30min'"),
]
# One path component of the TUF repository (nodes/NAME.json).
PullNodeName = _grammar(
    r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}",
    "letters, digits, '.', '_' or '-', starting with a letter or digit",
)
SlurmGresType = _grammar(
    grammar.SLURM_GRES_TYPE,
    "a Slurm GRES type: letters, digits, '_', '.', '-' (no ':', ',', '=' or space), e.g. 'mi300x'",
)
SlurmNodeName = _grammar(
    grammar.SLURM_NODE_NAME,
    "one Slurm node name: letters, digits, '.', '_' or '-', starting with a letter or digit",
)
Distro = one_of(*matrix.DISTRO_KEYS)
UserNames = _list_of(_grammar(grammar.USER_NAME), "user names")
RootlessUsers = _list_of(_grammar(grammar.ROOTLESS_USER), "user names")
ContainerEngines = Annotated[
    list[Literal["docker", "podman"]],
    *_LIST,
    Predicate(lambda value: len(set(value)) == len(value)),
    Valid("a list of 'docker' and/or 'podman', each once"),
]
ImageRefs = _list_of(
    Annotated[_grammar(grammar.IMAGE_REF), Predicate(lambda value: len(value) <= 512)],
    "image references naming their registry, e.g. 'registry.example.org/ml/pytorch:2.9'",
)
ToolkitRelease = one_of(*container_toolkit.RELEASES)
PackageNames = _list_of(_grammar(grammar.PACKAGE_NAME), "Debian package names")
Networks = _list_of(
    _checked(grammar.ip_network, f"{grammar.IPV4}(?:/[0-9]{{1,2}})?|[0-9a-f:.]+(?:/[0-9]{{1,3}})?"),
    "IP addresses or CIDR networks such as 10.0.0.0/24",
)
NoProxy = _list_of(
    _checked(grammar.no_proxy_entry, grammar.NO_PROXY),
    "host names, .domain suffixes or CIDR ranges",
)

_KNOWN_GFX = tuple(target.gfx for target in gpu_targets.GPU_TARGETS)
_GFX_VALID = f"gfx targets the matrix knows ({', '.join(_KNOWN_GFX)}), one or a list"


def _known_gfx(value: Any) -> Any:
    items = [value] if isinstance(value, str) else value
    if isinstance(items, (list, tuple)) and (unknown := [g for g in items if g not in _KNOWN_GFX]):
        raise invalid(f"{_GFX_VALID}; {', '.join(repr(g) for g in unknown)} is not one")
    return value


_GFX_ENUM = {"enum": list(_KNOWN_GFX)}
GfxTargets = Annotated[
    Annotated[str, Strict()] | Annotated[list[str], Field(min_length=1), *_LIST],
    BeforeValidator(_known_gfx),
    WithJsonSchema({"anyOf": [_GFX_ENUM, {"type": "array", "items": _GFX_ENUM, "minItems": 1}]}),
    Valid(_GFX_VALID),
]


#: the acceptance thresholds a site may set (docs/acceptance.md)
_THRESHOLD_NAME = r"gst:[A-Za-z0-9][A-Za-z0-9_.-]{0,80}|rccl_busbw_gbps|matmul_max_error"
_THRESHOLDS_VALID = (
    "a mapping of threshold names ('gst:<RVS GST action>' in GFLOPS, 'rccl_busbw_gbps', "
    "'matmul_max_error') to numbers > 0, e.g. {'rccl_busbw_gbps': 300}"
)


def _thresholds(value: Any) -> Any:
    bad = [
        f"{key!r}: {number!r}"
        for key, number in value.items()
        if not grammar.full(_THRESHOLD_NAME, key) or not number > 0
    ]
    if bad:
        raise invalid(f"{_THRESHOLDS_VALID}; {', '.join(bad)} is not one")
    return value


AcceptanceThresholds = Annotated[
    dict[str, Annotated[float, Strict()]],
    Strict(),
    AfterValidator(_thresholds),
    Valid(_THRESHOLDS_VALID),
]
