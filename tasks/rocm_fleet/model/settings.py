"""Every inventory setting of rocm-fleet: its key, type, default, meaning and rule.

This is the one place a setting is declared, geerlingguy-role style: one dataclass field
per key, grouped by the concern that reads it, its type annotated with the ``Rule`` its
value must follow (``Annotated[list[str], list_of(USER_NAME, "user names")]``).
``config.load_config`` validates a host's data against this schema before any operation is
planned, the tasks read the settings as typed attributes (``config.rocm_driver``), and
everything that documents them is generated from it: ``rocm-fleet settings`` (the text,
the README's table, ``docs/settings.md`` and the JSON Schema for editors,
``docs/settings.schema.json``).

**pydantic carries the schema.** pydantic v2 (installed with pyinfra) validates the
dataclass (``TypeAdapter(Settings)``): it applies the defaults, runs every field's rule and
reports *every* bad value in one pass, each error carrying its key and the value given, and
it writes the JSON Schema from the same declarations. What it does not do is the checking
itself with its own types, for two reasons found by trying them (``tests/unit/
test_settings_schema.py`` keeps the evidence): in its default (lax) mode ``bool`` takes
``"yes"`` and ``int`` takes ``"8080"``, so ``pytorch_install: "yes"`` would pass; in strict
mode the messages are pydantic's ("Input should be a valid list") and lose what today's say
about the value at hand: one name where a list belongs ("written as a list even for one,
e.g. ['alice']"), a release typed as a number ("quote it"), credentials in a URL (where
they belong instead), a gfx target the matrix doesn't know (which are). So each type's check
is a ``Rule``: what is valid in words, a full-match grammar (``model.grammar``) or a
predicate, its JSON Schema, and the phrase for a value wrong in a known way; pydantic calls
it, collects its errors, and ``config`` words them as before.

A key that is not a setting is left alone (it may be another deploy's: ``gpu_vendor``,
``torch_compile``), unless it is a near-miss of one (``near_misses``); keys renamed from
earlier versions are refused with their new name.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, get_type_hints

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError, core_schema

from rocm_fleet.model import grammar, matrix, paths

# How close (difflib's ratio) an unknown key must be to a setting to be taken for a typo of
# it. 0.85 catches a swapped, missing or doubled letter in every key (rocm_verison 0.92,
# rocm_user 0.95, expected_gpu_cnt 0.94) and leaves other deploys' own keys alone, even
# under the same words (gpu_count 0.67, torch_compile 0.57, pytorch_venv_path 0.83).
NEAR_MISS_CUTOFF = 0.85

# Settings with no default, which a host's data must give -> what to set them to.
REQUIRED = {
    "rocm_version": "the ROCm release to install, e.g. '7.2.1' or '7.14.1' "
    "(`rocm-fleet matrix` lists them)",
}

# Keys of earlier versions -> their names now.
RENAMED = {
    "driver": "rocm_driver",
    "amdgpu_apt_base_url": "rocm_amdgpu_apt_base_url",
    "kernel_backports": "rocm_kernel_backports",
    "kernel_backports_mirror": "rocm_kernel_backports_mirror",
    "mok_password_env": "rocm_mok_password_env",
    "reboot": "rocm_reboot",
    "reboot_parallel": "rocm_reboot_parallel",
    "reboot_timeout": "rocm_reboot_timeout",
    "migrate_from_cuda": "rocm_migrate_from_cuda",
}


# --- rules ------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Rule:
    """What a setting's value must be. ``valid``: what is valid, in words ("a list of user
    names"); ``accepts``: the check; ``schema``: its JSON Schema; ``explain``: for a value
    wrong in a known way, a phrase that says so instead of ``valid`` (None: ``valid``);
    ``normal``: the one spelling of a valid value (a fingerprint in upper case), so two
    spellings of one value never plan different things; ``meant``: for a value of the wrong
    shape, the value probably meant (``"alice"`` -> ``["alice"]``), for the hint."""

    valid: str
    accepts: Callable[[Any], bool]
    schema: dict[str, Any]
    explain: Callable[[Any], str | None] | None = None
    normal: Callable[[Any], Any] | None = None
    meant: Callable[[Any], Any] | None = None

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
SECRET_SOURCE = either(
    "the absolute path of a file of mode 0600 where pyinfra runs, or 'env:VARIABLE'",
    Rule(
        "'env:' and an environment variable name",
        lambda value: grammar.full(grammar.ENV_NAME, value[4:]),
        _string("env:" + grammar.ENV_NAME),
    ),
    ABSOLUTE_PATH,
    lambda value: isinstance(value, str) and value.startswith("env:"),
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
PACKAGE_NAME = grammar_rule("a Debian package name", grammar.PACKAGE_NAME)
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


# --- declarations -----------------------------------------------------------------------------


def setting(default: Any, meaning: str, concern: str) -> Any:
    """A dataclass field carrying the setting's meaning and concern (its rule is in its
    type); a list default becomes a ``default_factory``, so no two hosts share one list.
    ``description`` and ``json_schema_extra`` are what pydantic's JSON Schema reads."""
    metadata = {
        "meaning": meaning,
        "concern": concern,
        "description": meaning,
        "json_schema_extra": {"x-concern": concern},
    }
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


REPOSITORY = "ROCm repository"
PACKAGES = "ROCm packages"
GROUPS = "GPU groups"
PYTORCH = "PyTorch"
VERIFY = "Verify"
PREFLIGHT = "Preflight"
KERNEL = "Kernel"
DRIVER = "amdgpu driver"
SECURE_BOOT = "Secure Boot"
REBOOT = "Reboot"
CUDA = "Migrate from CUDA"
MIRROR = "Fleet mirror"
PROXY = "Proxy"
PULL = "Pull mode"

# Settings that another one being true requires -> (the one, what to set them to).
REQUIRED_WITH = {
    "rocm_pull_source": (
        "rocm_pull",
        "the http(s) URL on the fleet mirror, or the path on the node, of this node's "
        "inventory data (JSON)",
    ),
    "rocm_pull_lock": (
        "rocm_pull",
        "the URL or path of a hash-locked requirements file of rocm-fleet's wheel and its "
        "dependencies (`pip-compile --generate-hashes` or `pip hash`)",
    ),
    "rocm_pull_lock_sha256": ("rocm_pull", "the SHA-256 of that file (sha256sum)"),
}


@dataclass(frozen=True, kw_only=True)
class Settings:
    """A host's rocm-fleet settings (defaults applied). ``rocm_version`` is required."""

    # --- ROCm repository -------------------------------------------------------------
    rocm_version: Annotated[str, RELEASE] = setting(
        "",
        "ROCm release to install, e.g. `6.4.3` or `7.2.1` (classic), `7.14.1` or `10.1.0` "
        "(ROCm Core SDK); `rocm-fleet matrix` lists them (required)",
        REPOSITORY,
    )
    rocm_state: Annotated[str, choice("present", "absent")] = setting(
        "present",
        "`present`, or `absent` to remove what the deploy added (sources, key, pin, ROCm "
        "packages, venv, loader and PATH files); users, groups and kernels stay",
        REPOSITORY,
    )
    rocm_apt_base_url: Annotated[str | None, optional(HTTP_URL)] = setting(
        None,
        "Base of the release's AMD repository, for a mirror of it; default: the release's "
        "(`repo.radeon.com/rocm/apt`, `repo.amd.com/rocm/packages-multi-arch` for 7.14, "
        "`stable.repo.amd.com/rocm/core/packages` for 10.x)",
        REPOSITORY,
    )
    rocm_key_url: Annotated[str | None, optional(HTTP_URL)] = setting(
        None,
        "URL of the repository's signing key; default: the release's, from AMD",
        REPOSITORY,
    )
    rocm_key_fingerprint: Annotated[str | None, optional(FINGERPRINT)] = setting(
        None,
        "Fingerprint the fetched key must have (default: the release stream's, from the "
        "matrix); a mismatch fails the host, writing nothing",
        REPOSITORY,
    )
    rocm_apt_auth: Annotated[str | None, optional(SECRET_SOURCE)] = setting(
        None,
        "Credentials for apt's sources, for a repository or mirror that asks for them: "
        "`env:VARIABLE` or a 0600 file where pyinfra runs holding apt_auth.conf(5) lines "
        "(`machine HOST login USER password SECRET`); written to "
        f"`{paths.APT_AUTH}` (root, 0600), never shown. Unset: that file goes",
        REPOSITORY,
    )
    # --- ROCm packages ---------------------------------------------------------------
    rocm_packages: Annotated[
        list[str] | None, optional(list_of(PACKAGE_NAME, "Debian package names"))
    ] = setting(  # noqa: RUF009 - a field()
        None,
        'AMD meta packages to install, e.g. `["rocm"]`; default: '
        + matrix.CLASSIC.default_packages_text
        + " (classic), "
        + matrix.CORE_SDK.default_packages_text
        + " (Core SDK)",
        PACKAGES,
    )
    # --- GPU groups ------------------------------------------------------------------
    rocm_users: Annotated[list[str], list_of(USER_NAME, "user names")] = setting(  # noqa: RUF009 - a field()
        [],
        "Existing users to add to `video` and `render` (other groups kept)",
        GROUPS,
    )
    # --- PyTorch ---------------------------------------------------------------------
    pytorch_install: Annotated[bool, FLAG] = setting(
        True,
        "Install the PyTorch venv (false: ROCm only)",
        PYTORCH,
    )
    pytorch_venv: Annotated[str, ABSOLUTE_PATH] = setting(
        paths.DEFAULT_VENV,
        "Path of the venv holding torch",
        PYTORCH,
    )
    pytorch_index_base_url: Annotated[str, HTTP_URL] = setting(
        matrix.PYTORCH_INDEX_BASE_URL,
        "Base of the wheel indexes; `/rocmX.Y` from the matrix is appended",
        PYTORCH,
    )
    rocm_pip_netrc: Annotated[str | None, optional(SECRET_SOURCE)] = setting(
        None,
        "Credentials for the wheel index, for one that asks for them: `env:VARIABLE` or a 0600 "
        "file where pyinfra runs holding netrc lines (`machine HOST login USER password "
        f"SECRET`); written to `{paths.PIP_NETRC}` (root, 0600) and given to pip as `NETRC`, "
        "never shown. Unset: that file goes",
        PYTORCH,
    )
    torch_version: Annotated[str | None, optional(TORCH_RELEASE)] = setting(
        None,
        "The torch version, e.g. `2.9.1`; default: the newest the matrix lists for "
        "`rocm_version` (ROCm 10.x: of those AMD's page offers every `expected_gfx`)",
        PYTORCH,
    )
    # --- Verify ----------------------------------------------------------------------
    expected_gfx: Annotated[str | list[str] | None, optional(GFX_TARGETS)] = setting(  # noqa: RUF009 - a field()
        None,
        'GPU target(s) rocminfo and torch must report, e.g. `gfx1100` or `["gfx942"]`',
        VERIFY,
    )
    expected_gpu_count: Annotated[int | None, optional(COUNT)] = setting(
        None,
        "How many GPUs of `expected_gfx` must be present; 0 for a GPU-less host (CI, image builds)",
        VERIFY,
    )
    # --- Preflight -------------------------------------------------------------------
    rocm_distro_override: Annotated[str | None, optional(DISTRO)] = setting(
        None,
        'Deploy a distro the matrix doesn\'t know as one it does, e.g. `"ubuntu 24.04"` for '
        "Linux Mint 22 (unofficial: warned). Without it an unknown distro is refused",
        PREFLIGHT,
    )
    preflight_min_free_gb: Annotated[int, COUNT] = setting(
        10,
        f"Free space (GB) preflight requires for {paths.INSTALL_PATHS[0]}, the venv and apt's "
        "cache while apt can't size the ROCm packages (no AMD source yet); once it can, apt's "
        "figure is used",
        PREFLIGHT,
    )
    # --- Kernel ----------------------------------------------------------------------
    rocm_kernel_backports: Annotated[str, choice("auto", "always", "never")] = setting(
        "auto",
        "A newer kernel (Debian 12: bookworm-backports; Ubuntu: HWE): `auto` when the running "
        "kernel is older than `expected_gfx` needs, `always`, or `never`",
        KERNEL,
    )
    rocm_kernel_backports_mirror: Annotated[str | None, optional(HTTP_URL)] = setting(
        None,
        "Debian mirror for the backports source; default: the one the host's own Debian "
        "sources use",
        KERNEL,
    )
    # --- amdgpu driver ---------------------------------------------------------------
    rocm_driver: Annotated[str, choice("inbox", "dkms")] = setting(
        "inbox",
        "The amdgpu kernel driver: `inbox` (the kernel's own) or `dkms` (AMD's `amdgpu-dkms`, "
        "built for the running and newer kernels; needs an enrolled key with Secure Boot)",
        DRIVER,
    )
    rocm_amdgpu_apt_base_url: Annotated[str, HTTP_URL] = setting(
        matrix.AMDGPU_APT_BASE_URL,
        "Base of AMD's amdgpu driver repository (with `rocm_driver: dkms`)",
        DRIVER,
    )
    rocm_amdgpu_key_url: Annotated[str, HTTP_URL] = setting(
        matrix.AMDGPU_KEY_URL,
        "URL of the driver repository's signing key, installed with a Core SDK release and "
        "`rocm_driver: dkms` (a classic release's key signs both)",
        DRIVER,
    )
    rocm_amdgpu_key_fingerprint: Annotated[str, FINGERPRINT] = setting(
        matrix.AMDGPU_KEY_FINGERPRINT,
        "Fingerprint that key must have",
        DRIVER,
    )
    # --- Secure Boot -----------------------------------------------------------------
    rocm_mok_password_env: Annotated[str, ENV_NAME] = setting(
        "ROCM_FLEET_MOK_PASSWORD",
        "Environment variable (where pyinfra runs) with the one-time MOK password to type at "
        "the console; unset: asked once when pyinfra runs in a terminal",
        SECURE_BOOT,
    )
    # --- Reboot ----------------------------------------------------------------------
    rocm_reboot: Annotated[str, choice("allow", "never")] = setting(
        "never",
        "Reboots: `allow` = hosts that need one (new kernel, new driver, MOK to confirm) "
        "reboot, then are verified again; `never` = the run ends listing them",
        REBOOT,
    )
    rocm_reboot_parallel: Annotated[int, POSITIVE] = setting(
        1,
        "How many hosts reboot at a time (set it fleet-wide)",
        REBOOT,
    )
    rocm_reboot_timeout: Annotated[int, POSITIVE] = setting(
        600,
        "Seconds a rebooting host has to come back before it fails",
        REBOOT,
    )
    # --- Fleet mirror ----------------------------------------------------------------
    rocm_mirror: Annotated[str | None, optional(MIRROR_NAME)] = setting(
        None,
        "The fleet mirror: an inventory host the deploy makes serve AMD's repositories, key and "
        "the PyTorch wheels to the fleet (nginx), or the `http(s)://` URL of one served elsewhere; "
        "hosts naming it fetch from it, apt still checking AMD's signature. Unset: upstream",
        MIRROR,
    )
    rocm_mirror_bundle: Annotated[str | None, optional(ABSOLUTE_PATH)] = setting(
        None,
        "A bundle made by `rocm-fleet bundle` (a directory where pyinfra runs) the mirror "
        "serves: nothing comes from upstream, and preflight refuses a host needing what it "
        "lacks. Unset: the mirror host is a live cache of upstream",
        MIRROR,
    )
    rocm_mirror_port: Annotated[int, PORT] = setting(
        8080,
        "The port the mirror host serves on (HTTPS with `rocm_mirror_tls_cert`, else plain HTTP)",
        MIRROR,
    )
    rocm_mirror_tls_ca: Annotated[str | None, optional(ABSOLUTE_PATH)] = setting(
        None,
        "The CA certificate (PEM, a path where pyinfra runs) that issued the mirror's: hosts "
        "using the mirror pin it for the mirror alone (apt, pip, curl). Set on the mirror host "
        "with the two below (`rocm-fleet mirror-ca DIR ADDRESS` makes all three), or on hosts "
        "naming an `https://` mirror served elsewhere. Unset: the mirror is plain HTTP",
        MIRROR,
    )
    rocm_mirror_tls_cert: Annotated[str | None, optional(ABSOLUTE_PATH)] = setting(
        None,
        "The mirror's certificate (PEM, where pyinfra runs), issued by `rocm_mirror_tls_ca` "
        "for the address the hosts reach it by; nginx then serves HTTPS only",
        MIRROR,
    )
    rocm_mirror_tls_key: Annotated[str | None, optional(ABSOLUTE_PATH)] = setting(
        None,
        "The private key of `rocm_mirror_tls_cert` (PEM, unencrypted, mode 0600 where "
        "pyinfra runs); the mirror host keeps it root-only (0600)",
        MIRROR,
    )
    rocm_mirror_listen: Annotated[str | None, optional(IP_ADDRESS)] = setting(
        None,
        "The address the mirror host's nginx listens on. Unset: the address the inventory "
        "reaches it by (`ssh_hostname`) when that is an IP address, else every interface",
        MIRROR,
    )
    rocm_mirror_allow: Annotated[
        list[str], list_of(IP_NETWORK, "IP addresses or CIDR networks such as 10.0.0.0/24")
    ] = setting(  # noqa: RUF009 - a field()
        [],
        "Networks (CIDR) besides the inventory's hosts that may use the mirror; nginx refuses "
        "everyone else. Needed for hosts the inventory names by DNS name, not address",
        MIRROR,
    )
    # --- Proxy -----------------------------------------------------------------------
    rocm_proxy: Annotated[str | None, optional(PROXY_URL)] = setting(
        None,
        "HTTP(S) proxy for apt (all sources), AMD's key and pip, e.g. "
        "`http://proxy.example.org:3128`; no credentials in it",
        PROXY,
    )
    rocm_no_proxy: Annotated[
        list[str], list_of(NO_PROXY_ENTRY, "host names, .domain suffixes or CIDR ranges")
    ] = setting(  # noqa: RUF009 - a field()
        [],
        "Hosts reached directly, not through `rocm_proxy` (the fleet mirror always is); apt "
        "takes exact host names, curl and pip also `.domain` suffixes and CIDR ranges",
        PROXY,
    )
    # --- Migrate from CUDA -----------------------------------------------------------
    rocm_migrate_from_cuda: Annotated[bool, FLAG] = setting(
        False,
        "Remove what preflight finds of NVIDIA's stack (driver and CUDA packages, CUDA wheels "
        "in the venv) before installing ROCm; false: its presence stops the host",
        CUDA,
    )
    # --- Pull mode -------------------------------------------------------------------
    rocm_pull: Annotated[bool, FLAG] = setting(
        False,
        "Make the node converge itself: a systemd timer runs this deploy `@local` from a "
        "pinned rocm-fleet against the node's inventory data fetched from `rocm_pull_source`, "
        "checks the node and writes the audit for node_exporter. False: pull mode's units and "
        "venv are removed",
        PULL,
    )
    rocm_pull_source: Annotated[str | None, optional(URL_OR_PATH)] = setting(
        None,
        "Where the node's own inventory data (a JSON object of its settings) comes from: an "
        "`http(s)://` URL on the fleet mirror or a path on the node (required with `rocm_pull`)",
        PULL,
    )
    rocm_pull_lock: Annotated[str | None, optional(URL_OR_PATH)] = setting(
        None,
        "URL or path of a requirements file locking rocm-fleet's wheel and every dependency "
        "by hash (`name @ URL --hash=sha256:...`), installed with `pip --require-hashes` "
        "(required with `rocm_pull`)",
        PULL,
    )
    rocm_pull_lock_sha256: Annotated[str | None, optional(SHA256)] = setting(
        None,
        "SHA-256 the lock file must have, so neither it nor a wheel can be swapped on the "
        "way (required with `rocm_pull`)",
        PULL,
    )
    rocm_pull_interval: Annotated[str, TIME_SPAN] = setting(
        "1h",
        "How long after one pull the next runs (systemd time span, `OnUnitActiveSec`)",
        PULL,
    )
    rocm_pull_random_delay: Annotated[str, TIME_SPAN] = setting(
        "10min",
        "Random delay added to each pull, so a fleet doesn't fetch at once (`RandomizedDelaySec`)",
        PULL,
    )


SETTINGS = {f.name: f for f in fields(Settings)}
#: Each setting's rule, read from its annotated type.
RULES: dict[str, Rule] = {
    key: hint.__metadata__[0]
    for key, hint in get_type_hints(Settings, include_extras=True).items()
    if key in SETTINGS
}
_SCHEMA = TypeAdapter(Settings)


# --- validation -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Invalid:
    """One setting's bad value: the key, the value given and what would be valid."""

    key: str
    value: Any
    valid: str


class InvalidSettings(ValueError):
    """Every bad value of one host's data (``problems``, in the declarations' order)."""

    def __init__(self, problems: list[Invalid]):
        super().__init__("; ".join(f"{p.key}: {p.valid}" for p in problems))
        self.problems = problems


def validated(data: Mapping[str, Any]) -> Settings:
    """``data``'s settings (other keys ignored), checked by their rules, normalised and with
    defaults applied; InvalidSettings naming every bad value at once."""
    given = {key: value for key, value in data.items() if key in SETTINGS}
    try:
        return _SCHEMA.validate_python(given)
    except ValidationError as exc:
        raise InvalidSettings(
            [Invalid(str(e["loc"][0]), e["input"], e["msg"]) for e in exc.errors()]
        ) from None


@functools.cache
def near_misses(key: str) -> tuple[str, ...]:
    """The settings an unknown ``key`` is probably a slip for: one letter off (difflib's
    ratio at least ``NEAR_MISS_CUTOFF``), or the same words as a setting less its last one,
    in the singular or plural (``expected_gpus`` for ``expected_gpu_count``,
    ``rocm_mirror_tls`` for the three ``rocm_mirror_tls_*``). Cached: every host of a
    fleet carries the same foreign keys (ssh_user, the site's own), and difflib against
    every setting is the dearest part of validating a host. (Words, then letters: a word
    one letter off is a plural, ``rocm_reboots`` is ``rocm_reboot``, not a shorter key.)"""
    words = _singular_words(key)
    same = [name for name in SETTINGS if _singular_words(name) == words]
    if same:
        return tuple(same)
    if len(words) >= 2:
        shorter = [name for name in SETTINGS if _singular_words(name)[:-1] == words]
        if shorter:
            return tuple(shorter)
    near = difflib.get_close_matches(key, SETTINGS, n=1, cutoff=NEAR_MISS_CUTOFF)
    return (near[0],) if near else ()


def _singular_words(key: str) -> list[str]:
    return [word.removesuffix("s") for word in key.lower().split("_")]


# --- what documents the settings --------------------------------------------------------------


@dataclass(frozen=True)
class Described:
    """One setting as the documentation shows it."""

    key: str
    concern: str
    default: Any
    required: bool
    meaning: str
    valid: str


def described() -> list[Described]:
    """Every setting, in the declarations' order (grouped by concern)."""
    found = []
    for key, declared in SETTINGS.items():
        factory = declared.default_factory
        default = factory() if callable(factory) else declared.default
        found.append(
            Described(
                key,
                declared.metadata["concern"],
                None if key in REQUIRED else default,
                key in REQUIRED,
                declared.metadata["meaning"],
                RULES[key].valid,
            )
        )
    return found


def settings_table() -> str:
    """The README's settings table: key, default, meaning, by concern."""
    rows = ["| Key | Default | Meaning |", "|---|---|---|"]
    concern = None
    for item in described():
        if item.concern != concern:
            concern = item.concern
            rows.append(f"| **{concern}** | | |")
        shown = "*(required)*" if item.required else f"`{item.default!r}`"
        rows.append(f"| `{item.key}` | {shown} | {item.meaning} |")
    return "\n".join(rows)


def json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of a host's settings, for editors checking an
    inventory's data (pull mode's JSON, YAML an inventory loads). Other keys are allowed:
    they may be another deploy's."""
    schema = _SCHEMA.json_schema()
    for item in described():
        prop = schema["properties"][item.key]
        prop.pop("title", None)
        if item.required:
            prop.pop("default", None)
        else:
            prop["default"] = item.default
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rocm-fleet inventory settings",
        "description": "Every inventory key rocm-fleet reads (generated by "
        "`rocm-fleet settings --schema`).",
        "type": "object",
        "properties": schema["properties"],
        "required": list(REQUIRED),
        "additionalProperties": True,
    }


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def reference_page() -> str:
    """``docs/settings.md``: every setting by concern, with its default, what is valid and
    what it means."""
    out = [
        "# Settings reference",
        "",
        "<!-- Generated by `rocm-fleet settings --page > docs/settings.md` from",
        "     rocm_fleet/model/settings.py; a unit test keeps it current. -->",
        "",
        "Every inventory key rocm-fleet reads, by the part of the deploy that reads it. Set "
        "them where pyinfra takes host data: the inventory file, `group_data/<group>.py`, or "
        "`--data KEY=VALUE` (pyinfra reads the value as JSON: `--data "
        "'rocm_users=[\"alice\"]'`). A bad value stops the run before any host changes, "
        "with one line per bad key naming the host, the key, the value, the file that set "
        "it and what would be valid. A key that is not listed is left alone (it may be "
        "another deploy's) unless it looks like a slip for one of these; the keys of "
        "earlier versions are refused with their new name.",
        "",
        "Editors can check data against the JSON Schema "
        "[`settings.schema.json`](settings.schema.json) (`rocm-fleet settings --schema`), "
        "e.g. with a `# yaml-language-server: $schema=...` line in a YAML file of host data.",
    ]
    concern = None
    for item in described():
        if item.concern != concern:
            concern = item.concern
            out += ["", f"## {concern}", "", "| Key | Default | Valid | Meaning |"]
            out.append("|---|---|---|---|")
        shown = "*(required)*" if item.required else f"`{item.default!r}`"
        out.append(f"| `{item.key}` | {shown} | {_cell(item.valid)} | {_cell(item.meaning)} |")
    out += ["", "Renamed keys (refused with their new name):", ""]
    out += [f"- `{old}` → `{new}`" for old, new in RENAMED.items()]
    return "\n".join(out) + "\n"
