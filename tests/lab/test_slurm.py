"""The lab's Slurm cluster (slurm.py): Debian's real daemons on lab hosts, a job that runs,
a shared MUNGE key only munge can read, and nothing left running after it closes."""

from __future__ import annotations

import os
import stat

import pytest

from lab import HostSpec, Lab
from lab.slurm import MUNGE_KEY, Cluster

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root"),
]


@pytest.mark.parametrize(("suite", "version"), [("bookworm", "22.05."), ("trixie", "24.11.")])
def test_cluster_runs_a_job_and_closes_by_pid(suite, version):
    hosts = [
        HostSpec("ctl", suite=suite, profile="none", base="slurm"),
        HostSpec("gpu1", suite=suite, profile="rx7900xtx", base="slurm"),
        HostSpec("gpu2", suite=suite, profile="w7900", base="slurm"),
    ]
    with Lab(hosts=hosts) as lab:
        with Cluster(lab, "ctl", ["gpu1", "gpu2"]) as cluster:
            assert cluster.node_states() == {"gpu1": "idle", "gpu2": "idle"}
            keys = {(lab.root(h) / MUNGE_KEY).read_bytes() for h in cluster.hosts}
            assert len(keys) == 1 and len(keys.pop()) == 1024
            for host in cluster.hosts:
                st = (lab.root(host) / MUNGE_KEY).stat()
                assert stat.S_IMODE(st.st_mode) == 0o400
                assert lab.ssh(host, f"stat -c %U /{MUNGE_KEY}").stdout.strip() == "munge"
            versions = {
                n: cluster.show_node(n).split("Version=")[1].split()[0] for n in cluster.nodes
            }
            assert all(v.startswith(version) for v in versions.values()), versions
            job = cluster.submit(1, nodelist="gpu2")
            cluster.wait_jobs_done([job])
            # The node's own client reaches the controller too (munge across hosts).
            assert "gpu1" in cluster.scontrol("gpu1", "show", "node", "gpu1")
            pids = cluster.pids()
            assert len(pids) == 2 * (3 + 1 + 2)  # nsenter + daemon: 3 munged, slurmctld, 2 slurmd
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        assert cluster.pids() == []
