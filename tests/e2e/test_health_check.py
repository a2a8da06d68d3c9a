"""End to end: Slurm's health program (``rocm_slurm_health_check``) on a real Slurm cluster of
the lab (Debian's slurmctld, slurmd and munged: tests/lab/slurm.py), two 8x MI300X nodes whose
amd-smi is the lab's double (tests/lab/smi.py: real amd-smi JSON, per-host knobs).

The deploy writes the program (a second plan changes nothing); the site's slurm.conf names it
(``HealthCheckProgram``, every 5 s here, nodes in any state) and slurmd runs it as root. A GPU
that counts an uncorrectable ECC error drains its node with the program's reason; once the
count resets (a reboot) the program resumes the node it drained. A node an administrator
drained stays drained with the administrator's reason, unhealthy or healthy.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from e2e.support import changed, deploy, running_lab, sh, succeeded
from lab import HostSpec, smi
from lab.slurm import Cluster
from rocm_fleet.model import paths
from rocm_fleet.model.health_check import PREFIX, SlurmView, slurm_view

pytestmark = pytest.mark.e2e

NODE = {
    "rocm_version": "6.4.3",
    "pytorch_install": False,
    "rocm_packages": ["rocm"],
    "expected_gfx": "gfx942",
    "expected_gpu_count": 8,
    "rocm_slurm_health_check": True,
}
HOSTS = [
    HostSpec("ctl", profile="none", base="slurm", data={"rocm_version": "6.4.3"}),
    HostSpec("gpu1", profile="mi300x-8", base="slurm", data=NODE),
    HostSpec("gpu2", profile="mi300x-8", base="slurm", data=NODE),
]
NODES = ["gpu1", "gpu2"]
WRITE = f"Slurm health check | Write Slurm's health program {paths.SLURM_HEALTH_PROGRAM}"
INTERVAL = 5  # seconds between the program's runs (HealthCheckInterval)
#: the lines a site adds to slurm.conf (docs/maintaining/slurm.md)
HEALTH_CONF = [
    f"HealthCheckProgram={paths.SLURM_HEALTH_PROGRAM}",
    f"HealthCheckInterval={INTERVAL}",
    "HealthCheckNodeState=ANY",
]


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3"])


@pytest.fixture(scope="module")
def deployed(lab):
    """The nodes deployed; the program is written once."""
    run = deploy(lab, limit=NODES)
    succeeded(run)
    assert changed(run)[WRITE] == NODES
    again = deploy(lab, limit=NODES, dry=True)
    assert changed(again) == {}, again.output[-3000:]
    return lab


@pytest.fixture(scope="module")
def cluster(deployed):
    with Cluster(deployed, "ctl", NODES, conf_lines=HEALTH_CONF) as cluster:
        yield cluster


def view(cluster: Cluster, node: str) -> SlurmView:
    found = slurm_view(cluster.show_node(node))
    assert found is not None
    return found


def wait_for(cluster: Cluster, node: str, wanted: Callable[[SlurmView], bool]) -> SlurmView:
    """The node's view once ``wanted``; fails after a dozen of the program's intervals."""
    deadline = time.monotonic() + 12 * INTERVAL
    while time.monotonic() < deadline:
        found = view(cluster, node)
        if wanted(found):
            return found
        time.sleep(1)
    raise AssertionError(f"{node}: still {found} after {12 * INTERVAL} s\n{cluster.logs()}")


def baseline_kept(lab, node: str) -> None:
    """Wait until the program has run on ``node`` and kept its ECC baseline (root-only)."""
    path = lab.root(node) / paths.SLURM_HEALTH_BASELINE.lstrip("/")
    deadline = time.monotonic() + 12 * INTERVAL
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(1)
    assert path.exists(), f"{node}: the health program never ran"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_counters_that_move_drain_the_node_and_a_reset_resumes_it(lab, cluster):
    cluster.wait_idle(["gpu1"])
    baseline_kept(lab, "gpu1")
    smi.set_gpu(lab.root("gpu1"), 2, ecc={"total_uncorrectable_count": 1})
    try:
        drained = wait_for(cluster, "gpu1", lambda v: v.drain)
        assert drained.reason == (f"{PREFIX} GPU 2 (0000:23:00.0): uncorrectable ECC errors 0 -> 1")
        assert cluster.node_states()["gpu1"] in ("drain", "drng")  # sinfo's short states
        assert not view(cluster, "gpu2").drain  # the healthy node stays in service
    finally:
        smi.set_gpu(lab.root("gpu1"), 2, ecc={"total_uncorrectable_count": 0})  # a reboot
    wait_for(cluster, "gpu1", lambda v: not v.drain)  # its own drain: resumed
    cluster.wait_idle(["gpu1"])


def test_an_administrators_drain_stays_with_its_reason(lab, cluster):
    cluster.wait_idle(["gpu2"])
    baseline_kept(lab, "gpu2")
    cluster.scontrol("ctl", "update", "NodeName=gpu2", "State=DRAIN", "Reason=PSU swap")
    try:
        smi.set_gpu(lab.root("gpu2"), 5, pcie={"width": 8})
        # root runs it as slurmd does: it sees the problem and leaves the drain as it is
        said = sh(lab, "gpu2", paths.SLURM_HEALTH_PROGRAM)
        assert "GPU 5 (0000:53:00.0): PCIe x8 of x16" in said
        assert "drained by someone else (PSU swap): left so" in said
        time.sleep(3 * INTERVAL)  # slurmd runs it a few times more
        assert view(cluster, "gpu2") == SlurmView(True, "PSU swap")
        smi.set_gpu(lab.root("gpu2"), 5, pcie={"width": 16})  # healthy again
        assert "healthy; drained by someone else" in sh(lab, "gpu2", paths.SLURM_HEALTH_PROGRAM)
        time.sleep(3 * INTERVAL)
        assert view(cluster, "gpu2") == SlurmView(True, "PSU swap")  # never resumed by it
    finally:
        smi.set_gpu(lab.root("gpu2"), 5, pcie={"width": 16})
        cluster.scontrol("ctl", "update", "NodeName=gpu2", "State=RESUME")
    cluster.wait_idle(["gpu2"])
