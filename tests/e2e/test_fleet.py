"""End to end: pyinfra over SSH against the lab fleet, with the production URLs.

Converge (the ``converged`` fixture: the first run, shared by every test that starts from a
converged fleet, so each also runs alone with ``-k``), converge again (no change), check the
nodes with the testinfra suite users run, then drift and --dry.
"""

from __future__ import annotations

import re
import shlex
import sys

import pytest

from e2e.conftest import CONVERGING
from e2e.support import changed, deploy, failed_hosts, succeeded

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def converged(fleet):
    """The fleet's first run (node1, node2, node3 from bare hosts), which succeeded."""
    result = deploy(fleet, limit=CONVERGING)
    succeeded(result)
    return result


def test_fleet_converges_in_one_run(converged, record_property):
    result = converged
    record_property("seconds", round(result.seconds, 1))
    print(f"first run: {result.seconds:.1f}s")
    assert result.returncode == 0, result.output[-3000:]
    assert failed_hosts(result) == []
    assert result.json["results"]["totals"]["error"] == 0
    ops = changed(result)
    for op in (
        "Point apt at the ROCm release",
        "Install the torch wheels",
        "Give the GPU users video and render",
    ):
        assert any(op in name for name in ops), (op, ops)


def test_second_run_changes_nothing(fleet, converged):
    result = deploy(fleet, limit=CONVERGING)
    print(f"second run: {result.seconds:.1f}s")
    assert result.returncode == 0, result.output[-3000:]
    assert result.json["results"]["totals"]["error"] == 0
    assert changed(result) == {}


def test_node_checks_pass_on_every_host(fleet, converged):
    result = fleet.run(
        [sys.executable, "-m", "rocm_fleet.cli", "check",
         str(fleet.inventory), "--limit", CONVERGING]
    )  # fmt: skip
    print(result.stdout[-2000:])
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


def test_wrong_gpu_is_refused_with_a_clear_message_in_dry_and_real_runs(fleet):
    # Beside a good host: the refusal must stay on its host while node1 runs on.
    # Preflight sees the cards on PCI before anything is installed (deploy/preflight.py),
    # and
    # says so while planning, on the host's line, with --dry as in a real run.
    for dry in (True, False):
        result = deploy(fleet, limit="node1,wronggpu", dry=dry)
        assert result.returncode == 1, result.output[-3000:]
        assert failed_hosts(result) == ["wronggpu"], result.output[-3000:]
        line = re.search(r"^.*\[wronggpu\].*refused: .*$", result.output, re.M)
        assert line, result.output[-3000:]
        assert "expected 1 x gfx1100, found 8 x gfx942" in line.group(0)
        assert "wronggpu" not in str(changed(result))


def drift(fleet, host: str, command: str) -> None:
    result = fleet.ssh(host, command)
    assert result.returncode == 0, result.stderr


def test_dry_run_reports_exactly_the_drift(fleet, converged):
    drift(fleet, "node1", "gpasswd -d alice render")
    drift(fleet, "node1", "rm /etc/apt/preferences.d/rocm-pin-600")
    drift(
        fleet, "node1",
        "/opt/rocm-fleet/venv/bin/python -m pip install -q --no-deps --index-url "
        + shlex.quote("https://download.pytorch.org/whl/rocm6.4") + " torch==2.9.0+rocm6.4",
    )  # fmt: skip

    dry = deploy(fleet, limit=CONVERGING, dry=True)
    assert dry.returncode == 0, dry.output[-3000:]
    would_change = changed(dry)
    assert would_change == {
        "ROCm apt repository | Pin AMD's repository above the distribution's own ROCm packages":
            ["node1"],
        "GPU groups | Give the GPU users video and render": ["node1"],
        "PyTorch | Install the torch wheels built for the ROCm release": ["node1"],
    }  # fmt: skip

    fixed = deploy(fleet, limit=CONVERGING)
    assert fixed.returncode == 0, fixed.output[-3000:]
    assert changed(fixed) == would_change
    assert changed(deploy(fleet, limit=CONVERGING)) == {}
