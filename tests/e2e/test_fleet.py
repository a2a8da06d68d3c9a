"""End to end: pyinfra over SSH against the lab fleet, with the production URLs.

The tests run in file order and build on each other: converge, converge again (no change),
check the nodes with the testinfra suite users run, then drift and --dry.
"""

from __future__ import annotations

import shlex
import sys
import time

import pytest

from e2e.conftest import CONVERGING

pytestmark = pytest.mark.e2e

DEPLOY = "deploy.py"


def deploy(fleet, *args, limit=CONVERGING, json=True):
    started = time.monotonic()
    result = fleet.pyinfra(str(fleet.inventory), DEPLOY, *args, json=json, limit=limit)
    result.seconds = time.monotonic() - started
    return result


def changed_ops(report) -> dict[str, list[str]]:
    """Operation name -> hosts it changed, from `pyinfra --json` results."""
    return {
        op["name"]: sorted(op["success"]) for op in report["results"]["operations"] if op["success"]
    }


def test_fleet_converges_in_one_run(fleet, record_property):
    result = deploy(fleet)
    record_property("seconds", round(result.seconds, 1))
    print(f"first run: {result.seconds:.1f}s")
    assert result.returncode == 0, result.stderr[-3000:]
    report = result.json
    assert report["results"]["failed_hosts"] == []
    assert report["results"]["totals"]["error"] == 0
    changed = changed_ops(report)
    for op in ("Point apt at ROCm", "Install torch", "Add alice to video and render"):
        assert any(op in name for name in changed), (op, changed)


def test_second_run_changes_nothing(fleet):
    result = deploy(fleet)
    print(f"second run: {result.seconds:.1f}s")
    assert result.returncode == 0, result.stderr[-3000:]
    report = result.json
    assert report["results"]["totals"]["error"] == 0
    assert changed_ops(report) == {}


def test_node_checks_pass_on_every_host(fleet):
    result = fleet.run(
        [sys.executable, "-m", "pytest", "tests/node", "-q", "-p", "no:cacheprovider",
         "--inventory", str(fleet.inventory), "--limit", CONVERGING]
    )  # fmt: skip
    print(result.stdout[-2000:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


def test_wrong_gpu_fails_verify_with_a_clear_message(fleet):
    result = deploy(fleet, limit="wronggpu")
    assert result.returncode != 0
    report = result.json
    assert report["results"]["failed_hosts"] == ["wronggpu"]
    output = result.stdout + result.stderr
    assert "GPU verification failed on wronggpu" in output, output[-3000:]
    assert "expected 1 x gfx1100, rocminfo found 0 (gfx942" in output, output[-3000:]


def drift(fleet, host: str, command: str) -> None:
    result = fleet.run(["chroot", str(fleet.root(host)), "sh", "-c", command])
    assert result.returncode == 0, result.stderr


def test_dry_run_reports_exactly_the_drift(fleet):
    drift(fleet, "node1", "gpasswd -d alice render")
    drift(fleet, "node1", "rm /etc/apt/preferences.d/rocm-pin-600")
    drift(
        fleet, "node1",
        "/opt/rocm-fleet/venv/bin/python -m pip install -q --no-deps --index-url "
        + shlex.quote("https://download.pytorch.org/whl/rocm6.4") + " torch==2.9.0+rocm6.4",
    )  # fmt: skip

    dry = deploy(fleet, "--dry")
    assert dry.returncode == 0, dry.stderr[-3000:]
    would_change = {
        op["name"]: op["hosts_with_change"] for op in dry.json["plan"] if op["hosts_with_change"]
    }
    assert would_change == {
        "ROCm apt repository | Pin repo.radeon.com above the distribution's own ROCm packages":
            ["node1"],
        "GPU groups | Add alice to video and render": ["node1"],
        "PyTorch | Install torch 2.9.1+rocm6.4 from https://download.pytorch.org/whl/rocm6.4":
            ["node1"],
    }  # fmt: skip

    fixed = deploy(fleet)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert set(changed_ops(fixed.json)) == set(would_change)
    assert changed_ops(deploy(fleet).json) == {}
