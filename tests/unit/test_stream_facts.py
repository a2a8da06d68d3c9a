"""The facts that read a release's files wherever its stream puts them, run for real under dash
(rocminfo and the version file in temporary trees; apt's sizing against this machine's dpkg)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from rocm_fleet.facts.apt import AptInstallSize
from rocm_fleet.facts.gpu import RocmAgents, RocmVersion

DASH = shutil.which("dash") or shutil.which("sh")
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def run_sh(command: str) -> list[str]:
    return subprocess.run(
        [DASH, "-c", command], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()


def test_rocminfo_is_the_releases_own_never_one_on_path(tmp_path):
    rocminfo = tmp_path / "core-10.1/bin/rocminfo"
    assert RocmAgents().process(run_sh(RocmAgents().command(rocminfo=str(rocminfo)))) is None
    rocminfo.parent.mkdir(parents=True)
    fixture = FIXTURES / "rocminfo" / "rx7900xtx.txt"
    rocminfo.write_text(f"#!/bin/sh\ncat '{fixture}'\n")
    rocminfo.chmod(0o755)
    agents = RocmAgents().process(run_sh(RocmAgents().command(rocminfo=str(rocminfo))))
    assert agents["status"] == "ok"
    assert [gpu["name"] for gpu in agents["gpus"]] == ["gfx1100"]


def test_rocm_version_reads_the_classic_file_then_the_core_sdks():
    command = RocmVersion().command()
    assert command.index("/opt/rocm/.info/version") < command.index("/opt/rocm/core/.info/version")
    assert RocmVersion().process(["10.1.0-2", ""]) == "10.1.0-2"


def test_rocm_version_of_a_given_root(tmp_path):
    root = tmp_path / "core-10.1"
    assert RocmVersion().process(run_sh(RocmVersion().command(rocm_path=str(root)))) is None
    (root / ".info").mkdir(parents=True)
    (root / ".info/version").write_text("10.1.0-2\n")
    assert RocmVersion().process(run_sh(RocmVersion().command(rocm_path=str(root)))) == "10.1.0-2"


def test_apt_sizing_is_skipped_when_every_package_has_the_releases_version():
    """Loading apt's cache is slow: a host with the release installed isn't asked. Run
    against this machine's dpkg: bash is installed at some version, the regex says which."""
    version = run_sh("dpkg-query -W -f='${Version}' bash")[0]
    same = "^" + version.split("-")[0].replace(".", "[.]") + "-"
    fact = AptInstallSize()
    assert fact.process(run_sh(fact.command(["bash"], version_regex=same)))["need"] == 0
    other = fact.process(run_sh(fact.command(["bash"], version_regex="^0[.]0-")))
    assert other["message"] != "already installed from this release"
