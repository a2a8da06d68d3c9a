"""The double of AMD's container-toolkit repository (container_toolkit.py): the package as the
record says AMD builds it, and doubles that parse under dash. What the tools print is run in a
lab host by tests/e2e/test_containers.py."""

from __future__ import annotations

import subprocess

from lab import amd_repo, container_toolkit


def test_the_repository_serves_the_recorded_package_per_suite(tmp_path):
    signer = amd_repo.Signer(tmp_path / "gnupg")
    try:
        base = container_toolkit.build(tmp_path / "www", signer)
    finally:
        signer.close()
    assert base == tmp_path / "www/amd-container-toolkit/apt"
    for suite, ubuntu in (("jammy", "22.04"), ("noble", "24.04")):
        index = (base / f"dists/{suite}/main/binary-amd64/Packages").read_text()
        assert f"Version: 1.3.0~{ubuntu}\n" in index and "Depends: jq\n" in index, index
        assert "Origin: repo.radeon.com" in (base / f"dists/{suite}/InRelease").read_text()
        deb = (
            base
            / f"pool/main/a/amd-container-toolkit/amd-container-toolkit_1.3.0~{ubuntu}_amd64.deb"
        )
        listed = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
        assert (
            "./usr/local/bin/amd-ctk" in listed
            and "./usr/local/bin/amd-container-runtime" in listed
        )


def test_the_doubles_are_posix_sh():
    for script in (container_toolkit.AMD_CTK, container_toolkit.AMD_CONTAINER_RUNTIME):
        assert subprocess.run(["dash", "-n", script]).returncode == 0, script


HYBRID = """\
25 20 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw
29 25 0:26 / /sys/fs/cgroup/memory rw,nosuid,nodev,relatime shared:14 - cgroup cgroup rw,memory
30 20 0:5 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
"""
V2 = "31 20 0:27 / /sys/fs/cgroup rw,nosuid,nodev shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"


def test_a_containers_host_mounts_the_machines_cgroups_v1_of_a_hybrid():
    from lab.hosts import cgroup_mounts

    assert cgroup_mounts(HYBRID) == [
        ("/sys/fs/cgroup", "tmpfs", "ro,mode=755"),
        ("/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
    ]
    assert cgroup_mounts(V2) == [("/sys/fs/cgroup", "cgroup2", "rw,nsdelegate")]
