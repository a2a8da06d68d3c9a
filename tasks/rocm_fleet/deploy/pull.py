"""Pull mode: the node converges itself, on a timer, from its signed settings.

With ``rocm_pull: true`` the node gets a venv of the pinned rocm-fleet (every wheel
hash-locked, ``rocm_pull_lock``), the TUF root the node trusts (``rocm_pull_trusted_root``:
installed by a push only, never from pulled data), the script its service runs, the deploy
and inventory files that script hands pyinfra, and a systemd service and timer. Each run
fetches the node's target from the fleet's TUF repository (``rocm_pull_source``, made by
``rocm-fleet publish``) and verifies it (``rocm-fleet pull-fetch``): forged, replayed,
expired or other-node data is refused, changing nothing. Then it runs this same deploy
``@local`` on the verified settings (validated before the first operation), checks the
node (``rocm-fleet check``) and, where node_exporter's textfile directory exists, writes
the audit there. It reboots only as the settings' ``rocm_reboot`` allows, like any run.
``rocm_pull: false`` takes all of it off again.
"""

from __future__ import annotations

import importlib.metadata
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyinfra import host
from pyinfra.api import deploy

from rocm_fleet import assets
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.marks import mark_while_changing
from rocm_fleet.facts.files import DirectoryExists, FileDigest
from rocm_fleet.model import paths, pulled
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.sources import mirror_ca
from rocm_fleet.operations._script import script
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.files import directory_absent, text_file
from rocm_fleet.operations.host import timer_enabled
from rocm_fleet.operations.python import locked_venv

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config

UNIT = "rocm-fleet-pull"
# gpgv: the pull's deploy checks a pulled site file's rows against upstream on the node, and
# verifies AMD's InRelease with gpgv (upstream/signature.py); Debian 13's apt verifies with sqv
# and brings no gpgv.
PREREQUISITES = ["python3-venv", "curl", "gpgv"]
#: The distribution whose Requires-Python the node's python3 must meet (it runs rocm-fleet).
DISTRIBUTION = "rocm-fleet"
#: The inventory group the pull's own run puts the node in (``inventory_file``): a run for it
#: is the pull, which holds the pull's lock itself; any other run is a push.
PULL_GROUP = "rocm_fleet_pull"
#: A push mark (``paths.PUSH_MARKER``) older than this is from a push that ended without
#: taking it away (killed, its controller gone): pulls go on. Longer than a first push that
#: downloads gigabytes takes.
PUSH_MARKER_EXPIRY_SECONDS = 4 * 3600
#: How long a push waits for a pull that started after its preflight to end, before it
#: fails the host unchanged.
PUSH_WAITS_FOR_PULL_SECONDS = 120


def service_unit() -> str:
    """The service: one run of the pull script (which takes the pull's lock itself, so that
    a lock held by someone else is a failure it reports), logged in the journal. A oneshot
    has no start timeout by default (systemd.service(5)): a first install downloads
    gigabytes."""
    return assets.render(
        "rocm-fleet-pull.service.j2", shell=paths.SHELL, script=paths.PULL_SCRIPT, unit=UNIT
    )


def timer_unit(config: Config) -> str:
    """The timer: a while after boot (a node that was down converges when it is back), then
    ``rocm_pull_interval`` after each run, each with a random delay so a fleet doesn't fetch
    at once. (No ``Persistent=``: it only acts on ``OnCalendar=`` timers, systemd.timer(5);
    ``OnBootSec=`` is what catches up after downtime.)"""
    return assets.render(
        "rocm-fleet-pull.timer.j2",
        interval=config.rocm_pull_interval,
        random_delay=config.rocm_pull_random_delay,
    )


def node_name(config: Config) -> str:
    """The name of this node's target: ``rocm_pull_node``, else its inventory name (the
    pull's own run has it from the push, through the settings pull-fetch writes)."""
    return config.rocm_pull_node or host.name


def pull_script(config: Config, node: str) -> str:
    """The script the service runs: its settings as shell variables, then the packaged
    ``files/rocm-fleet-pull.sh``."""
    variables = {
        "PULL_SOURCE": config.rocm_pull_source or "",
        "PULL_NODE": node,
        "PULL_TRUSTED_ROOT": paths.PULL_TRUSTED_ROOT,
        "PULL_METADATA": paths.PULL_METADATA,
        "PULL_ROOT": paths.PULL_ROOT,
        "PULL_VENV": paths.PULL_VENV,
        "PULL_RUN_DIR": paths.PULL_RUN_DIR,
        "PULL_LOCK": paths.PULL_LOCK,
        "PULL_DATA": paths.PULL_DATA,
        "PULL_INVENTORY": paths.PULL_INVENTORY,
        "PULL_DEPLOY": paths.PULL_DEPLOY,
        "TEXTFILES": paths.NODE_EXPORTER_TEXTFILES,
        "PULL_METRICS": paths.PULL_METRICS,
        # A repository on the fleet mirror over TLS is fetched trusting the mirror's CA alone.
        "PULL_MIRROR": f"{config.mirror.url}/" if config.mirror and mirror_ca(config) else "",
        "PULL_MIRROR_CA": mirror_ca(config) or "",
        "PULL_STATUS_METRICS": paths.PULL_STATUS_METRICS,
        "PUSH_MARKER": paths.PUSH_MARKER,
        "PUSH_MARKER_EXPIRY": str(PUSH_MARKER_EXPIRY_SECONDS),
        "SYSTEM_CA_BUNDLE": paths.SYSTEM_CA_BUNDLE,
    }
    return assets.render(
        "rocm-fleet-pull.sh.j2",
        shell=paths.SHELL,
        variables=variables,
        body=assets.text("rocm-fleet-pull.sh"),
    )


def oldest_python() -> str:
    """The oldest Python (``X.Y``) rocm-fleet runs on: the lower bound of its
    Requires-Python, which the node's python3 must meet to run the pinned rocm-fleet."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    required = importlib.metadata.metadata(DISTRIBUTION)["Requires-Python"] or ""
    lowest = [Version(s.version) for s in SpecifierSet(required) if s.operator == ">="]
    if not lowest:
        raise ValueError(f"{DISTRIBUTION}'s Requires-Python {required!r} has no lower bound")
    major, minor = max(lowest).release[:2]
    return f"{major}.{minor}"


def trusted_root_problem(path: str) -> str | None:
    """Why ``path`` (where pyinfra runs) can't be the TUF root a node trusts (or can't be
    read as one: TUF comes with the ``pull`` extra)."""
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


def deploy_file() -> str:
    """The deploy the pull's run hands pyinfra: the node's deploy, nothing more."""
    return assets.render("pull-deploy.py.j2")


def inventory_file() -> str:
    """This node as pyinfra's ``@local``, with the settings the service verified: read as
    JSON, so what comes from the repository is data, never code. Its group (``PULL_GROUP``)
    tells the deploy that this run is the pull, which holds the pull's lock itself."""
    return assets.render("pull-inventory.py.j2", data=paths.PULL_DATA, group=PULL_GROUP)


# What each pull writes in node_exporter's textfile directory (rocm-fleet-pull.sh).
PULL_TEXTFILES = (paths.PULL_METRICS, paths.PULL_STATUS_METRICS)


def pull_leftovers() -> bool:
    """Whether anything of pull mode is on the host (read from the survey)."""
    files = [paths.PULL_STAMP, paths.PULL_TIMER, paths.PULL_SERVICE, *PULL_TEXTFILES]
    return read_fact(DirectoryExists, path=paths.PULL_ROOT) or any(
        read_fact(FileDigest, path=path) is not None for path in files
    )


@deploy("Pull mode")
def configure_pull(config: Config) -> None:
    """Pull mode's venv, files and units with ``rocm_pull``; none of them without it. Their
    removal is planned only when something of them is there, so a host that never pulled
    has no such concern in ``--dry`` or the audit."""
    units = [paths.PULL_TIMER, paths.PULL_SERVICE]
    if not config.rocm_pull:
        if not pull_leftovers():
            return
        timer_enabled(
            name="Remove the pull service and timer",
            timer=paths.PULL_TIMER,
            link=paths.PULL_TIMER_LINK,
            stamp=paths.PULL_STAMP,
            units=units,
            present=False,
        )
        directory_absent(name="Remove the pull venv and files", path=paths.PULL_ROOT)
        # The pulls' metrics for node_exporter: left, they would report the last pull's
        # state forever after the pulls stopped.
        for path in PULL_TEXTFILES:
            if read_fact(FileDigest, path=path) is not None:
                text_file(name=f"Remove the pulls' metrics ({path})", path=path, present=False)
        return
    assert config.rocm_pull_lock and config.rocm_pull_lock_sha256  # config requires them
    debian_packages(
        name="Install python3-venv, curl and gpgv",
        packages=PREREQUISITES,
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
    )
    assert config.rocm_pull_trusted_root  # config requires it; preflight read it
    text_file(
        name="Install the TUF root the pulls trust",
        path=paths.PULL_TRUSTED_ROOT,
        content=Path(config.rocm_pull_trusted_root).read_text(),
    )
    text_file(
        name="Write the pull script",
        path=paths.PULL_SCRIPT,
        content=pull_script(config, node_name(config)),
    )
    text_file(name="Write the pull's deploy", path=paths.PULL_DEPLOY, content=deploy_file())
    text_file(
        name="Write the pull's inventory", path=paths.PULL_INVENTORY, content=inventory_file()
    )
    text_file(name="Write the pull service", path=paths.PULL_SERVICE, content=service_unit())
    text_file(name="Write the pull timer", path=paths.PULL_TIMER, content=timer_unit(config))
    timer_enabled(
        name="Enable the pull timer",
        timer=paths.PULL_TIMER,
        link=paths.PULL_TIMER_LINK,
        stamp=paths.PULL_STAMP,
        units=units,
    )


# --- A push and a pull never change a node at once --------------------------------------------
#
# The pull runs under flock(1) (``paths.PULL_LOCK``). A push (any run that isn't the pull's
# own, ``PULL_GROUP``) is refused by preflight while that lock is held (``pull_problems``), in
# --dry too; and when it is about to change a pull-mode node, it marks the node
# (``paths.PUSH_MARKER``) before its first operation there and takes the mark away after its
# last one, so a pull that starts meanwhile skips. This is no operation of the plan (the
# mark is the run's, not the node's state): engine.marks runs it, only when the plan
# changes the host, so a converged push costs no round trip more. A pull that started after
# preflight and still runs PUSH_WAITS_FOR_PULL_SECONDS later fails the host there, unchanged.


def is_pull_run(current: Any) -> bool:
    """Whether the run planning ``current`` (a pyinfra Host) is the pull's own."""
    return PULL_GROUP in current.groups


def pull_problems(current: Any, survey: HostSurvey, config: Config) -> list[str]:
    """Preflight's problems with pull mode: a push to a node whose pull is running right
    now; a trusted root that isn't one; a node name that can't name a target."""
    problems = []
    if config.rocm_pull:
        assert config.rocm_pull_trusted_root  # config requires it
        problems += filter(None, [trusted_root_problem(config.rocm_pull_trusted_root)])
        name = config.rocm_pull_node or current.name
        try:
            pulled.target_path(name)
        except ValueError as exc:
            problems.append(str(exc))
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
    """The last pull's refusal or failure, as the node recorded it (``PullStatus``), for
    ``--dry`` and the audit: a pull node refusing its data changes nothing, so nothing else
    would show it."""
    status = survey.pull_status
    if not config.rocm_pull or not status or status.result in PULL_FINE:
        return []
    started = datetime.fromtimestamp(status.started, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"the last pull (started {started}) did not converge this node: {status.result} "
        f"(journalctl -u {UNIT} says why)"
    ]


def mark_pushes(current: Any) -> None:
    """Have this run mark ``current`` while it changes it, when it is a push to a node with
    pull mode's units (the pull's own run holds the lock instead)."""
    if is_pull_run(current) or read_fact(FileDigest, path=paths.PULL_SERVICE) is None:
        return
    wait = str(PUSH_WAITS_FOR_PULL_SECONDS)
    mark_while_changing(
        current,
        script("push-mark", "start", paths.PUSH_MARKER, paths.PULL_LOCK, wait),
        script("push-mark", "end", paths.PUSH_MARKER),
    )
