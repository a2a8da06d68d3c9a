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
