"""What the pull-mode end-to-end modules share: the pinned wheels a pull node installs, the
timer runs a test waits for, and what a run's deploy says it changed. Nothing here knows a
module's hosts."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from e2e import support
from lab._util import cache_dir
from rocm_fleet.model import paths
from rocm_fleet.pull.repository import PullRepository

ROOT = Path(__file__).resolve().parents[2]
WHEELS = "/srv/pull-wheels"  # on the nodes
LOCK = f"{WHEELS}/requirements.txt"


def wheel_lock(directory: Path, python: str) -> str:
    """rocm-fleet's wheel (built from this checkout) and every dependency for the nodes'
    Python (``python``: "3.11" on Debian 12, "3.13" on Debian 13), as ``name @ file://...
    --hash=sha256:...`` lines. Dependencies come from a wheelhouse in the lab's cache,
    filled from PyPI only when it lacks one."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", directory, ROOT], check=True)
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
