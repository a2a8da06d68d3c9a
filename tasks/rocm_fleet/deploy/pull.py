"""Pull mode: the node converges itself on a timer (docs/pull-mode.md)."""

import importlib.metadata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyinfra import host
from pyinfra.api import deploy

from rocm_fleet import assets
from rocm_fleet.engine.marks import mark_while_changing
from rocm_fleet.model import paths, pulled
from rocm_fleet.model.config import Config
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.sources import mirror_ca
from rocm_fleet.operations._script import script
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.files import directory_absent, files_absent, on_host, text_file
from rocm_fleet.operations.host import timer_enabled
from rocm_fleet.operations.python import locked_venv
from rocm_fleet.version import PULL_PROTOCOL

UNIT = "rocm-fleet-pull"
#: The inventory group of the pull's own run; any other run is a push.
PULL_GROUP = "rocm_fleet_pull"
#: the paths the pull script gets as ``PULL_<NAME>`` variables, in order
SCRIPT_PATHS = "TRUSTED_ROOT SEAL_KEY METADATA ROOT VENV RUN_DIR LOCK DATA INVENTORY DEPLOY"
PULL_TEXTFILES = (paths.PULL_METRICS, paths.PULL_STATUS_METRICS)


def service_unit() -> str:
    """The pull's oneshot service unit (no start timeout; the script takes the lock)."""
    return assets.render(
        "rocm-fleet-pull.service.j2", shell=paths.SHELL, script=paths.PULL_SCRIPT, unit=UNIT
    )


def timer_unit(config: Config) -> str:
    """The pull's timer unit."""
    return assets.render(
        "rocm-fleet-pull.timer.j2",
        interval=config.rocm_pull_interval,
        random_delay=config.rocm_pull_random_delay,
    )


def node_name(config: Config) -> str:
    """This node's target name: ``rocm_pull_node``, else its inventory name."""
    return config.rocm_pull_node or host.name


def pull_script(config: Config, node: str) -> str:
    """The service's script: its settings as shell variables, then the pull's shell."""
    variables = {
        "PULL_SOURCE": config.rocm_pull_source or "",
        "PULL_NODE": node,
        **{f"PULL_{name}": getattr(paths, f"PULL_{name}") for name in SCRIPT_PATHS.split()},
        "TEXTFILES": paths.NODE_EXPORTER_TEXTFILES,
        "PULL_METRICS": paths.PULL_METRICS,
        "PULL_MIRROR": f"{config.mirror.url}/" if config.mirror and mirror_ca(config) else "",
        "PULL_MIRROR_CA": mirror_ca(config) or "",
        "PULL_STATUS_METRICS": paths.PULL_STATUS_METRICS,
        "PUSH_MARKER": paths.PUSH_MARKER,
        "PUSH_MARKER_EXPIRY": str(4 * 3600),  # an older push mark is stale (its push died)
        "SYSTEM_CA_BUNDLE": paths.SYSTEM_CA_BUNDLE,
    }
    return assets.render(
        "rocm-fleet-pull.sh.j2",
        shell=paths.SHELL,
        variables=variables,
        body=assets.text("scripts/safe-path.sh") + assets.text("rocm-fleet-pull.sh"),
    )


def oldest_python() -> str:
    """The lower bound (``X.Y``) of rocm-fleet's Requires-Python; ValueError when it has none."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    required = importlib.metadata.metadata("rocm-fleet")["Requires-Python"] or ""
    lowest = [Version(s.version) for s in SpecifierSet(required) if s.operator == ">="]
    if not lowest:
        raise ValueError(f"rocm-fleet's Requires-Python {required!r} has no lower bound")
    major, minor = max(lowest).release[:2]
    return f"{major}.{minor}"


def trusted_root_problem(path: str) -> str | None:
    """Why ``path`` can't be the TUF root a node trusts."""
    try:
        from tuf.api.metadata import Metadata, Root
    except ModuleNotFoundError:
        return "rocm_pull needs the 'pull' extra where pyinfra runs: pip install 'rocm-fleet[pull]'"

    try:
        Metadata[Root].from_bytes(Path(path).read_bytes())
    except OSError as exc:
        return f"rocm_pull_trusted_root {path} can't be read ({exc.strerror})"
    except Exception as exc:  # tuf's DeserializationError, a root of the wrong type
        return f"rocm_pull_trusted_root {path} is not TUF root metadata ({exc})"
    return None


def seal_key_problem(path: str) -> str | None:
    """Why ``path`` can't be the node's seal key: unreadable, readable by others, not one."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        mode = Path(path).stat().st_mode & 0o777
        if mode & 0o077:
            return f"rocm_pull_seal_keys: {path} is mode {mode:04o}: a private key must be 0600"
        key = load_pem_private_key(Path(path).read_bytes(), None)
    except OSError as exc:
        return (f"rocm_pull_seal_keys: {path} can't be read ({exc.strerror}): "
                "`rocm-fleet publish` makes it; publish before the push")  # fmt: skip
    except (ValueError, TypeError) as exc:
        return f"rocm_pull_seal_keys: {path} is not a private key ({exc})"
    if not isinstance(key, X25519PrivateKey):
        return f"rocm_pull_seal_keys: {path} is not an X25519 private key"
    return None


def deploy_file() -> str:
    """The deploy the pull's run hands pyinfra: the node's deploy, nothing more."""
    return assets.render("pull-deploy.py.j2")


def inventory_file() -> str:
    """This node as ``@local`` in ``PULL_GROUP``, settings read from the verified JSON."""
    return assets.render("pull-inventory.py.j2", data=paths.PULL_DATA, group=PULL_GROUP)


@deploy("Pull mode")
def configure_pull(config: Config) -> None:
    """Pull mode's venv, files and units with ``rocm_pull``; else their removal."""
    units = [paths.PULL_TIMER, paths.PULL_SERVICE]
    timer = dict(timer=paths.PULL_TIMER, link=paths.PULL_TIMER_LINK, stamp=paths.PULL_STAMP)
    if not config.rocm_pull:
        files = [paths.PULL_STAMP, *units, *PULL_TEXTFILES]
        if not on_host(*files, directories=(paths.PULL_ROOT,)):
            return
        timer_enabled(name="Remove the pull service and timer", **timer, units=units, present=False)
        directory_absent(name="Remove the pull venv and files", path=paths.PULL_ROOT)
        files_absent(*((f"Remove the pulls' metrics ({path})", path) for path in PULL_TEXTFILES))
        return
    assert config.rocm_pull_lock and config.rocm_pull_lock_sha256  # config requires them
    debian_packages(
        name="Install python3-venv, curl and gpgv",
        packages=["python3-venv", "curl", "gpgv"],  # gpgv: Debian 13's apt brings sqv instead
        ledger=paths.PACKAGE_LEDGER,
    )
    locked_venv(
        name="Install the pinned rocm-fleet for pulls",
        root=paths.PULL_ROOT,
        path=paths.PULL_VENV,
        lock=config.rocm_pull_lock,
        lock_sha256=config.rocm_pull_lock_sha256,
        stamp=paths.PULL_INSTALLED,
        min_python=oldest_python(),
        protocol=PULL_PROTOCOL,
    )
    assert config.rocm_pull_trusted_root  # config requires it; preflight read it
    text_file(
        name="Install the TUF root the pulls trust",
        path=paths.PULL_TRUSTED_ROOT,
        content=Path(config.rocm_pull_trusted_root).read_text(),
    )
    if keys := config.rocm_pull_seal_keys:
        text_file(
            name="Install the node's seal key",
            path=paths.PULL_SEAL_KEY,
            content=Path(pulled.seal_key_file(keys, node_name(config))).read_text(),
            mode="600",
        )
    else:
        files_absent(("Remove the node's seal key", paths.PULL_SEAL_KEY))
    for name, path, content in (
        ("Write the pull script", paths.PULL_SCRIPT, pull_script(config, node_name(config))),
        ("Write the pull's deploy", paths.PULL_DEPLOY, deploy_file()),
        ("Write the pull's inventory", paths.PULL_INVENTORY, inventory_file()),
        ("Write the pull service", paths.PULL_SERVICE, service_unit()),
        ("Write the pull timer", paths.PULL_TIMER, timer_unit(config)),
    ):
        text_file(name=name, path=path, content=content)
    timer_enabled(name="Enable the pull timer", **timer, units=units)


def is_pull_run(current: Any) -> bool:
    """Whether the run planning ``current`` (a pyinfra Host) is the pull's own."""
    return PULL_GROUP in current.groups


def pull_problems(current: Any, survey: HostSurvey, config: Config) -> list[str]:
    """Preflight's problems with pull mode."""
    problems = []
    if config.rocm_pull:
        assert config.rocm_pull_trusted_root  # config requires it
        problems += filter(None, [trusted_root_problem(config.rocm_pull_trusted_root)])
        name = config.rocm_pull_node or current.name
        try:
            pulled.target_path(name)
        except ValueError as exc:
            problems.append(str(exc))
        else:
            if keys := config.rocm_pull_seal_keys:
                problems += filter(None, [seal_key_problem(pulled.seal_key_file(keys, name))])
    if is_pull_run(current) or not survey.pull_running:
        return problems
    return [
        *problems,
        f"a pull (rocm-fleet-pull.service) is converging {current.name} right now (it holds "
        f"{paths.PULL_LOCK}): push again once it has ended (journalctl -u rocm-fleet-pull), or "
        f"stop its timer first (systemctl stop rocm-fleet-pull.timer)",
    ]


#: The last pull's results that need no one's attention.
PULL_FINE = ("converged", "skipped-push-running")


def pull_warnings(config: Config, survey: HostSurvey) -> list[str]:
    """The last pull's refusal or failure as the node recorded it, for ``--dry`` and the audit."""
    status = survey.pull_status
    if not config.rocm_pull or not status or status.result in PULL_FINE:
        return []
    started = datetime.fromtimestamp(status.started, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"the last pull (started {started}) did not converge this node: {status.result} "
        f"(journalctl -u {UNIT} says why)"
    ]


def mark_pushes(current: Any) -> None:
    """Mark ``current`` while a push changes it, when it has pull mode's units."""
    if is_pull_run(current) or not on_host(paths.PULL_SERVICE):
        return
    wait = "120"  # seconds a push waits for a pull started after its preflight, then fails
    mark_while_changing(
        current,
        script("push-mark", "start", paths.PUSH_MARKER, paths.PULL_LOCK, wait),
        script("push-mark", "end", paths.PUSH_MARKER),
    )
