"""Every inventory setting of rocm-fleet: its key, type, default, meaning and check.

This is the one place a setting is declared, geerlingguy-role style: one dataclass field
per key, grouped by the concern that reads it. ``config.load_config`` validates a host's
data against these fields before any operation is planned, the tasks read them as typed
attributes (``config.rocm_driver``), and the README's settings table is generated from
them (``python -m rocm_fleet.model.config``).

A key that is not a setting is left alone (it may be another deploy's: ``gpu_vendor``,
``torch_compile``), unless it is a near-miss of one (``rocm_verison``: "did you mean
'rocm_version'?", ``difflib`` against the declared keys with ``NEAR_MISS_CUTOFF``); keys
renamed from earlier versions are refused with their new name.

Checks return ``None`` when the value is fine, otherwise a phrase that says what would be
valid ("a list of user names"); the error names the host, the key and the value.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from rocm_fleet.model import matrix, paths

Check = Callable[[Any], "str | None"]

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


# --- checks -----------------------------------------------------------------------------------


def boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def string(value: Any) -> str | None:
    return None if isinstance(value, str) and value else "a non-empty string"


def optional(check: Check) -> Check:
    def _check(value: Any) -> str | None:
        if value is None:
            return None
        problem = check(value)
        return f"{problem}; or leave it unset" if problem else None

    return _check


def one_of(*choices: str) -> Check:
    def _check(value: Any) -> str | None:
        return None if value in choices else "one of " + ", ".join(repr(c) for c in choices)

    return _check


def _as_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def release_name(value: Any) -> str | None:
    """A version typed as a number (``6.4`` in YAML or ``--data rocm_version=6.4``) has
    lost its trailing zeros and can't be told from another release: ask for a string."""
    if _as_number(value):
        return (
            f"a quoted release string such as '6.4.3', '7.2.1' or '7.14.1' ({value!r} arrived "
            "as a number: quote it in the inventory, or pass --data 'rocm_version=\"6.4.3\"')"
        )
    return None if isinstance(value, str) and value else "a release string such as '6.4.3'"


def torch_release(value: Any) -> str | None:
    """A torch version typed as a number (``torch_version: 2.5``) is a float: ask for a
    quoted string, as for ``rocm_version``."""
    if _as_number(value):
        return (
            f"a quoted torch version such as '2.9.1' ({value!r} arrived as a number: quote it "
            "in the inventory, or pass --data 'torch_version=\"2.9.1\"')"
        )
    return string(value) and "a torch version string such as '2.9.1'"


# Where credentials for a repository or an index belong instead of a URL, which ends up in
# world-readable apt sources, pip's and curl's command lines, bundle directory names and logs.
CREDENTIALS_BELONG = (
    "a URL without user or password: give apt its credentials with rocm_apt_auth (an "
    "apt_auth.conf(5) file the deploy writes to /etc/apt/auth.conf.d/, mode 0600) and pip "
    "with rocm_pip_netrc (a netrc file, mode 0600), each read where pyinfra runs from a "
    "0600 file or 'env:VARIABLE'"
)


def http_url(value: Any) -> str | None:
    if isinstance(value, str) and "@" in value.split("://", 1)[-1].split("/", 1)[0]:
        return CREDENTIALS_BELONG
    valid = isinstance(value, str) and re.match(r"^https?://[^/\s]+(/\S*)?$", value)
    return None if valid else "an http:// or https:// URL"


def absolute_path(value: Any) -> str | None:
    valid = isinstance(value, str) and value.startswith("/") and not re.search(r"\s", value)
    return None if valid else "an absolute path without spaces"


def secret_source(value: Any) -> str | None:
    """Where a secret comes from where pyinfra runs: ``env:NAME`` (an environment
    variable) or the absolute path of a file (mode 0600, checked when the run starts). The
    secret itself never is a setting: inventories are read by many and kept in git."""
    if isinstance(value, str) and value.startswith("env:"):
        return env_name(value[4:]) and "'env:' and an environment variable name"
    return absolute_path(value) and (
        "the absolute path of a file of mode 0600 where pyinfra runs, or 'env:VARIABLE'"
    )


def proxy_url(value: Any) -> str | None:
    """An http(s) proxy URL without credentials: apt's configuration (world-readable), curl's
    and pip's command lines would show them."""
    valid = isinstance(value, str) and re.match(r"^https?://[^/\s@]+/?$", value)
    if isinstance(value, str) and "@" in value:
        return "a proxy URL without user or password (let the proxy admit the hosts by address)"
    return None if valid else "an http:// URL of the proxy, e.g. 'http://proxy.example.org:3128'"


def mirror_name(value: Any) -> str | None:
    """An inventory host name, or the URL of a mirror served elsewhere."""
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return http_url(value)
    valid = isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.:-]+", value)
    return None if valid else "an inventory host name, or the http:// URL of a mirror"


def no_proxy_entry(value: Any) -> str | None:
    valid = isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.:*/-]+", value)
    return None if valid else "a host name, IP address, .domain suffix or CIDR range"


def ip_address(value: Any) -> str | None:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return "an IPv4 or IPv6 address"
    return None


def cidr(value: Any) -> str | None:
    try:
        ipaddress.ip_network(value, strict=False)
    except (TypeError, ValueError):
        return "an IP address or CIDR network such as 10.0.0.0/24"
    return None


def port(value: Any) -> str | None:
    valid = isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535
    return None if valid else "a TCP port, 1 to 65535"


def fingerprint(value: Any) -> str | None:
    """40 hex digits, in either case, grouped with spaces or not (as ``gpg`` prints it):
    ``normal_fingerprint`` makes every spelling the one the keyring fact reports."""
    valid = isinstance(value, str) and re.fullmatch(r"[0-9A-Fa-f]{40}", value.replace(" ", ""))
    return None if valid else "40 hexadecimal digits (an OpenPGP v4 fingerprint)"


def normal_fingerprint(value: Any) -> Any:
    return value.replace(" ", "").upper() if isinstance(value, str) else value


# systemd.time(7)'s time spans: numbers with units, e.g. "1h", "30min", "1h 30min", "90s".
_TIME_SPAN = re.compile(
    r"(\d+ ?(us|usec|ms|msec|s|sec|second|seconds|m|min|minute|minutes|h|hr|hour|hours|"
    r"d|day|days|w|week|weeks) ?)+"
)


def time_span(value: Any) -> str | None:
    """A systemd time span with a unit (a bare number is seconds to systemd, and a slip)."""
    valid = isinstance(value, str) and _TIME_SPAN.fullmatch(value)
    nonzero = valid and re.search(r"[1-9]", value)
    return None if nonzero else "a systemd time span such as '1h', '30min' or '1h 30min'"


def url_or_path(value: Any) -> str | None:
    """An http(s) URL (no credentials) or an absolute path on the host."""
    if isinstance(value, str) and value.startswith(("http://", "https://")):
        return http_url(value)
    return absolute_path(value) and "an http:// or https:// URL, or an absolute path on the host"


def pull_node_name(value: Any) -> str | None:
    """A pull node's target name: one path component of the repository."""
    valid = isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}", value)
    return None if valid else "letters, digits, '.', '_' or '-', starting with a letter or digit"


def sha256(value: Any) -> str | None:
    valid = isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value)
    return None if valid else "64 lower-case hexadecimal digits (a SHA-256, as sha256sum prints it)"


def count(value: Any) -> str | None:
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if valid else "a whole number >= 0"


def positive(value: Any) -> str | None:
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return None if valid else "a whole number >= 1"


def env_name(value: Any) -> str | None:
    valid = isinstance(value, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value)
    return None if valid else "an environment variable name"


def list_of(item_check: Check, what: str) -> Check:
    def _check(value: Any) -> str | None:
        if isinstance(value, str):
            # The commonest slip: one name, or names with commas, where a list belongs.
            items = [item.strip() for item in value.split(",") if item.strip()]
            return f"a list of {what}, written as a list even for one, e.g. {items!r}"
        if not isinstance(value, (list, tuple)):
            return f"a list of {what}, e.g. ['...']"
        for item in value:
            if item_check(item) is not None:
                return f"a list of {what} ({item!r} is not one)"
        return None

    return _check


_USER = re.compile(r"^[a-z_][a-z0-9_-]*[$]?$")


def user_name(value: Any) -> str | None:
    valid = isinstance(value, str) and len(value) <= 32 and _USER.match(value)
    return None if valid else "a POSIX user name"


def package_name(value: Any) -> str | None:
    valid = isinstance(value, str) and re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", value)
    return None if valid else "a Debian package name"


def gfx_targets(value: Any) -> str | None:
    """A gfx target the matrix knows, or a non-empty list of them."""
    items = [value] if isinstance(value, str) else value
    known = [target.gfx for target in matrix.GPU_TARGETS]
    valid = f"gfx targets the matrix knows ({', '.join(known)}), one or a list"
    if not isinstance(items, (list, tuple)) or not items:
        return valid
    unknown = [item for item in items if item not in known]
    return f"{valid}; {', '.join(map(repr, unknown))} is not one" if unknown else None


def distro_key(value: Any) -> str | None:
    return one_of(*matrix.DISTRO_KEYS)(value)


# --- declarations -----------------------------------------------------------------------------


def setting(
    default: Any,
    meaning: str,
    check: Check,
    concern: str,
    normal: Callable[[Any], Any] | None = None,
) -> Any:
    """A dataclass field carrying the setting's meaning, check and concern (a list default
    becomes a ``default_factory``, so no two hosts share one list); ``normal`` turns a
    valid value into its one spelling (a fingerprint in upper case), so two spellings of
    one value never plan different things."""
    metadata = {"meaning": meaning, "check": check, "concern": concern, "normal": normal}
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
    rocm_version: str = setting(
        "",
        "ROCm release to install, e.g. `6.4.3` or `7.2.1` (classic), `7.14.1` or `10.1.0` "
        "(ROCm Core SDK); `rocm-fleet matrix` lists them (required)",
        release_name,
        REPOSITORY,
    )
    rocm_state: str = setting(
        "present",
        "`present`, or `absent` to remove what the deploy added (sources, key, pin, ROCm "
        "packages, venv, loader and PATH files); users, groups and kernels stay",
        one_of("present", "absent"),
        REPOSITORY,
    )
    rocm_apt_base_url: str | None = setting(
        None,
        "Base of the release's AMD repository, for a mirror of it; default: the release's "
        "(`repo.radeon.com/rocm/apt`, `repo.amd.com/rocm/packages-multi-arch` for 7.14, "
        "`stable.repo.amd.com/rocm/core/packages` for 10.x)",
        optional(http_url),
        REPOSITORY,
    )
    rocm_key_url: str | None = setting(
        None,
        "URL of the repository's signing key; default: the release's, from AMD",
        optional(http_url),
        REPOSITORY,
    )
    rocm_key_fingerprint: str | None = setting(
        None,
        "Fingerprint the fetched key must have (default: the release stream's, from the "
        "matrix); a mismatch fails the host, writing nothing",
        optional(fingerprint),
        REPOSITORY,
        normal_fingerprint,
    )
    rocm_apt_auth: str | None = setting(
        None,
        "Credentials for apt's sources, for a repository or mirror that asks for them: "
        "`env:VARIABLE` or a 0600 file where pyinfra runs holding apt_auth.conf(5) lines "
        "(`machine HOST login USER password SECRET`); written to "
        f"`{paths.APT_AUTH}` (root, 0600), never shown. Unset: that file goes",
        optional(secret_source),
        REPOSITORY,
    )
    # --- ROCm packages ---------------------------------------------------------------
    rocm_packages: list[str] | None = setting(  # noqa: RUF009 - a field() (default None)
        None,
        'AMD meta packages to install, e.g. `["rocm"]`; default: '
        + matrix.CLASSIC.default_packages_text
        + " (classic), "
        + matrix.CORE_SDK.default_packages_text
        + " (Core SDK)",
        optional(list_of(package_name, "Debian package names")),
        PACKAGES,
    )
    # --- GPU groups ------------------------------------------------------------------
    rocm_users: list[str] = setting(  # noqa: RUF009 - a field() with a default_factory
        [],
        "Existing users to add to `video` and `render` (other groups kept)",
        list_of(user_name, "user names"),
        GROUPS,
    )
    # --- PyTorch ---------------------------------------------------------------------
    pytorch_install: bool = setting(
        True, "Install the PyTorch venv (false: ROCm only)", boolean, PYTORCH
    )
    pytorch_venv: str = setting(
        paths.DEFAULT_VENV, "Path of the venv holding torch", absolute_path, PYTORCH
    )
    pytorch_index_base_url: str = setting(
        matrix.PYTORCH_INDEX_BASE_URL,
        "Base of the wheel indexes; `/rocmX.Y` from the matrix is appended",
        http_url,
        PYTORCH,
    )
    rocm_pip_netrc: str | None = setting(
        None,
        "Credentials for the wheel index, for one that asks for them: `env:VARIABLE` or a 0600 "
        "file where pyinfra runs holding netrc lines (`machine HOST login USER password "
        f"SECRET`); written to `{paths.PIP_NETRC}` (root, 0600) and given to pip as `NETRC`, "
        "never shown. Unset: that file goes",
        optional(secret_source),
        PYTORCH,
    )
    torch_version: str | None = setting(
        None,
        "The torch version, e.g. `2.9.1`; default: the newest the matrix lists for "
        "`rocm_version` (ROCm 10.x: of those AMD's page offers every `expected_gfx`)",
        optional(torch_release),
        PYTORCH,
    )
    # --- Verify ----------------------------------------------------------------------
    expected_gfx: str | list[str] | None = setting(  # noqa: RUF009 - a field() (default None)
        None,
        'GPU target(s) rocminfo and torch must report, e.g. `gfx1100` or `["gfx942"]`',
        optional(gfx_targets),
        VERIFY,
    )
    expected_gpu_count: int | None = setting(
        None,
        "How many GPUs of `expected_gfx` must be present; 0 for a GPU-less host (CI, image builds)",
        optional(count),
        VERIFY,
    )
    # --- Preflight -------------------------------------------------------------------
    rocm_distro_override: str | None = setting(
        None,
        'Deploy a distro the matrix doesn\'t know as one it does, e.g. `"ubuntu 24.04"` for '
        "Linux Mint 22 (unofficial: warned). Without it an unknown distro is refused",
        optional(distro_key),
        PREFLIGHT,
    )
    preflight_min_free_gb: int = setting(
        10,
        f"Free space (GB) preflight requires for {paths.INSTALL_PATHS[0]}, the venv and apt's "
        "cache while apt can't size the ROCm packages (no AMD source yet); once it can, apt's "
        "figure is used",
        count,
        PREFLIGHT,
    )
    # --- Kernel ----------------------------------------------------------------------
    rocm_kernel_backports: str = setting(
        "auto",
        "A newer kernel (Debian 12: bookworm-backports; Ubuntu: HWE): `auto` when the running "
        "kernel is older than `expected_gfx` needs, `always`, or `never`",
        one_of("auto", "always", "never"),
        KERNEL,
    )
    rocm_kernel_backports_mirror: str | None = setting(
        None,
        "Debian mirror for the backports source; default: the one the host's own Debian "
        "sources use",
        optional(http_url),
        KERNEL,
    )
    # --- amdgpu driver ---------------------------------------------------------------
    rocm_driver: str = setting(
        "inbox",
        "The amdgpu kernel driver: `inbox` (the kernel's own) or `dkms` (AMD's `amdgpu-dkms`, "
        "built for the running and newer kernels; needs an enrolled key with Secure Boot)",
        one_of("inbox", "dkms"),
        DRIVER,
    )
    rocm_amdgpu_apt_base_url: str = setting(
        matrix.AMDGPU_APT_BASE_URL,
        "Base of AMD's amdgpu driver repository (with `rocm_driver: dkms`)",
        http_url,
        DRIVER,
    )
    rocm_amdgpu_key_url: str = setting(
        matrix.AMDGPU_KEY_URL,
        "URL of the driver repository's signing key, installed with a Core SDK release and "
        "`rocm_driver: dkms` (a classic release's key signs both)",
        http_url,
        DRIVER,
    )
    rocm_amdgpu_key_fingerprint: str = setting(
        matrix.AMDGPU_KEY_FINGERPRINT,
        "Fingerprint that key must have",
        fingerprint,
        DRIVER,
        normal_fingerprint,
    )
    # --- Secure Boot -----------------------------------------------------------------
    rocm_mok_password_env: str = setting(
        "ROCM_FLEET_MOK_PASSWORD",
        "Environment variable (where pyinfra runs) with the one-time MOK password to type at "
        "the console; unset: asked once when pyinfra runs in a terminal",
        env_name,
        SECURE_BOOT,
    )
    # --- Reboot ----------------------------------------------------------------------
    rocm_reboot: str = setting(
        "never",
        "Reboots: `allow` = hosts that need one (new kernel, new driver, MOK to confirm) "
        "reboot, then are verified again; `never` = the run ends listing them",
        one_of("allow", "never"),
        REBOOT,
    )
    rocm_reboot_parallel: int = setting(
        1, "How many hosts reboot at a time (set it fleet-wide)", positive, REBOOT
    )
    rocm_reboot_timeout: int = setting(
        600, "Seconds a rebooting host has to come back before it fails", positive, REBOOT
    )
    # --- Fleet mirror ----------------------------------------------------------------
    rocm_mirror: str | None = setting(
        None,
        "The fleet mirror: an inventory host the deploy makes serve AMD's repositories, key and "
        "the PyTorch wheels to the fleet (nginx), or the `http(s)://` URL of one served elsewhere; "
        "hosts naming it fetch from it, apt still checking AMD's signature. Unset: upstream",
        optional(mirror_name),
        MIRROR,
    )
    rocm_mirror_bundle: str | None = setting(
        None,
        "A bundle made by `rocm-fleet bundle` (a directory where pyinfra runs) the mirror "
        "serves: nothing comes from upstream, and preflight refuses a host needing what it "
        "lacks. Unset: the mirror host is a live cache of upstream",
        optional(absolute_path),
        MIRROR,
    )
    rocm_mirror_port: int = setting(
        8080,
        "The port the mirror host serves on (HTTPS with `rocm_mirror_tls_cert`, else plain HTTP)",
        port,
        MIRROR,
    )
    rocm_mirror_tls_ca: str | None = setting(
        None,
        "The CA certificate (PEM, a path where pyinfra runs) that issued the mirror's: hosts "
        "using the mirror pin it for the mirror alone (apt, pip, curl). Set on the mirror host "
        "with the two below (`rocm-fleet mirror-ca DIR ADDRESS` makes all three), or on hosts "
        "naming an `https://` mirror served elsewhere. Unset: the mirror is plain HTTP",
        optional(absolute_path),
        MIRROR,
    )
    rocm_mirror_tls_cert: str | None = setting(
        None,
        "The mirror's certificate (PEM, where pyinfra runs), issued by `rocm_mirror_tls_ca` "
        "for the address the hosts reach it by; nginx then serves HTTPS only",
        optional(absolute_path),
        MIRROR,
    )
    rocm_mirror_tls_key: str | None = setting(
        None,
        "The private key of `rocm_mirror_tls_cert` (PEM, unencrypted, mode 0600 where "
        "pyinfra runs); the mirror host keeps it root-only (0600)",
        optional(absolute_path),
        MIRROR,
    )
    rocm_mirror_listen: str | None = setting(
        None,
        "The address the mirror host's nginx listens on. Unset: the address the inventory "
        "reaches it by (`ssh_hostname`) when that is an IP address, else every interface",
        optional(ip_address),
        MIRROR,
    )
    rocm_mirror_allow: list[str] = setting(  # noqa: RUF009 - a field() with a default_factory
        [],
        "Networks (CIDR) besides the inventory's hosts that may use the mirror; nginx refuses "
        "everyone else. Needed for hosts the inventory names by DNS name, not address",
        list_of(cidr, "IP addresses or CIDR networks such as 10.0.0.0/24"),
        MIRROR,
    )
    # --- Proxy -----------------------------------------------------------------------
    rocm_proxy: str | None = setting(
        None,
        "HTTP(S) proxy for apt (all sources), AMD's key and pip, e.g. "
        "`http://proxy.example.org:3128`; no credentials in it",
        optional(proxy_url),
        PROXY,
    )
    rocm_no_proxy: list[str] = setting(  # noqa: RUF009 - a field() with a default_factory
        [],
        "Hosts reached directly, not through `rocm_proxy` (the fleet mirror always is); apt "
        "takes exact host names, curl and pip also `.domain` suffixes and CIDR ranges",
        list_of(no_proxy_entry, "host names, .domain suffixes or CIDR ranges"),
        PROXY,
    )
    # --- Migrate from CUDA -----------------------------------------------------------
    rocm_migrate_from_cuda: bool = setting(
        False,
        "Remove what preflight finds of NVIDIA's stack (driver and CUDA packages, CUDA wheels "
        "in the venv) before installing ROCm; false: its presence stops the host",
        boolean,
        CUDA,
    )
    # --- Pull mode -------------------------------------------------------------------
    rocm_pull: bool = setting(
        False,
        "Make the node converge itself: a systemd timer runs this deploy `@local` from a "
        "pinned rocm-fleet against the node's inventory data fetched from `rocm_pull_source`, "
        "checks the node and writes the audit for node_exporter. False: pull mode's units and "
        "venv are removed",
        boolean,
        PULL,
    )
    rocm_pull_source: str | None = setting(
        None,
        "The `http(s)://` URL of the fleet's TUF repository (`rocm-fleet publish`), on the "
        "fleet mirror or any static host, whose signed target `nodes/NODE.json` is the node's "
        "settings (required with `rocm_pull`; a push gives it, pulled data never does)",
        optional(http_url),
        PULL,
    )
    rocm_pull_trusted_root: str | None = setting(
        None,
        "The repository's TUF root metadata (a path where pyinfra runs, e.g. "
        "`REPOSITORY/metadata/root.json`): the keys a node trusts, installed by a push only; "
        "rotations signed by it are then followed through the pull (required with `rocm_pull`)",
        optional(absolute_path),
        PULL,
    )
    rocm_pull_node: str | None = setting(
        None,
        "The name of the node's target in the repository (default: its inventory name); "
        "a push gives it, pulled data never does",
        optional(pull_node_name),
        PULL,
    )
    rocm_pull_lock: str | None = setting(
        None,
        "URL or path of a requirements file locking rocm-fleet's wheel and every dependency "
        "by hash (`name @ URL --hash=sha256:...`), installed with `pip --require-hashes` "
        "(required with `rocm_pull`)",
        optional(url_or_path),
        PULL,
    )
    rocm_pull_lock_sha256: str | None = setting(
        None,
        "SHA-256 the lock file must have, so neither it nor a wheel can be swapped on the "
        "way (required with `rocm_pull`)",
        optional(sha256),
        PULL,
    )
    rocm_pull_interval: str = setting(
        "1h",
        "How long after one pull the next runs (systemd time span, `OnUnitActiveSec`)",
        time_span,
        PULL,
    )
    rocm_pull_random_delay: str = setting(
        "10min",
        "Random delay added to each pull, so a fleet doesn't fetch at once (`RandomizedDelaySec`)",
        time_span,
        PULL,
    )


SETTINGS = {f.name: f for f in fields(Settings)}
