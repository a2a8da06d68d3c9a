"""End to end: pull mode on one lab host, no SSH deploy after the first.

A push deploy with ``rocm_pull`` installs the pinned rocm-fleet (every wheel locked by hash,
from a path on the node), the pull script and files, and the service and timer. The lab's
hosts run no systemd, so each "timer run" is the service's ExecStart run on the host as the
timer would run it: a changed desired state published to the node's data path is applied,
a second run changes nothing, bad data changes nothing and fails, and ``rocm_pull: false``
takes pull mode off again.
"""

from __future__ import annotations

import hashlib
import json
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from e2e import support
from e2e.support import running_lab, succeeded
from lab import HostSpec
from rocm_fleet.deploy import pull
from rocm_fleet.model import paths

pytestmark = pytest.mark.e2e

HOST = "puller"
ROOT = Path(__file__).resolve().parents[2]
WHEELS = "/srv/pull-wheels"  # on the node
DATA_PATH = "/srv/fleet/node.json"  # on the node
LOCK = f"{WHEELS}/requirements.txt"


def wheel_lock(directory: Path) -> str:
    """rocm-fleet's wheel (built from this checkout) and every dependency for the lab's
    bookworm Python (3.11), as ``name @ file://... --hash=sha256:...`` lines."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", directory, ROOT], check=True)
    subprocess.run(
        [*pip, "download", "-d", directory, "--only-binary=:all:", "--python-version", "3.11",
         "--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform",
         "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64", "--platform", "any",
         *(str(p) for p in directory.glob("rocm_fleet-*.whl"))],
        check=True,
    )  # fmt: skip
    lines = []
    for wheel in sorted(directory.glob("*.whl")):
        name = wheel.name.split("-")[0].replace("_", "-")
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        lines.append(f"{name} @ file://{WHEELS}/{wheel.name} --hash=sha256:{digest}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    built = tmp_path_factory.mktemp("wheels")
    lock = wheel_lock(built)
    pull_data = {
        "rocm_pull": True,
        "rocm_pull_source": DATA_PATH,
        "rocm_pull_lock": LOCK,
        "rocm_pull_lock_sha256": hashlib.sha256(lock.encode()).hexdigest(),
    }
    data = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
            **pull_data}  # fmt: skip
    for lab in running_lab([HostSpec(HOST, suite="bookworm", profile="rx7900xtx", data=data)],
                           ["6.4.3"]):  # fmt: skip
        root = lab.root(HOST)
        shutil.copytree(built, root / WHEELS.lstrip("/"))
        (root / LOCK.lstrip("/")).write_text(lock)
        (root / "srv/fleet").mkdir(parents=True)
        (root / paths.NODE_EXPORTER_TEXTFILES.lstrip("/")).mkdir(parents=True)
        # The node's data as the push gave it (the lab's key fingerprints included), less
        # the SSH settings a node's own inventory has no use for.
        pushed = dict(runpy.run_path(str(lab.inventory))["lab"])[HOST]
        lab.pull_data = {k: v for k, v in pushed.items() if not k.startswith("ssh_")}
        yield lab


def publish(lab, data: dict | str) -> None:
    """A desired state published where the node fetches it (its data path)."""
    text = data if isinstance(data, str) else json.dumps(data)
    (lab.root(HOST) / DATA_PATH.lstrip("/")).write_text(text)


def timer_run(lab):
    """What the timer starts: the service's ExecStart, on the host."""
    start = pull.service_unit().split("ExecStart=", 1)[1].split("\n\n")[0].split("\n", 2)
    command = " ".join(part.strip().rstrip("\\") for part in start[:2])
    return lab.ssh(HOST, command, timeout=1200)


def grand_total(output: str) -> list[str]:
    """pyinfra's "Grand total" row: hosts, success (changed), error, no change."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)
    rows = [line.split("Grand total", 1)[1].split() for line in plain.splitlines()
            if "Grand total" in line]  # fmt: skip
    assert rows, output[-3000:]
    return rows[-1]


def test_a_push_with_rocm_pull_installs_the_pinned_venv_and_the_units(lab):
    succeeded(support.deploy(lab, limit=HOST))
    root = lab.root(HOST)
    for path in (paths.PULL_SERVICE, paths.PULL_TIMER, paths.PULL_SCRIPT, paths.PULL_INVENTORY):
        assert (root / path.lstrip("/")).is_file(), path
    link = root / paths.PULL_TIMER_LINK.lstrip("/")
    assert link.is_symlink() and str(link.readlink()) == paths.PULL_TIMER
    assert "OnUnitActiveSec=1h" in (root / paths.PULL_TIMER.lstrip("/")).read_text()
    version = support.sh(lab, HOST, f"{paths.PULL_VENV}/bin/rocm-fleet --version")
    assert version.strip()


def test_a_published_change_is_applied_by_the_node_itself_and_a_second_run_changes_nothing(lab):
    publish(lab, {**lab.pull_data, "rocm_users": ["alice"]})
    first = timer_run(lab)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert {"video", "render"} <= set(support.sh(lab, HOST, "id -nG alice").split())
    metrics = (lab.root(HOST) / paths.PULL_METRICS.lstrip("/")).read_text()
    assert 'rocm_fleet_audit_status{host="@local",status="ok"} 1' in metrics
    second = timer_run(lab)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    # pyinfra's results table: its grand total has no success (a change) and no error.
    assert grand_total(second.stdout + second.stderr)[1:3] == ["-", "-"], second.stdout[-3000:]


def test_bad_published_data_changes_nothing_and_fails_the_run(lab):
    before = support.root_hashes(lab.root(HOST))
    publish(lab, {**lab.pull_data, "rocm_users": ["alice"], "rocm_version": 6.4})
    run = timer_run(lab)
    assert run.returncode != 0
    assert "rocm_version" in run.stdout + run.stderr
    ignored = ("run/", "tmp/", "srv/fleet", "var/lib/prometheus")  # the run's own, and the data
    after = support.root_hashes(lab.root(HOST))
    changed = [p for p in support.differences(before, after)
               if not p.startswith(ignored) and "__pycache__" not in p]  # fmt: skip
    assert changed == []


def test_rocm_pull_false_takes_pull_mode_off(lab):
    removal = ["Pull mode | Remove the pull service and timer",
               "Pull mode | Remove the pull venv and files"]  # fmt: skip
    dry = support.deploy(lab, limit=HOST, data=["rocm_pull=False"], dry=True)
    assert support.changed(dry) == {name: [HOST] for name in removal}
    succeeded(support.deploy(lab, limit=HOST, data=["rocm_pull=False"]))
    root = lab.root(HOST)
    for path in (paths.PULL_SERVICE, paths.PULL_TIMER, paths.PULL_TIMER_LINK, paths.PULL_ROOT):
        assert not (root / path.lstrip("/")).exists(), path
    again = support.deploy(lab, limit=HOST, data=["rocm_pull=False"], dry=True)
    assert support.changed(again) == {}
