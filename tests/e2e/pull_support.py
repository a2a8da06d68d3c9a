"""What the pull-mode end-to-end tests (test_pull.py) use: their lab fleet (``pull_fleet``,
the module's fixture), the pinned wheels a pull node installs, the
timer runs a test waits for, and what a run's deploy says it changed."""

from __future__ import annotations

import hashlib
import re
import runpy
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from e2e import support
from lab import HostSpec, Lab
from lab._util import cache_dir
from lab.network import SUBNET
from lab.upstream_facts import FUTURE_RELEASE
from rocm_fleet.model import paths
from rocm_fleet.pull.repository import PullRepository

ROOT = Path(__file__).resolve().parents[2]
WHEELS = "/srv/pull-wheels"  # on the nodes
LOCK = f"{WHEELS}/requirements.txt"

# --- the fleet --------------------------------------------------------------------------------

#: The fleet mirror (nginx serving the administrators' repository under /fleet/), a pull node
#: on Debian 12 and one on Debian 13 moving to a future release.
MIRROR, PULLER, FUTURE = "mirror", "puller", "pullfuture"
MIRROR_ADDRESS = f"{SUBNET}.11"  # the first host of the lab (network.py: .10 + its index)
#: The fleet's TUF repository on the mirror (its published directory, under /fleet/).
SOURCE = f"http://{MIRROR_ADDRESS}:8080{paths.MIRROR_PUBLISHED_URL_PATH}"
SERVICE = "rocm-fleet-pull.service"
#: The lab's timer double runs every systemd time span at a sixtieth: the units' OnBootSec=5min
#: is 5 s, the nodes' 15min interval 15 s, their 3min random delay up to 3 s. Only the test of
#: the timer waits for it; the others start the service by hand (``systemctl start``).
SCALE = 1 / 60
INTERVAL, RANDOM_DELAY = "15min", "3min"
RUN_SECONDS = 600  # how long one pull (a release's packages and torch) may take on the lab
COMMITTED = "10.0.0"
GPU = {"expected_gfx": "gfx1100", "expected_gpu_count": 1}
FLEET = [
    HostSpec(MIRROR, suite="bookworm", profile="rx7900xtx", converged=True,
             data={**GPU, "rocm_version": "6.4.3", "pytorch_install": False,
                   "rocm_mirror": MIRROR, "rocm_mirror_allow": [f"{SUBNET}.0/24"]}),
    HostSpec(PULLER, suite="bookworm", profile="rx7900xtx", converged=True,
             data={**GPU, "rocm_version": "6.4.3"}),
    HostSpec(FUTURE, suite="trixie", profile="w7900", converged=True,
             data={**GPU, "rocm_version": COMMITTED, "pytorch_install": False}),
]  # fmt: skip
#: Each pull node's Python (Debian 12's, Debian 13's), for its pinned wheels.
PYTHONS = {PULLER: "3.11", FUTURE: "3.13"}


def pull_fleet(tmp_path_factory: Any) -> Iterator[Lab]:
    """The lab the pull modules share, as a push leaves it: the mirror serving the
    administrators' first publication (from the inventory), each pull node converged (a
    cached root) and given pull mode (the pinned rocm-fleet, the root it trusts, the pull
    script, service and timer). The nodes booted before the push: their timers wait for the
    next boot. ``lab.repository`` and ``lab.keys`` are the administrators'.

    What a test changes it puts back, or changes only what no other test reads: the nodes
    stay converged to the inventory, which is what the mirror serves."""
    built: dict[str, Path] = {}
    locks: dict[str, str] = {}
    for node, python in PYTHONS.items():
        built[node] = tmp_path_factory.mktemp(f"wheels-{python}")
        for wheel in [w for d in built.values() for w in d.glob("rocm_fleet-*.whl")][:1]:
            shutil.copy(wheel, built[node])  # built once, for either Python
        locks[node] = wheel_lock(built[node], python)
    admin = tmp_path_factory.mktemp("admin")
    repository = admin_repository(admin)
    releases = ["6.4.3", COMMITTED, FUTURE_RELEASE]
    for lab in support.running_lab(FLEET, releases, timer_scale=SCALE):
        assert lab.address(MIRROR) == MIRROR_ADDRESS
        lab.repository, lab.keys = repository, admin / "keys"
        for node in PYTHONS:
            give_wheels(lab.root(node), built[node], locks[node])
        # The administrators put the nodes in pull mode: their inventory, published, pushed.
        set_inventory(lab, {node: pull_settings(repository, locks[node], SOURCE, INTERVAL,
                                                RANDOM_DELAY) for node in PYTHONS})  # fmt: skip
        first = publish_inventory(lab, *PYTHONS)
        assert first.returncode == 0, first.stderr
        support.succeeded(support.deploy(lab))
        yield lab


def set_inventory(lab: Lab, change: dict[str, dict[str, Any]], path: Path | None = None) -> Path:
    """The lab's inventory (or a copy at ``path``) with ``change[host]`` in each host's data."""
    hosts = runpy.run_path(str(lab.inventory))["lab"]
    target = path or lab.inventory
    edited = [(name, {**data, **change.get(name, {})}) for name, data in hosts]
    target.write_text(f"lab = {edited!r}\n")
    return target


def publish_inventory(lab: Lab, *nodes: str, inventory: Path | None = None) -> Any:
    """``rocm-fleet publish`` of ``nodes`` from the lab's inventory (or ``inventory``), as the
    administrators run it; copied to the mirror when it succeeded."""
    limit = ["--limit", ",".join(nodes)]
    result = publish_cli(inventory or lab.inventory, *limit, "--repository",
                         lab.repository.directory, "--keys", lab.keys)  # fmt: skip
    if result.returncode == 0:
        copy_published(lab.repository, lab.root(MIRROR))
    return result


def quiet(lab: Lab, node: str) -> None:
    """The node's timer stopped (until its next boot) and no run of it left in progress."""
    lab.timers.stop_timer(node)
    while any(r.ended is None for r in lab.timers.runs_of(node)):
        time.sleep(0.5)


def status_metrics(lab: Lab, node: str) -> str:
    return (lab.root(node) / paths.PULL_STATUS_METRICS.lstrip("/")).read_text()


# --- wheels, repository, runs -------------------------------------------------------------------


def wheel_lock(directory: Path, python: str) -> str:
    """rocm-fleet's wheel (built from this checkout, unless ``directory`` holds it already)
    and every dependency for the nodes' Python (``python``: "3.11" on Debian 12, "3.13" on
    Debian 13), as ``name @ file://... --hash=sha256:...`` lines. Dependencies come from a
    wheelhouse in the lab's cache, filled from PyPI only when it lacks one."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    if not any(directory.glob("rocm_fleet-*.whl")):  # one a caller built for another Python
        support.build_product_wheel(directory)
    house = cache_dir() / "pull-wheelhouse"
    house.mkdir(exist_ok=True)
    # The extras a pull runs: its fetch, the node's checks and its audit (rocm-fleet-pull.sh).
    own = [f"{p}[pull,check,audit]" for p in directory.glob("rocm_fleet-*.whl")]
    target = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp",
              "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
              "--platform", "manylinux2014_x86_64", "--platform", "any"]  # fmt: skip
    offline = [*pip, "download", "--no-index", "--find-links", house, "-d", directory, *target]
    if subprocess.run([*offline, *own], check=False).returncode != 0:
        # The house holds dependencies only: a rocm_fleet wheel of the same version left in
        # it by an earlier run would be taken as "already downloaded", with its old
        # dependencies, and the new ones never fetched.
        for stale in house.glob("rocm_fleet-*.whl"):
            stale.unlink()
        subprocess.run([*pip, "download", "-d", house, *target, *own], check=True)
        for saved in house.glob("rocm_fleet-*.whl"):
            saved.unlink()
        subprocess.run([*offline, *own], check=True)
    lines = []
    for wheel in sorted(directory.glob("*.whl")):
        name = wheel.name.split("-")[0].replace("_", "-")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        lines.append(f"{name} @ file://{WHEELS}/{wheel.name} --hash=sha256:{digest}")
    return "\n".join(lines) + "\n"


def publish_cli(*args: Any) -> subprocess.CompletedProcess[str]:
    """``rocm-fleet publish ARGS`` on the controller, as the administrators run it."""
    command = [sys.executable, "-m", "rocm_fleet.cli", "publish", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def admin_repository(admin: Path) -> PullRepository:
    """The administrators' repository and keys in ``admin``, made as ``rocm-fleet publish
    --init`` makes them."""
    made = publish_cli("--init", "--repository", admin / "repository", "--keys", admin / "keys")
    assert made.returncode == 0, made.stderr
    return PullRepository(admin / "repository", [admin / "keys"])


def pull_settings(repository: PullRepository, lock: str, source: str, interval: str,
                  random_delay: str) -> dict[str, Any]:  # fmt: skip
    """A pull node's inventory data: the repository at ``source``, its root as the trust
    anchor, the pinned wheels ``lock`` (which ``give_wheels`` puts on the node)."""
    return {"rocm_pull": True, "rocm_pull_source": source,
            "rocm_pull_trusted_root": str(repository.metadata / "root.json"),
            "rocm_pull_lock": LOCK,
            "rocm_pull_lock_sha256": hashlib.sha256(lock.encode()).hexdigest(),
            "rocm_pull_interval": interval, "rocm_pull_random_delay": random_delay}  # fmt: skip


def give_wheels(root: Path, built: Path, lock: str) -> None:
    """The wheels ``wheel_lock`` built, and their lock, on a node (its root), where its
    ``rocm_pull_lock`` names them; and the directory node_exporter reads."""
    shutil.copytree(built, root / WHEELS.lstrip("/"))
    (root / LOCK.lstrip("/")).write_text(lock)
    (root / paths.NODE_EXPORTER_TEXTFILES.lstrip("/")).mkdir(parents=True)


def copy_published(repository: PullRepository, mirror_root: Path) -> None:
    """The repository copied to the mirror's published directory, as the administrators'
    rsync would: targets first, then the metadata that names them."""
    published = mirror_root / paths.MIRROR_PUBLISHED.lstrip("/")
    for part in ("targets", "metadata"):
        shutil.copytree(repository.directory / part, published / part, dirs_exist_ok=True)


def next_run(lab, node: str, after: float, timeout: float):
    """The first timer run of ``node`` that started after ``after`` (time.monotonic()), once
    it has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = [r for r in lab.timers.runs_of(node) if r.started > after]
        if runs and runs[0].ended is not None:
            return runs[0]
        time.sleep(0.5)
    raise AssertionError(f"no timer run of {node} ended in {timeout:.0f}s:\n"
                         + lab.timers.journal(node)[-3000:])  # fmt: skip


def ssh_sessions(lab) -> dict[str, int]:
    """Host name -> SSH sessions its sshd has accepted so far (its log)."""
    logs = {name: lab.root(name).parent / "sshd.log" for name in lab.hosts}
    return {name: log.read_text(errors="replace").count("Accepted publickey") for name, log in
            logs.items()}  # fmt: skip


def changed_ops(output: str) -> list[str]:
    """The operations pyinfra's results table (in a run's output) says changed the node,
    without the node deploy's prefix; it must have one."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    table = plain.rsplit("Operation ", 1)
    assert len(table) == 2 and "Grand total" in table[1], output[-3000:]
    changed = []
    for line in table[1].splitlines()[1:]:
        row = re.split(r"\s{2,}", line.split("]: ", 1)[-1].strip())
        if row[0] == "Grand total":
            break
        if len(row) >= 3 and row[2] != "-":
            changed.append(row[0].removeprefix(support.OP_PREFIX))
    return changed
