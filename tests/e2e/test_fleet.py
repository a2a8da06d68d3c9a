"""End to end: pyinfra over SSH against the lab fleet, with the production URLs.

The tests run in file order and build on each other: converge, converge again (no change),
check the nodes with the testinfra suite users run, then drift and --dry.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

from e2e.conftest import CONVERGING

pytestmark = pytest.mark.e2e

DEPLOY = "deploy.py"


PYINFRA = str(Path(sys.executable).parent / "pyinfra")


def deploy(fleet, *args, limit=CONVERGING):
    """`pyinfra --json` on the lab inventory; `-y` except for --dry, where it would skip
    change detection. Returns the process with `.json` and `.seconds` attached."""
    confirm = [] if "--dry" in args else ["-y"]
    limits = [arg for name in limit.split(",") for arg in ("--limit", name)]
    cmd = [PYINFRA, *confirm, "--json", *limits, str(fleet.inventory), DEPLOY, *args]
    started = time.monotonic()
    result = fleet.run(cmd, input="")
    result.seconds = time.monotonic() - started
    try:
        result.json = json.loads(result.stdout)
    except ValueError:
        result.json = None
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
    for op in (
        "Point apt at the ROCm release",
        "Install the torch wheels",
        "Give the GPU users video and render",
    ):
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
    # Beside a good host: the failure must stay on its host while node1 runs on.
    result = deploy(fleet, limit="node1,wronggpu")
    assert result.returncode != 0
    report = result.json
    assert report["results"]["failed_hosts"] == ["wronggpu"]
    output = result.stdout + result.stderr
    # Preflight sees the cards on PCI before anything is installed (tasks/preflight.py).
    assert "preflight refused wronggpu" in output, output[-3000:]
    assert "expected 1 x gfx1100, found 8 x gfx942" in output, output[-3000:]


def drift(fleet, host: str, command: str) -> None:
    result = fleet.ssh(host, command)
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
        "GPU groups | Give the GPU users video and render": ["node1"],
        "PyTorch | Install the torch wheels built for the ROCm release": ["node1"],
    }  # fmt: skip

    fixed = deploy(fleet)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert set(changed_ops(fixed.json)) == set(would_change)
    assert changed_ops(deploy(fleet).json) == {}
