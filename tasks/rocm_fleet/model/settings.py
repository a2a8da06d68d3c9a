"""Every inventory setting of rocm-fleet: its key, type, default, meaning and rule.

This is the one place a setting is declared, geerlingguy-role style: one dataclass field
per key, grouped by the concern that reads it, its type annotated with the ``Rule`` its
value must follow (``Annotated[list[str], list_of(USER_NAME, "user names")]``).
``config.load_config`` validates a host's data against this schema before any operation is
planned, the tasks read the settings as typed attributes (``config.rocm_driver``), and
everything that documents them is generated from it (``model.settings_reference``:
``rocm-fleet settings``, the README's table, ``docs/settings.md`` and the JSON Schema for
editors, ``docs/settings.schema.json``).

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
is a ``Rule`` (``model.rules``): what is valid in words, a full-match grammar
(``model.grammar``) or a predicate, its JSON Schema, and the phrase for a value wrong in a
known way; pydantic calls it, collects its errors, and ``config`` words them as before.

A key that is not a setting is left alone (it may be another deploy's: ``gpu_vendor``,
``torch_compile``), unless it is a near-miss of one (``near_misses``); keys renamed from
earlier versions are refused with their new name.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, get_type_hints

from pydantic import TypeAdapter, ValidationError

from rocm_fleet.model import matrix, paths
from rocm_fleet.model.rules import (
    ABSOLUTE_PATH,
    COUNT,
    DISTRO,
    ENV_NAME,
    FINGERPRINT,
    FLAG,
    GFX_TARGETS,
    HTTP_URL,
    IP_ADDRESS,
    IP_NETWORK,
    MIRROR_NAME,
    NO_PROXY_ENTRY,
    PACKAGE_NAME,
    PORT,
    POSITIVE,
    PROXY_URL,
    PULL_NODE_NAME,
    RELEASE,
    SECRET_SOURCE,
    SHA256,
    SLURM_GRES_TYPE,
    SLURM_NODE_NAME,
    TIME_SPAN,
    TORCH_RELEASE,
    URL_OR_PATH,
    USER_NAME,
    Rule,
    choice,
    list_of,
    optional,
)

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
    rocm_version: Annotated[str, RELEASE] = setting(
        "",
        "ROCm release to install, e.g. `6.4.3` or `7.2.1` (classic), `7.14.1` or `10.1.0` "
        "(ROCm Core SDK); `rocm-fleet matrix` lists them (required)",
        REPOSITORY,
    )
    rocm_matrix_data: Annotated[str | None, optional(ABSOLUTE_PATH)] = setting(
        None,
        "A site's own matrix data (a file where pyinfra runs, written by `rocm-fleet matrix "
        "update --output`): releases AMD published after this rocm-fleet, verified against "
        "upstream before a host is planned from one; it can only add releases, never change "
        "a key, host or committed row. Unset: `ROCM_FLEET_MATRIX_DATA` where pyinfra runs, "
        "else the committed matrix alone. A pull node is given the file's content in its "
        "signed target by `rocm-fleet publish`, never a path",
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
    rocm_kernel_hold: Annotated[bool, FLAG] = setting(
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
    # --- APU memory ----------------------------------------------------------------
    rocm_apu_gtt_gib: Annotated[int | None, optional(POSITIVE)] = setting(
        None,
        "GiB of system memory a Ryzen APU's GPU may map (GTT), set as the kernel's TTM page "
        f"limit the way AMD documents it (`options ttm pages_limit=` in `{paths.TTM_MODPROBE}`); "
        "applies at the next boot (a reboot reason). Only on hosts with an APU, at most 90% of "
        "MemTotal, never beside `amdgpu.gttsize`. Unset: the file goes (the kernel's default, "
        "half the RAM)",
        APU,
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
    rocm_pull_source: Annotated[str | None, optional(HTTP_URL)] = setting(
        None,
        "The `http(s)://` URL of the fleet's TUF repository (`rocm-fleet publish`), on the "
        "fleet mirror or any static host, whose signed target `nodes/NODE.json` is the node's "
        "settings (required with `rocm_pull`; a push gives it, pulled data never does)",
        PULL,
    )
    rocm_pull_trusted_root: Annotated[str | None, optional(ABSOLUTE_PATH)] = setting(
        None,
        "The repository's TUF root metadata (a path where pyinfra runs, e.g. "
        "`REPOSITORY/metadata/root.json`): the keys a node trusts, installed by a push only; "
        "rotations signed by it are then followed through the pull (required with `rocm_pull`)",
        PULL,
    )
    rocm_pull_node: Annotated[str | None, optional(PULL_NODE_NAME)] = setting(
        None,
        "The name of the node's target in the repository (default: its inventory name); "
        "a push gives it, pulled data never does",
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
    # --- Slurm -----------------------------------------------------------------------
    rocm_slurm_gres: Annotated[bool, FLAG] = setting(
        False,
        f"Write `{paths.SLURM_GRES_CONF}` from the GPUs preflight finds (one `Name=gpu "
        f"Type=<type> File={paths.RENDER_NODE_PREFIX}<n>` line each; Slurm's AMD autodetect "
        "needs ROCm SMI's library, which newer ROCm doesn't build) and report the "
        "`Gres=gpu:<type>:<n>` the node's line in the controller's slurm.conf needs; slurmd "
        "reads it at its next start. False (or `rocm_state: absent`): the file rocm-fleet wrote "
        "goes, if it still holds what rocm-fleet wrote; a site's own file is left alone",
        SLURM,
    )
    rocm_slurm_gres_type: Annotated[str | None, optional(SLURM_GRES_TYPE)] = setting(
        None,
        "The GRES type of every GPU of the node (as the site's slurm.conf names it); unset: "
        "the product where the PCI ID names one (`mi300x`, `w7900`), else the gfx target",
        SLURM,
    )
    rocm_slurm_drain: Annotated[bool, FLAG] = setting(
        False,
        "`rocm-fleet roll` drains the node in Slurm before changing it, waits for its jobs to "
        "end, and resumes it once the node checks pass (one that fails stays drained, the "
        "reason saying why). A node with no drift is never drained",
        SLURM,
    )
    rocm_slurm_drain_timeout: Annotated[int, POSITIVE] = setting(
        3600,
        "Seconds `rocm-fleet roll` waits for a drained node's jobs to end; then the node is "
        "left unchanged and resumed (jobs are never killed)",
        SLURM,
    )
    rocm_slurm_node_name: Annotated[str | None, optional(SLURM_NODE_NAME)] = setting(
        None,
        "The node's name in Slurm (NodeName=). Unset: its short host name (`hostname -s`), "
        "as slurmd names itself",
        SLURM,
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


def schema_adapter() -> TypeAdapter[Settings]:
    """pydantic's view of ``Settings``, which validates and writes the JSON Schema."""
    return _SCHEMA
