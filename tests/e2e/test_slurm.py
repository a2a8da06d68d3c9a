"""End to end: Slurm's GPUs (``rocm_slurm_gres``) on a real Slurm cluster of the lab (Debian's
slurmctld, slurmd and munged: tests/lab/slurm.py), three GPU nodes with different GPUs.

The deploy writes each node's gres.conf from its GPUs and, while the site's slurm.conf
declares no ``Gres=`` for them, warns with the exact value each needs; the check fails
saying the same. Once the site declares them (and slurmd restarts, reading gres.conf),
``scontrol show node`` reports them, a job asking for GPUs runs, a second run changes
nothing and the check passes. A gres.conf edited by hand is drift: ``--dry`` shows the
write that puts it back, and the check names the file.
"""

from __future__ import annotations

import sys

import pytest

from e2e.support import changed, deploy, running_lab, sh, succeeded
from lab import HostSpec
from lab.slurm import Cluster
from rocm_fleet.model import paths

pytestmark = pytest.mark.e2e

NODE = {"rocm_version": "6.4.3", "pytorch_install": False, "rocm_slurm_gres": True}
HOSTS = [
    HostSpec("ctl", profile="none", base="slurm", data={"rocm_version": "6.4.3"}),
    HostSpec("gpu1", profile="mi300x-8", base="slurm", data={**NODE, "expected_gpu_count": 8}),
    HostSpec("gpu2", profile="w7900", base="slurm", data={**NODE, "expected_gpu_count": 1}),
    HostSpec("gpu3", profile="rx7900xtx", base="slurm", data={**NODE, "expected_gpu_count": 1}),
]
NODES = ["gpu1", "gpu2", "gpu3"]
#: What each node's GPUs make (the type: the product its PCI ID names, else the gfx target:
#: 0x744c is the RX 7900 XT, XTX and GRE)
GRES = {"gpu1": "gpu:mi300x:8", "gpu2": "gpu:w7900:1", "gpu3": "gpu:gfx1100:1"}
WRITE = "Slurm GRES | Write /etc/slurm/gres.conf from the node's GPUs"


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3"])


@pytest.fixture(scope="module")
def cluster(lab):
    with Cluster(lab, "ctl", NODES) as cluster:
        yield cluster


@pytest.fixture
def undeclared(lab, cluster):
    """The cluster as before any run: no gres.conf on the nodes, no ``Gres=`` declared."""
    if cluster.gres:
        cluster.set_node_gres(dict.fromkeys(NODES))
    for node in NODES:
        sh(lab, node, f"rm -f {paths.SLURM_GRES_CONF}")


@pytest.fixture
def declared(lab, cluster):
    """The nodes converged with their GPUs declared (what the first test ends with; made
    here when it didn't run first)."""
    if cluster.gres != GRES:
        succeeded(deploy(lab, limit=NODES))
        cluster.set_node_gres(GRES)


def check(lab) -> object:
    result = lab.run(
        [sys.executable, "-m", "rocm_fleet.cli", "check", str(lab.inventory), "--limit",
         ",".join(NODES)],
        timeout=600, env={"COLUMNS": "1000"},  # a line a check, not wrapped
    )  # fmt: skip
    print(result.stdout[-4000:])
    return result


def slurm_lines(result) -> dict[str, str]:
    return {
        line.split()[1]: line
        for line in result.stdout.splitlines()
        if "Slurm sees the node's GPUs" in line and len(line.split()) > 1
    }


def test_gres_written_declared_and_checked(lab, cluster, undeclared):
    run = deploy(lab, limit=NODES)
    succeeded(run)
    assert changed(run)[WRITE] == NODES
    for node, gres in GRES.items():
        # The site's slurm.conf declares nothing yet: the run says what it needs.
        assert f"Slurm's node {node} has Gres=(null); its GPUs need Gres={gres}" in run.output
    conf = sh(lab, "gpu1", f"cat {paths.SLURM_GRES_CONF}")
    assert [line for line in conf.splitlines() if not line.startswith("#")] == [
        f"Name=gpu Type=mi300x File=/dev/dri/renderD{128 + i}" for i in range(8)
    ]
    assert sh(lab, "gpu3", f"grep -v '^#' {paths.SLURM_GRES_CONF}") == (
        "Name=gpu Type=gfx1100 File=/dev/dri/renderD128\n"
    )
    before = check(lab)
    assert before.returncode == 1
    lines = slurm_lines(before)
    for node, gres in GRES.items():
        assert lines[node].startswith("FAILED") and f"need Gres={gres}" in lines[node], lines

    # The site declares them; slurmd starts again and reads the gres.conf written.
    cluster.set_node_gres(GRES)
    for node, gres in GRES.items():
        assert f"   Gres={gres}\n" in cluster.show_node(node)
    job = cluster.submit(1, gres="gpu:mi300x:2")
    cluster.wait_jobs_done([job])

    again = deploy(lab, limit=NODES)
    succeeded(again)
    assert changed(again) == {}
    assert "Slurm's node" not in again.output
    after = check(lab)
    assert after.returncode == 0, after.stdout[-4000:]
    assert all(line.startswith("ok") for line in slurm_lines(after).values())
    assert len(slurm_lines(after)) == 3


def test_a_tampered_gres_conf_is_drift(lab, cluster, declared):
    sh(lab, "gpu1", f"sed -i '$d' {paths.SLURM_GRES_CONF}")  # one GPU less
    dry = deploy(lab, limit=NODES, dry=True)
    assert changed(dry) == {WRITE: ["gpu1"]}, dry.output[-3000:]
    result = check(lab)
    assert result.returncode == 1
    lines = slurm_lines(result)
    assert lines["gpu1"].startswith("FAILED") and paths.SLURM_GRES_CONF in lines["gpu1"]
    assert lines["gpu2"].startswith("ok") and lines["gpu3"].startswith("ok")
    put_back = deploy(lab, limit=NODES)
    succeeded(put_back)
    assert changed(put_back) == {WRITE: ["gpu1"]}
