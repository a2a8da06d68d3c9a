"""End to end: acceptance in ``rocm-fleet roll`` on a real Slurm cluster (``lab.slurm``).

Three GPU nodes (gfx1100) with ``rocm_acceptance: quick``; each test makes every node drift
(a file the deploy writes is removed) and turns the knob of the RVS double (``lab.rvs``:
AMD's recorded GST log, or the one below AMD's target) per node. A node whose GST falls below
target stays drained with the failing step and its numbers as Slurm's reason; one that
passes is resumed and idle again; the roll stops after the wave where more nodes failed than
``--max-failed`` allows; a node left drained, its card fixed, passes the next roll's
acceptance and is resumed. Each run's record is on its node, root-only.
"""

from __future__ import annotations

import os
import stat

import pytest

from e2e import support
from e2e.support import inventory_with, running_lab, succeeded
from e2e.test_slurm_waves import roll
from lab import HostSpec, rvs
from lab.slurm import Cluster
from rocm_fleet.model import paths
from rocm_fleet.model.acceptance import parse_record
from rocm_fleet.model.slurm import REASON_PREFIX, parse_node

pytestmark = pytest.mark.e2e

CONTROLLER = "ctl"
NODES = ["gpu1", "gpu2", "gpu3"]
DATA = {
    "rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
    "rocm_users": ["alice"], "pytorch_install": False, "rocm_acceptance": "quick",
    # amd-smi for the counters read around the run (the lab's double of it)
    "rocm_packages": ["rocm-hip-runtime", "amd-smi-lib"],
}  # fmt: skip
HOSTS = [HostSpec(CONTROLLER, base="slurm")] + [
    HostSpec(node, base="slurm", data=dict(DATA)) for node in NODES
]
ROLL_DATA = {"rocm_slurm_drain": True, "rocm_slurm_drain_timeout": 300}
#: the reason of a node whose recorded GST log is the one below AMD's 65000 GFLOPS target
BELOW = (
    f"{REASON_PREFIX} acceptance quick failed: rvs:gst_single gpustress-4096-hgemm-false "
    "GPU 28851 41234 GFLOPS < 65000"
)


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3"])


@pytest.fixture(scope="module")
def cluster(lab):
    with Cluster(lab, CONTROLLER, NODES) as cluster:
        succeeded(support.deploy(lab, limit=",".join(NODES)))
        yield cluster


@pytest.fixture
def drifted(lab, cluster, tmp_path):
    """Every node idle, its GST meeting AMD's target, and drifted; the roll's inventory."""
    for node in NODES:
        rvs.set_below(lab.root(node), False)
        if parse_node(cluster.show_node(node)).drain:
            cluster.scontrol(CONTROLLER, "update", f"NodeName={node}", "State=RESUME")
        (lab.root(node) / paths.PROFILE.lstrip("/")).unlink(missing_ok=True)
    cluster.wait_idle(NODES)
    return inventory_with(lab, tmp_path / "roll.py", ROLL_DATA)


def record(lab, node: str):
    """The node's acceptance record, checked root-only."""
    path = lab.root(node) / paths.ACCEPTANCE_RECORD.lstrip("/")
    found = os.lstat(path)
    assert stat.S_ISREG(found.st_mode) and stat.S_IMODE(found.st_mode) == 0o600, found
    assert found.st_uid == 0
    return parse_record(path.read_text())


def test_a_node_below_its_gst_target_stays_drained_saying_so_and_stops_the_roll(
    lab, cluster, drifted
):
    rvs.set_below(lab.root("gpu2"), True)
    result = roll(lab, drifted)  # one node a wave, no failure allowed
    print(result.output)
    assert result.returncode == 1, result.output
    assert "gpu1: node checks passed; acceptance quick passed" in result.output
    assert "stopped after wave 2; not rolled: gpu3" in result.output
    assert "roll: 1 changed; failed: gpu2; left drained: gpu2" in result.output
    node = parse_node(cluster.show_node("gpu2"))
    assert node.drained_by_roll and node.reason == BELOW, node
    # gpu1 passed and is back in service; gpu3 was never drained
    cluster.wait_idle(["gpu1", "gpu3"])
    assert "gpu3: drain" not in result.output
    passed, failed = record(lab, "gpu1"), record(lab, "gpu2")
    assert passed.passed and passed.level == "quick"
    assert [(s.name, s.status) for s in passed.steps] == [
        ("counters", "pass"), ("rvs:gst_single", "pass"), ("torch", "skip"),
    ]  # fmt: skip
    assert [s.name for s in failed.failed] == ["rvs:gst_single"]
    assert failed.failed[0].numbers["gpustress-4096-hgemm-false_gflops"] == pytest.approx(
        41233.907114
    )


def test_failures_past_max_failed_stop_the_roll_and_a_fixed_node_is_resumed(lab, cluster, drifted):
    for node in ("gpu1", "gpu2"):
        rvs.set_below(lab.root(node), True)
    result = roll(lab, drifted, "--max-failed", "1")
    print(result.output)
    assert result.returncode == 1, result.output
    # gpu1's failure is within the limit; gpu2's passes it: gpu3 is not rolled
    assert "stopped after wave 2 (2 failed, more than --max-failed 1); not rolled: gpu3" in (
        result.output
    )
    for node in ("gpu1", "gpu2"):
        found = parse_node(cluster.show_node(node))
        assert found.drained_by_roll and found.reason == BELOW, found
    # gpu1's card fixed: no drift left, its acceptance runs again and it is resumed
    rvs.set_below(lab.root("gpu1"), False)
    again = roll(lab, drifted, limit="gpu1")
    print(again.output)
    assert again.returncode == 0, again.output
    assert "gpu1: no drift; node checks (an earlier roll left it drained)" in again.output
    assert "gpu1: node checks passed; acceptance quick passed" in again.output
    cluster.wait_idle(["gpu1"])
    assert record(lab, "gpu1").passed
