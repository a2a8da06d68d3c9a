"""End to end: `rocm-fleet audit` on a lab fleet: clean hosts, hosts drifted in each way the
audit reports, and an unreachable host; table, JSON and exit status; and nothing written.
"""

from __future__ import annotations

import json
import os
import runpy
import shlex
import sys
import time
from pathlib import Path

import pytest

from e2e.test_preflight import changed, sh, tree_hash
from lab import HostSpec, Lab

pytestmark = pytest.mark.e2e

AUDIT = str(Path(sys.executable).parent / "rocm-fleet")
DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
DEPLOYED = ["clean", "pin", "groups", "torch", "release"]
HOSTS = [HostSpec(name, data=DATA) for name in DEPLOYED] + [HostSpec("gone", data=DATA, sshd=False)]


def audit(lab: Lab, *args: str, inventory: Path | None = None):
    started = time.monotonic()
    result = lab.run([AUDIT, "audit", str(inventory or lab.inventory), *args], timeout=300)
    result.seconds = time.monotonic() - started
    return result


@pytest.fixture(scope="module")
def fleet():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root (debootstrap, network namespaces)")
    with Lab(hosts=HOSTS, rocm_releases=["6.4.3"]) as lab:
        lab.pyinfra(lab.inventory, "deploy.py", limit=DEPLOYED)
        yield lab


def test_a_converged_fleet_has_no_drift(fleet):
    result = audit(fleet, "--limit", ",".join(DEPLOYED))
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "5 hosts: 5 as the inventory says, 0 drifted, 0 unreachable/failed" in result.stdout
    assert "!" not in result.stdout


def drift(fleet: Lab) -> Path:
    sh(fleet, "pin", "rm /etc/apt/preferences.d/rocm-pin-600 && touch /run/reboot-required")
    sh(fleet, "groups", "gpasswd -d alice render >/dev/null")
    sh(
        fleet, "torch",
        "/opt/rocm-fleet/venv/bin/python -m pip install -q --no-deps --index-url "
        + shlex.quote("https://download.pytorch.org/whl/rocm6.4") + " torch==2.9.0+rocm6.4",
    )  # fmt: skip
    fleet.set_profile("release", "mi300x-8")  # the cards were swapped
    # The inventory moves "release" to ROCm 7.2.1; the host still has 6.4.3.
    groups = runpy.run_path(str(fleet.inventory))
    hosts = [(n, {**d, "rocm_version": "7.2.1"} if n == "release" else d) for n, d in groups["lab"]]
    inventory = fleet.workdir / "audit_inventory.py"
    inventory.write_text(f"lab = {hosts!r}\n")
    return inventory


def test_drift_unreachable_table_json_exit_status_and_read_only(fleet):
    inventory = drift(fleet)
    before = {name: tree_hash(fleet.root(name)) for name in DEPLOYED}
    table = audit(fleet, inventory=inventory)
    print(f"audit (table) {table.seconds:.1f}s\n{table.stdout}")
    after = {name: tree_hash(fleet.root(name)) for name in DEPLOYED}
    for name in DEPLOYED:
        assert changed(before[name], after[name]) == [], name

    assert table.returncode == 2, table.stdout + table.stderr[-2000:]
    lines = {line.split()[0]: line for line in table.stdout.splitlines()[1:-1]}
    assert "!" not in lines["clean"]
    assert "! missing" in lines["pin"] and "! pending" in lines["pin"]
    assert "! alice: not in render" in lines["groups"]
    assert "! 2.9.1+rocm6.4 / 2.9.0+rocm6.4 (hip " in lines["torch"]
    assert "! 7.2.1 / 6.4.3-128" in lines["release"]
    assert "! 1 x gfx1100 / 8 x gfx942" in lines["release"]
    assert "! UNREACHABLE" in lines["gone"]
    summary = table.stdout.splitlines()[-1]
    assert summary == "6 hosts: 1 as the inventory says, 4 drifted, 1 unreachable/failed"

    report = audit(fleet, "--json", inventory=inventory)
    assert report.returncode == 2
    data = json.loads(report.stdout)
    assert data["exit_status"] == 2
    rows = {row["host"]: row for row in data["hosts"]}
    assert {name: row["status"] for name, row in rows.items()} == {
        "clean": "ok", "pin": "drift", "groups": "drift", "torch": "drift",
        "release": "drift", "gone": "unreachable",
    }  # fmt: skip
    assert {name: row["drift"] for name, row in rows.items()} == {
        "clean": [], "pin": ["pin", "reboot"], "groups": ["groups"], "torch": ["torch"],
        "release": ["rocm", "torch", "gpus"], "gone": [],
    }  # fmt: skip
    torch = rows["torch"]["cells"]["torch"]
    assert torch["installed"] == "2.9.0+rocm6.4" and torch["wanted"] == "2.9.1+rocm6.4"
    assert torch["hip"]
    assert rows["release"]["cells"]["gpus"]["found"] == ["gfx942"] * 8
    assert rows["clean"]["cells"]["driver"]["text"].startswith("amdgpu")

    only_drifted = audit(fleet, "--limit", "pin", "--limit", "clean", inventory=inventory)
    assert only_drifted.returncode == 1
