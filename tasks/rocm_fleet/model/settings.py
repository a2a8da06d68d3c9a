"""Every inventory setting of rocm-fleet: its key, type, default, meaning and what is valid.

This is the one place a setting is declared: one dataclass field per key, grouped by the
concern that reads it, its type an ``Annotated`` one whose pydantic metadata check the value
(``Strict``, ``StringConstraints`` with a full-match grammar of ``model.grammar``, ``Field``
bounds, ``AfterValidator`` for what code checks) and say what is valid (``Valid``). The
tasks read the settings as typed attributes (``config.rocm_driver``), and everything that
documents them is generated from here (``model.settings_reference``).

``validated`` checks a host's data in one pass of pydantic (``TypeAdapter(Settings)``):
every bad key is one ``PydanticCustomError`` of type ``rocm_fleet_setting`` whose message
names the host, the key, the value, where the inventory set it and what would be valid (or
which setting an unknown key is probably a slip for). pydantic's own types are strict here
(its lax ``bool`` takes ``"yes"``) and its own messages are replaced by what to write.

A key that is not a setting is left alone (it may be another deploy's: ``gpu_vendor``,
``torch_compile``), unless it is a near-miss of one (``near_misses``); keys renamed from
earlier versions are refused with their new name.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

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
    ValidationInfo,
    WithJsonSchema,
    WrapValidator,
)
from pydantic_core import PydanticCustomError, core_schema

from rocm_fleet.model import grammar, matrix, paths
from rocm_fleet.model.secrets import shown_value

#: Where the inventory set a key ("FILE line N", "--data"), None when unknown.
Origin = Callable[[str], "str | None"]

# --- what a value must be -----------------------------------------------------------------------


def invalid(valid: str, **context: Any) -> PydanticCustomError:
    """The error of a value a setting refuses: ``valid`` says what would be valid, or what is
    wrong with this value."""
    # The context's other keys first: pydantic fills the template key by key, so ``valid``,
    # which may quote the value, is filled last.
    return PydanticCustomError("rocm_fleet_setting", "{valid}", {**context, "valid": valid})


@dataclass(frozen=True)
class Valid:
    """What a setting's value must be, in words (the reference's "Valid" column): the
    message for a value the metadata before it refuse, unless they said more (``invalid``).
    For a list it says which item is bad, or, for a string, how to write it as a list.
    (pydantic's own messages, "Input should be a valid list", say what failed, not what to
    write.)"""

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
    """The names one string meant as a list: ``"alice, bob"`` and ``--data``'s
    ``rocm_users=[alice]`` (which reaches the inventory as the string ``"[alice]"``)."""
    text = value.strip().removeprefix("[").removesuffix("]")
    return [item.strip().strip("'\"") for item in text.split(",") if item.strip().strip("'\"")]


def _string(pattern: str) -> dict[str, Any]:
    return {"type": "string", "pattern": f"^(?:{pattern})$"}


def _grammar(pattern: str, valid: str | None = None) -> Any:
    """A string ``pattern`` matches whole. pydantic matches it with the Rust regex engine,
    whose ``$`` is the end of the text (Python's would let a trailing newline by), and the
    anchored pattern is JSON Schema's too."""
    string = Annotated[str, StringConstraints(strict=True, pattern=f"^(?:{pattern})$")]
    return Annotated[string, Valid(valid)] if valid else string


def _check(accepts: Callable[[Any], bool]) -> AfterValidator:
    """What code checks beyond a grammar (a normal form, a range): ``Valid`` says what is
    valid when ``accepts`` says no, unless it raised ``invalid`` saying more."""

    def check(value: Any) -> Any:
        if not accepts(value):
            raise ValueError("refused")
        return value

    return AfterValidator(check)


def _checked(accepts: Callable[[Any], bool], pattern: str, valid: str | None = None) -> Any:
    """A string ``accepts`` (one of ``model.grammar``'s) takes; ``pattern`` for editors. (A
    grammar with a look-ahead, or one code narrows, is beyond the Rust engine's patterns.)"""
    string = Annotated[str, Strict(), _check(accepts), WithJsonSchema(_string(pattern))]
    return Annotated[string, Valid(valid)] if valid else string


def _either(valid: str, first: Any, second: Any, use_first: Callable[[Any], bool]) -> Any:
    """``first`` for a value ``use_first`` picks (a URL), else ``second`` (a path, a name):
    an error of ``first`` is its own, one of ``second`` says ``valid``."""
    union = Annotated[
        Annotated[first, Tag("first")] | Annotated[second, Tag("second")],
        Discriminator(lambda value: "first" if use_first(value) else "second"),
    ]
    schema = [TypeAdapter(first).json_schema(), TypeAdapter(second).json_schema()]
    return Annotated[union, WithJsonSchema({"anyOf": schema}), Valid(valid)]


def _one_of(*choices: str) -> Any:
    valid = Valid("one of " + ", ".join(repr(c) for c in choices))
    return Annotated[Literal[choices], WithJsonSchema({"enum": list(choices)}), valid]


def _whole(minimum: int, maximum: int | None = None, valid: str | None = None) -> Any:
    valid = valid or f"a whole number >= {minimum}"
    return Annotated[int, Strict(), Field(ge=minimum, le=maximum), Valid(valid)]


# A list, or a tuple (as a list): a set has no order, and a string is one item at best.
_LIST = (
    Strict(),
    BeforeValidator(lambda value: list(value) if isinstance(value, tuple) else value),
)


def _list_of(item: Any, what: str) -> Any:
    return Annotated[list[item], *_LIST, Valid(f"a list of {what}")]


def _version(valid: str, examples: str, example: str, key: str, what: str) -> Any:
    """A version string. One typed as a number (``6.4`` in YAML or ``--data
    rocm_version=6.4``) has lost its trailing zeros and can't be told from another release:
    ask for a string, in a way that round-trips through ``--data`` (pyinfra reads its value
    as JSON)."""

    def explain(value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise invalid(
                f"a quoted {what} such as {examples} ({value!r} arrived as a number: quote "
                f"it in the inventory, or pass --data '{key}=\"{example}\"')"
            )
        return value

    trimmed = _check(lambda value: value == value.strip())
    string = StringConstraints(strict=True, min_length=1)
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
    # For editors: the releases the matrix knows (the check itself says "did you mean" too).
    WithJsonSchema({"type": "string", "enum": list(matrix.release_versions())}),
]
TorchRelease = _version(
    "a torch version string such as '2.9.1'", "'2.9.1'", "2.9.1", "torch_version", "torch version"
)

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
    return grammar.proxy_url(value)


HttpUrl = _checked(_url, grammar.HTTP_URL, "an http:// or https:// URL")
ProxyUrl = _checked(
    _proxy,
    grammar.PROXY_URL,
    "an http:// URL of the proxy, e.g. 'http://proxy.example.org:3128'",
)
_Path = _checked(grammar.absolute_path, grammar.ABSOLUTE_PATH)
AbsolutePath = Annotated[
    _Path,
    Valid(
        "an absolute path without spaces (letters, digits and / . _ - + @ % = , : ~; no . or "
        ".. segment)"
    ),
]
EnvName = _grammar(grammar.ENV_NAME, "an environment variable name")
#: Where a secret comes from: a bad value may be the secret itself, so an error never shows
#: it (``secrets.SECRET_SOURCE_SETTINGS``).
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
    AfterValidator(lambda value: value.replace(" ", "").upper()),  # one spelling of one key
    Valid("40 hexadecimal digits (an OpenPGP v4 fingerprint)"),
]
Sha256 = _grammar(
    grammar.SHA256, "64 lower-case hexadecimal digits (a SHA-256, as sha256sum prints it)"
)
# A bare number is seconds to systemd, and a slip: a unit is required, and a span of 0 too.
TimeSpan = Annotated[
    _grammar(grammar.TIME_SPAN),
    _check(lambda value: any(c in "123456789" for c in value)),
    Valid("a systemd time span such as '1h', '30min' or '1h 30min'"),
]
# A pull node's target name: one path component of its TUF repository (nodes/NAME.json).
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
Distro = _one_of(*matrix.DISTRO_KEYS)
UserNames = _list_of(_grammar(grammar.USER_NAME), "user names")
PackageNames = _list_of(_grammar(grammar.PACKAGE_NAME), "Debian package names")
Networks = _list_of(
    _checked(grammar.ip_network, f"{grammar.IPV4}(?:/[0-9]{{1,2}})?|[0-9a-f:.]+(?:/[0-9]{{1,3}})?"),
    "IP addresses or CIDR networks such as 10.0.0.0/24",
)
NoProxy = _list_of(
    _checked(grammar.no_proxy_entry, grammar.NO_PROXY),
    "host names, .domain suffixes or CIDR ranges",
)

_KNOWN_GFX = tuple(target.gfx for target in matrix.GPU_TARGETS)
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

# --- the settings -------------------------------------------------------------------------------

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


# --- declarations -----------------------------------------------------------------------------


# ruff: noqa: RUF009 - ``setting`` makes a dataclass field, as ``field`` does
def setting(default: Any, meaning: str, concern: str) -> Any:
    """A dataclass field carrying the setting's meaning and concern (what is valid is in its
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
APU = "APU memory"
SECURE_BOOT = "Secure Boot"
REBOOT = "Reboot"
CUDA = "Migrate from CUDA"
MIRROR = "Fleet mirror"
PROXY = "Proxy"
PULL = "Pull mode"
SLURM = "Slurm"

# Settings that another one being true requires -> (the one, what to set them to).
REQUIRED_WITH = {
    "rocm_pull_source": (
        "rocm_pull",
        "the http(s) URL of the fleet's TUF repository (`rocm-fleet publish`), e.g. on the "
        "fleet mirror",
    ),
    "rocm_pull_trusted_root": (
        "rocm_pull",
        "the path, where pyinfra runs, of that repository's root metadata "
        "(`DIR/metadata/root.json`)",
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
    rocm_version: Release = setting(
        "",
        "ROCm release to install, e.g. `6.4.3` or `7.2.1` (classic), `7.14.1` or `10.1.0` "
        "(ROCm Core SDK); `rocm-fleet matrix` lists them (required)",
        REPOSITORY,
    )
    rocm_matrix_data: AbsolutePath | None = setting(
        None,
        "A site's own matrix data (a file where pyinfra runs, written by `rocm-fleet matrix "
        "update --output`): releases AMD published after this rocm-fleet, verified against "
        "upstream before a host is planned from one; it can only add releases, never change "
        "a key, host or committed row. Unset: `ROCM_FLEET_MATRIX_DATA` where pyinfra runs, "
        "else the committed matrix alone. A pull node is given the file's content in its "
        "signed target by `rocm-fleet publish`, never a path",
        REPOSITORY,
    )
    rocm_state: _one_of("present", "absent") = setting(
        "present",
        "`present`, or `absent` to remove what the deploy added (sources, key, pin, ROCm "
        "packages, venv, loader and PATH files); users, groups and kernels stay",
        REPOSITORY,
    )
    rocm_apt_base_url: HttpUrl | None = setting(
        None,
        "Base of the release's AMD repository, for a mirror of it; default: the release's "
        "(`repo.radeon.com/rocm/apt`, `repo.amd.com/rocm/packages-multi-arch` for 7.14, "
        "`stable.repo.amd.com/rocm/core/packages` for 10.x)",
        REPOSITORY,
    )
    rocm_key_url: HttpUrl | None = setting(
        None,
        "URL of the repository's signing key; default: the release's, from AMD",
        REPOSITORY,
    )
    rocm_key_fingerprint: Fingerprint | None = setting(
        None,
        "Fingerprint the fetched key must have (default: the release stream's, from the "
        "matrix); a mismatch fails the host, writing nothing",
        REPOSITORY,
    )
    rocm_apt_auth: SecretSource | None = setting(
        None,
        "Credentials for apt's sources, for a repository or mirror that asks for them: "
        "`env:VARIABLE` or a 0600 file where pyinfra runs holding apt_auth.conf(5) lines "
        "(`machine HOST login USER password SECRET`); written to "
        f"`{paths.APT_AUTH}` (root, 0600), never shown. Unset: that file goes",
        REPOSITORY,
    )
    # --- ROCm packages ---------------------------------------------------------------
    rocm_packages: PackageNames | None = setting(
        None,
        'AMD meta packages to install, e.g. `["rocm"]`; default: '
        + matrix.CLASSIC.default_packages_text
        + " (classic), "
        + matrix.CORE_SDK.default_packages_text
        + " (Core SDK)",
        PACKAGES,
    )
    # --- GPU groups ------------------------------------------------------------------
    rocm_users: UserNames = setting(
        [],
        "Existing users to add to `video` and `render` (other groups kept)",
        GROUPS,
    )
    # --- PyTorch ---------------------------------------------------------------------
    pytorch_install: Flag = setting(
        True,
        "Install the PyTorch venv (false: ROCm only)",
        PYTORCH,
    )
    pytorch_venv: AbsolutePath = setting(
        paths.DEFAULT_VENV,
        "Path of the venv holding torch",
        PYTORCH,
    )
    pytorch_index_base_url: HttpUrl = setting(
        matrix.PYTORCH_INDEX_BASE_URL,
        "Base of the wheel indexes; `/rocmX.Y` from the matrix is appended",
        PYTORCH,
    )
    rocm_pip_netrc: SecretSource | None = setting(
        None,
        "Credentials for the wheel index, for one that asks for them: `env:VARIABLE` or a 0600 "
        "file where pyinfra runs holding netrc lines (`machine HOST login USER password "
        f"SECRET`); written to `{paths.PIP_NETRC}` (root, 0600) and given to pip as `NETRC`, "
        "never shown. Unset: that file goes",
        PYTORCH,
    )
    torch_version: TorchRelease | None = setting(
        None,
        "The torch version, e.g. `2.9.1`; default: the newest the matrix lists for "
        "`rocm_version` (ROCm 10.x: of those AMD's page offers every `expected_gfx`)",
        PYTORCH,
    )
    # --- Verify ----------------------------------------------------------------------
    expected_gfx: GfxTargets | None = setting(
        None,
        'GPU target(s) rocminfo and torch must report, e.g. `gfx1100` or `["gfx942"]`',
        VERIFY,
    )
    expected_gpu_count: Count | None = setting(
        None,
        "How many GPUs of `expected_gfx` must be present; 0 for a GPU-less host (CI, image builds)",
        VERIFY,
    )
    # --- Preflight -------------------------------------------------------------------
    rocm_distro_override: Distro | None = setting(
        None,
        'Deploy a distro the matrix doesn\'t know as one it does, e.g. `"ubuntu 24.04"` for '
        "Linux Mint 22 (unofficial: warned). Without it an unknown distro is refused",
        PREFLIGHT,
    )
    preflight_min_free_gb: Count = setting(
        10,
        f"Free space (GB) preflight requires for {paths.INSTALL_PATHS[0]}, the venv and apt's "
        "cache while apt can't size the ROCm packages (no AMD source yet); once it can, apt's "
        "figure is used",
        PREFLIGHT,
    )
    # --- Kernel ----------------------------------------------------------------------
    rocm_kernel_backports: _one_of("auto", "always", "never") = setting(
        "auto",
        "A newer kernel (Debian 12: bookworm-backports; Ubuntu: HWE): `auto` when the running "
        "kernel is older than `expected_gfx` needs, `always`, or `never`",
        KERNEL,
    )
    rocm_kernel_backports_mirror: HttpUrl | None = setting(
        None,
        "Debian mirror for the backports source; default: the one the host's own Debian "
        "sources use",
        KERNEL,
    )
    rocm_kernel_hold: Flag = setting(
        False,
        "With `rocm_driver: dkms`: put the kernel meta packages the host has installed "
        "(`linux-image-amd64`, `linux-generic`, `linux-generic-hwe-*`, `linux-oem-*`, their "
        "image and headers packages) on hold (`apt-mark hold`), so an unattended upgrade "
        "can't bring a kernel of a new ABI that `amdgpu-dkms` may not build for, and the "
        "node boot without its GPU. AMD publishes no kernel range per driver release: the "
        "range held is the one the host has. To move the kernel deliberately, unset it (or "
        "plan the move with `rocm_kernel_backports`, which releases the hold for that "
        "install alone). False: rocm-fleet releases only the holds it placed",
        KERNEL,
    )
    # --- amdgpu driver ---------------------------------------------------------------
    rocm_driver: _one_of("inbox", "dkms") = setting(
        "inbox",
        "The amdgpu kernel driver: `inbox` (the kernel's own) or `dkms` (AMD's `amdgpu-dkms`, "
        "built for the running and newer kernels; needs an enrolled key with Secure Boot)",
        DRIVER,
    )
    rocm_amdgpu_apt_base_url: HttpUrl = setting(
        matrix.AMDGPU_APT_BASE_URL,
        "Base of AMD's amdgpu driver repository (with `rocm_driver: dkms`)",
        DRIVER,
    )
    rocm_amdgpu_key_url: HttpUrl = setting(
        matrix.AMDGPU_KEY_URL,
        "URL of the driver repository's signing key, installed with a Core SDK release and "
        "`rocm_driver: dkms` (a classic release's key signs both)",
        DRIVER,
    )
    rocm_amdgpu_key_fingerprint: Fingerprint = setting(
        matrix.AMDGPU_KEY_FINGERPRINT,
        "Fingerprint that key must have",
        DRIVER,
    )
    # --- APU memory ----------------------------------------------------------------
    rocm_apu_gtt_gib: Positive | None = setting(
        None,
        "GiB of system memory a Ryzen APU's GPU may map (GTT), set as the kernel's TTM page "
        f"limit the way AMD documents it (`options ttm pages_limit=` in `{paths.TTM_MODPROBE}`); "
        "applies at the next boot (a reboot reason). Only on hosts with an APU, at most 90% of "
        "MemTotal, never beside `amdgpu.gttsize`. Unset: the file goes (the kernel's default, "
        "half the RAM)",
        APU,
    )
    # --- Secure Boot -----------------------------------------------------------------
    rocm_mok_password_env: EnvName = setting(
        "ROCM_FLEET_MOK_PASSWORD",
        "Environment variable (where pyinfra runs) with the one-time MOK password to type at "
        "the console; unset: asked once when pyinfra runs in a terminal",
        SECURE_BOOT,
    )
    # --- Reboot ----------------------------------------------------------------------
    rocm_reboot: _one_of("allow", "never") = setting(
        "never",
        "Reboots: `allow` = hosts that need one (new kernel, new driver, MOK to confirm) "
        "reboot, then are verified again; `never` = the run ends listing them",
        REBOOT,
    )
    rocm_reboot_parallel: Positive = setting(
        1,
        "How many hosts reboot at a time (set it fleet-wide)",
        REBOOT,
    )
    rocm_reboot_timeout: Positive = setting(
        600,
        "Seconds a rebooting host has to come back before it fails",
        REBOOT,
    )
    # --- Fleet mirror ----------------------------------------------------------------
    rocm_mirror: MirrorName | None = setting(
        None,
        "The fleet mirror: an inventory host the deploy makes serve AMD's repositories, key and "
        "the PyTorch wheels to the fleet (nginx), or the `http(s)://` URL of one served elsewhere; "
        "hosts naming it fetch from it, apt still checking AMD's signature. Unset: upstream",
        MIRROR,
    )
    rocm_mirror_bundle: AbsolutePath | None = setting(
        None,
        "A bundle made by `rocm-fleet bundle` (a directory where pyinfra runs) the mirror "
        "serves: nothing comes from upstream, and preflight refuses a host needing what it "
        "lacks. Unset: the mirror host is a live cache of upstream",
        MIRROR,
    )
    rocm_mirror_port: Port = setting(
        8080,
        "The port the mirror host serves on (HTTPS with `rocm_mirror_tls_cert`, else plain HTTP)",
        MIRROR,
    )
    rocm_mirror_tls_ca: AbsolutePath | None = setting(
        None,
        "The CA certificate (PEM, a path where pyinfra runs) that issued the mirror's: hosts "
        "using the mirror pin it for the mirror alone (apt, pip, curl). Set on the mirror host "
        "with the two below (`rocm-fleet mirror-ca DIR ADDRESS` makes all three), or on hosts "
        "naming an `https://` mirror served elsewhere. Unset: the mirror is plain HTTP",
        MIRROR,
    )
    rocm_mirror_tls_cert: AbsolutePath | None = setting(
        None,
        "The mirror's certificate (PEM, where pyinfra runs), issued by `rocm_mirror_tls_ca` "
        "for the address the hosts reach it by; nginx then serves HTTPS only",
        MIRROR,
    )
    rocm_mirror_tls_key: AbsolutePath | None = setting(
        None,
        "The private key of `rocm_mirror_tls_cert` (PEM, unencrypted, mode 0600 where "
        "pyinfra runs); the mirror host keeps it root-only (0600)",
        MIRROR,
    )
    rocm_mirror_listen: IpAddress | None = setting(
        None,
        "The address the mirror host's nginx listens on. Unset: the address the inventory "
        "reaches it by (`ssh_hostname`) when that is an IP address, else every interface",
        MIRROR,
    )
    rocm_mirror_allow: Networks = setting(
        [],
        "Networks (CIDR) besides the inventory's hosts that may use the mirror; nginx refuses "
        "everyone else. Needed for hosts the inventory names by DNS name, not address",
        MIRROR,
    )
    # --- Proxy -----------------------------------------------------------------------
    rocm_proxy: ProxyUrl | None = setting(
        None,
        "HTTP(S) proxy for apt (all sources), AMD's key and pip, e.g. "
        "`http://proxy.example.org:3128`; no credentials in it",
        PROXY,
    )
    rocm_no_proxy: NoProxy = setting(
        [],
        "Hosts reached directly, not through `rocm_proxy` (the fleet mirror always is); apt "
        "takes exact host names, curl and pip also `.domain` suffixes and CIDR ranges",
        PROXY,
    )
    # --- Migrate from CUDA -----------------------------------------------------------
    rocm_migrate_from_cuda: Flag = setting(
        False,
        "Remove what preflight finds of NVIDIA's stack (driver and CUDA packages, CUDA wheels "
        "in the venv) before installing ROCm; false: its presence stops the host",
        CUDA,
    )
    # --- Pull mode -------------------------------------------------------------------
    rocm_pull: Flag = setting(
        False,
        "Make the node converge itself: a systemd timer runs this deploy `@local` from a "
        "pinned rocm-fleet against the node's inventory data fetched from `rocm_pull_source`, "
        "checks the node and writes the audit for node_exporter. False: pull mode's units and "
        "venv are removed",
        PULL,
    )
    rocm_pull_source: HttpUrl | None = setting(
        None,
        "The `http(s)://` URL of the fleet's TUF repository (`rocm-fleet publish`), on the "
        "fleet mirror or any static host, whose signed target `nodes/NODE.json` is the node's "
        "settings (required with `rocm_pull`; a push gives it, pulled data never does)",
        PULL,
    )
    rocm_pull_trusted_root: AbsolutePath | None = setting(
        None,
        "The repository's TUF root metadata (a path where pyinfra runs, e.g. "
        "`REPOSITORY/metadata/root.json`): the keys a node trusts, installed by a push only; "
        "rotations signed by it are then followed through the pull (required with `rocm_pull`)",
        PULL,
    )
    rocm_pull_node: PullNodeName | None = setting(
        None,
        "The name of the node's target in the repository (default: its inventory name); "
        "a push gives it, pulled data never does",
        PULL,
    )
    rocm_pull_lock: UrlOrPath | None = setting(
        None,
        "URL or path of a requirements file locking rocm-fleet's wheel and every dependency "
        "by hash (`name @ URL --hash=sha256:...`), installed with `pip --require-hashes` "
        "(required with `rocm_pull`)",
        PULL,
    )
    rocm_pull_lock_sha256: Sha256 | None = setting(
        None,
        "SHA-256 the lock file must have, so neither it nor a wheel can be swapped on the "
        "way (required with `rocm_pull`)",
        PULL,
    )
    rocm_pull_interval: TimeSpan = setting(
        "1h",
        "How long after one pull the next runs (systemd time span, `OnUnitActiveSec`)",
        PULL,
    )
    rocm_pull_random_delay: TimeSpan = setting(
        "10min",
        "Random delay added to each pull, so a fleet doesn't fetch at once (`RandomizedDelaySec`)",
        PULL,
    )
    # --- Slurm -----------------------------------------------------------------------
    rocm_slurm_gres: Flag = setting(
        False,
        f"Write `{paths.SLURM_GRES_CONF}` from the GPUs preflight finds (one `Name=gpu "
        f"Type=<type> File={paths.RENDER_NODE_PREFIX}<n>` line each; Slurm's AMD autodetect "
        "needs ROCm SMI's library, which newer ROCm doesn't build) and report the "
        "`Gres=gpu:<type>:<n>` the node's line in the controller's slurm.conf needs; slurmd "
        "reads it at its next start. False (or `rocm_state: absent`): the file rocm-fleet wrote "
        "goes, if it still holds what rocm-fleet wrote; a site's own file is left alone",
        SLURM,
    )
    rocm_slurm_gres_type: SlurmGresType | None = setting(
        None,
        "The GRES type of every GPU of the node (as the site's slurm.conf names it); unset: "
        "the product where the PCI ID names one (`mi300x`, `w7900`), else the gfx target",
        SLURM,
    )
    rocm_slurm_drain: Flag = setting(
        False,
        "`rocm-fleet roll` drains the node in Slurm before changing it, waits for its jobs to "
        "end, and resumes it once the node checks pass (one that fails stays drained, the "
        "reason saying why). A node with no drift is never drained",
        SLURM,
    )
    rocm_slurm_drain_timeout: Positive = setting(
        3600,
        "Seconds `rocm-fleet roll` waits for a drained node's jobs to end; then the node is "
        "left unchanged and resumed (jobs are never killed)",
        SLURM,
    )
    rocm_slurm_node_name: SlurmNodeName | None = setting(
        None,
        "The node's name in Slurm (NodeName=). Unset: its short host name (`hostname -s`), "
        "as slurmd names itself",
        SLURM,
    )


SETTINGS = {f.name: f for f in fields(Settings)}
_HINTS = get_type_hints(Settings, include_extras=True)


#: The settings that may be left unset (``X | None``).
_UNSET = {key for key, hint in _HINTS.items() if type(None) in get_args(hint)}
_OR_UNSET = "; or leave it unset"


def _valid(hint: Any) -> str:
    if get_origin(hint) is not Annotated:  # X | None
        (hint,) = (arg for arg in get_args(hint) if arg is not type(None))
    return next(m.text for m in reversed(hint.__metadata__) if isinstance(m, Valid))


#: What each setting's value must be, in words.
VALID = {key: _valid(_HINTS[key]) + (_OR_UNSET if key in _UNSET else "") for key in SETTINGS}


# --- validation -------------------------------------------------------------------------------


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
    """``value`` with the user and password of a URL in it replaced by ``***``: an error
    message must not put a secret in a log. Everything up to the last ``@`` of the
    authority (which ends at the first ``/``, ``?`` or ``#``, RFC 3986) goes, so a password
    holding an ``@`` is not half shown."""
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
        where = _where(origin, key)
        if key in RENAMED:
            line = f"{host}: inventory key {key!r}{where} was renamed to {RENAMED[key]!r}"
        elif near := near_misses(key):
            # Any other key may be another deploy's (gpu_vendor, torch_compile): only a
            # near-miss of a setting is taken for a typo.
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
            valid = context.get("valid", error["msg"]) + (_OR_UNSET if key in _UNSET else "")
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


def _or(names: tuple[str, ...]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def schema_adapter() -> TypeAdapter[Settings]:
    """pydantic's view of ``Settings``, which validates and writes the JSON Schema."""
    return _SCHEMA
