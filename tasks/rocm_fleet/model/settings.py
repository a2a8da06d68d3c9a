"""Every inventory setting (the node's install's in ``model.node_settings``): key, type, default,
meaning, what is valid; a host's data validated in one pass (decisions/refusing-a-host.md); the
settings' documentation in ``model.settings_reference``."""

import difflib
import functools
import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, fields
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from pydantic import TypeAdapter, ValidationError, ValidationInfo, WrapValidator
from pydantic_core import PydanticCustomError

from rocm_fleet.model import paths
from rocm_fleet.model import setting_types as t
from rocm_fleet.model.node_settings import FEATURE_CONCERNS, WHOLE_NODE, NodeSettings, setting
from rocm_fleet.model.secrets import shown_value

_mirror, _proxy = setting("Fleet mirror"), setting("Proxy")
_cuda, _pull = setting("Migrate from CUDA"), setting("Pull mode")
_slurm, _acceptance = setting("Slurm"), setting("Acceptance")


# Settings a host's data must give -> what to set them to.
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


# Settings another one being true requires -> (the one, what to set them to).
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


# ruff: noqa: RUF009 - a ``setting`` makes a dataclass field, as ``field`` does
@dataclass(frozen=True, kw_only=True)
class Settings(NodeSettings):
    """A host's settings (defaults applied): its install's, then the fleet's."""

    rocm_mirror: t.MirrorName | None = _mirror(
        None,
        "The fleet mirror: an inventory host the deploy makes serve AMD's repositories, key and "
        "the PyTorch wheels to the fleet (nginx), or the `http(s)://` URL of one served elsewhere; "
        "hosts naming it fetch from it, apt still checking AMD's signature. Unset: upstream",
    )
    rocm_mirror_bundle: t.AbsolutePath | None = _mirror(
        None,
        "A bundle made by `rocm-fleet bundle` (a directory where pyinfra runs) the mirror "
        "serves: nothing comes from upstream, and preflight refuses a host needing what it "
        "lacks. Unset: the mirror host is a live cache of upstream",
    )
    rocm_mirror_port: t.Port = _mirror(
        8080,
        "The port the mirror host serves on (HTTPS with `rocm_mirror_tls_cert`, else plain HTTP)",
    )
    rocm_mirror_tls_ca: t.AbsolutePath | None = _mirror(
        None,
        "The CA certificate (PEM, a path where pyinfra runs) that issued the mirror's: hosts "
        "using the mirror pin it for the mirror alone (apt, pip, curl). Set on the mirror host "
        "with the two below (`rocm-fleet mirror-ca DIR ADDRESS` makes all three), or on hosts "
        "naming an `https://` mirror served elsewhere. Unset: the mirror is plain HTTP",
    )
    rocm_mirror_tls_cert: t.AbsolutePath | None = _mirror(
        None,
        "The mirror's certificate (PEM, where pyinfra runs), issued by `rocm_mirror_tls_ca` "
        "for the address the hosts reach it by; nginx then serves HTTPS only",
    )
    rocm_mirror_tls_key: t.AbsolutePath | None = _mirror(
        None,
        "The private key of `rocm_mirror_tls_cert` (PEM, unencrypted, mode 0600 where "
        "pyinfra runs); the mirror host keeps it root-only (0600)",
    )
    rocm_mirror_listen: t.IpAddress | None = _mirror(
        None,
        "The address the mirror host's nginx listens on. Unset: the address the inventory "
        "reaches it by (`ssh_hostname`) when that is an IP address, else every interface",
    )
    rocm_mirror_allow: t.Networks = _mirror(
        [],
        "Networks (CIDR) besides the inventory's hosts that may use the mirror; nginx refuses "
        "everyone else. Needed for hosts the inventory names by DNS name, not address",
    )
    rocm_proxy: t.ProxyUrl | None = _proxy(
        None,
        "HTTP(S) proxy for apt (all sources), AMD's key and pip, e.g. "
        "`http://proxy.example.org:3128`; no credentials in it",
    )
    rocm_no_proxy: t.NoProxy = _proxy(
        [],
        "Hosts reached directly, not through `rocm_proxy` (the fleet mirror always is); apt "
        "takes exact host names, curl and pip also `.domain` suffixes and CIDR ranges",
    )
    rocm_migrate_from_cuda: t.Flag = _cuda(
        False,
        "Remove what preflight finds of NVIDIA's stack (driver and CUDA packages, CUDA wheels "
        "in the venv) before installing ROCm; false: its presence stops the host",
    )
    rocm_pull: t.Flag = _pull(
        False,
        "Make the node converge itself: a systemd timer runs this deploy `@local` from a "
        "pinned rocm-fleet against the node's inventory data fetched from `rocm_pull_source`, "
        "checks the node and writes the audit for node_exporter. False: pull mode's units and "
        "venv are removed",
    )
    rocm_pull_source: t.HttpUrl | None = _pull(
        None,
        "The `http(s)://` URL of the fleet's TUF repository (`rocm-fleet publish`), on the "
        "fleet mirror or any static host, whose signed target `nodes/NODE.json` is the node's "
        "settings (required with `rocm_pull`; a push gives it, pulled data never does)",
    )
    rocm_pull_trusted_root: t.AbsolutePath | None = _pull(
        None,
        "The repository's TUF root metadata (a path where pyinfra runs, e.g. "
        "`REPOSITORY/metadata/root.json`): the keys a node trusts, installed by a push only; "
        "rotations signed by it are then followed through the pull (required with `rocm_pull`)",
    )
    rocm_pull_node: t.PullNodeName | None = _pull(
        None,
        "The name of the node's target in the repository (default: its inventory name); "
        "a push gives it, pulled data never does",
    )
    rocm_pull_seal_keys: t.AbsolutePath | None = _pull(
        None,
        "A directory, where pyinfra and `rocm-fleet publish` run, of each node's own key "
        "(`NODE.pem`, X25519, made by `publish`): `publish` seals the node's target to it and a "
        "push installs the node's key alone, so no other node (nor the mirror) can read its "
        "settings; a push gives it, pulled data never does",
    )
    rocm_pull_lock: t.UrlOrPath | None = _pull(
        None,
        "URL or path of a requirements file locking rocm-fleet's wheel and every dependency "
        "by hash (`name @ URL --hash=sha256:...`), installed with `pip --require-hashes` "
        "(required with `rocm_pull`)",
    )
    rocm_pull_lock_sha256: t.Sha256 | None = _pull(
        None,
        "SHA-256 the lock file must have, so neither it nor a wheel can be swapped on the "
        "way (required with `rocm_pull`)",
    )
    rocm_pull_interval: t.TimeSpan = _pull(
        "1h", "How long after one pull the next runs (systemd time span, `OnUnitActiveSec`)"
    )
    rocm_pull_random_delay: t.TimeSpan = _pull(
        "10min",
        "Random delay added to each pull, so a fleet doesn't fetch at once (`RandomizedDelaySec`)",
    )
    rocm_slurm_gres: t.Flag = _slurm(
        False,
        f"Write `{paths.SLURM_GRES_CONF}` from the GPUs preflight finds (one `Name=gpu "
        f"Type=<type> File={paths.RENDER_NODE_PREFIX}<n>` line each; Slurm's AMD autodetect "
        "needs ROCm SMI's library, which newer ROCm doesn't build) and report the "
        "`Gres=gpu:<type>:<n>` the node's line in the controller's slurm.conf needs; slurmd "
        "reads it at its next start. False (or `rocm_state: absent`): the file rocm-fleet wrote "
        "goes, if it still holds what rocm-fleet wrote; a site's own file is left alone",
    )
    rocm_slurm_gres_type: t.SlurmGresType | None = _slurm(
        None,
        "The GRES type of every GPU of the node (as the site's slurm.conf names it); unset: "
        "the product where the PCI ID names one (`mi300x`, `w7900`), else the gfx target",
    )
    rocm_slurm_drain: t.Flag = _slurm(
        False,
        "`rocm-fleet roll` drains the node in Slurm before changing it, waits for its jobs to "
        "end, and resumes it once the node checks pass (one that fails stays drained, the "
        "reason saying why). A node with no drift is never drained",
    )
    rocm_slurm_drain_timeout: t.Positive = _slurm(
        3600,
        "Seconds `rocm-fleet roll` waits for a drained node's jobs to end; then the node is "
        "left unchanged and resumed (jobs are never killed)",
    )
    rocm_slurm_health_check: t.Flag = _slurm(
        False,
        f"Write Slurm's health program `{paths.SLURM_HEALTH_PROGRAM}` (name it in slurm.conf's "
        "`HealthCheckProgram`): it drains the node, with a reason starting "
        "`rocm-fleet-health:`, when an uncorrectable ECC count grows, a PCIe link narrows, an "
        "XGMI link goes down, a GPU or `/dev/kfd` or a render node is missing, and resumes "
        "only a node it drained itself once healthy; a drain by anyone else is left alone. "
        "False (or `rocm_state: absent`): the program and its baseline go",
    )
    rocm_slurm_node_name: t.SlurmNodeName | None = _slurm(
        None,
        "The node's name in Slurm (NodeName=). Unset: its short host name (`hostname -s`), "
        "as slurmd names itself",
    )
    rocm_acceptance: t.one_of("off", "quick", "full") = _acceptance(
        "off",
        "The burn-in `rocm-fleet roll` runs on a node it changed, after its checks pass and "
        "before it is resumed (docs/acceptance.md): `quick` (RVS GST, a torch smoke, the ECC, "
        "PCIe and XGMI counters before and after), `full` (also RCCL's all_reduce_perf) after "
        "a ROCm, kernel or driver move or a card swap (`quick` never runs `full`); a node "
        "that fails stays drained, the failing step and its numbers its reason. Not `off`: "
        "the deploy installs AMD's `rocm-validation-suite` of the release; `off`: it is "
        "removed if the deploy installed it",
    )
    rocm_acceptance_thresholds: t.AcceptanceThresholds | None = _acceptance(
        None,
        "The site's acceptance thresholds over AMD's published ones, e.g. "
        "`{'gst:gst-1000Tflops-8K-fp8_r': 900000, 'rccl_busbw_gbps': 300}` (GST in GFLOPS, "
        "bus bandwidth in GB/s; docs/acceptance.md lists AMD's)",
    )
    rocm_acceptance_rccl_tests: t.AbsolutePath | None = _acceptance(
        None,
        "Path of rccl-tests' `all_reduce_perf` on the node, for the `full` level's RCCL step "
        "(AMD ships no rccl-tests package: build it from github.com/ROCm/rccl-tests); unset: "
        "that step is skipped, saying so",
    )


SETTINGS = {f.name: f for f in fields(Settings)}
_HINTS = get_type_hints(Settings, include_extras=True)


#: The settings that may be left unset (``X | None``).
UNSET = {key for key, hint in _HINTS.items() if type(None) in get_args(hint)}
OR_UNSET = "; or leave it unset"


def _valid(hint: Any) -> str:
    if get_origin(hint) is not Annotated:  # X | None
        (hint,) = (arg for arg in get_args(hint) if arg is not type(None))
    return next(m.text for m in reversed(hint.__metadata__) if isinstance(m, t.Valid))


#: What each setting's value must be, in words.
VALID = {key: _valid(_HINTS[key]) + (OR_UNSET if key in UNSET else "") for key in SETTINGS}


@functools.cache
def near_misses(key: str) -> tuple[str, ...]:
    """The settings an unknown ``key`` is probably a slip for: the same words in the singular
    or plural, those words and one more, else one letter off (cached: every host has them)."""
    words = _words(key)
    same = [name for name in SETTINGS if _words(name) == words]
    shorter = [name for name in SETTINGS if len(words) >= 2 and _words(name)[:-1] == words]
    near = difflib.get_close_matches(key, SETTINGS, n=1, cutoff=0.85)  # a typo's ratio
    return tuple(same or shorter or near)


def _words(key: str) -> list[str]:
    return [word.removesuffix("s") for word in key.lower().split("_")]


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


def uncomposed(
    data: Mapping[str, Any], host: str, composed: Collection[str], origin: Origin | None
) -> tuple[str, str] | None:
    """The first key ``data`` sets of a feature concern the running deploy doesn't compose after
    ``rocm_node()`` (``composed``), with the line refusing it; None when there is none."""
    for key, declared in SETTINGS.items():
        concern = declared.metadata["concern"]
        if key in data and concern in FEATURE_CONCERNS and concern not in composed:
            valid = (f"it unset when running rocm_fleet.deploy.rocm_node alone, which deploys no "
                     f"{concern}: run {WHOLE_NODE} (deploy.py), which runs rocm_node and then "
                     f"{concern}")  # fmt: skip
            return key, bad_value(host, key, data[key], valid, origin)
    return None


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
