"""The tests of tests/unit/test_preflight.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.deploy.preflight import survey_reads
from rocm_fleet.facts.apt import AptInstallSize
from rocm_fleet.facts.python import TorchBuildStrings, VenvDistributions
from rocm_fleet.facts.round_trip import host_survey
from rocm_fleet.facts.system import NvidiaStack
from rocm_fleet.model.answers import InstallSize
from rocm_fleet.model.conflicts import VenvTorch, venv_torch
from rocm_fleet.model.host_survey import HostSurvey
from unit.facts.support import surveyed
from unit.test_preflight import DASH, config


def run_sh(command: str, path: Path | None = None) -> tuple[int, list[str]]:
    env = {
        "PATH": f"{path}:/usr/bin:/bin:/usr/sbin:/sbin" if path else "/usr/bin:/bin:/usr/sbin:/sbin"
    }
    proc = subprocess.run(
        [DASH, "-c", command], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    return proc.returncode, proc.stdout.splitlines()


def fake_tool(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_nvidia_stack_command_always_exits_zero_with_a_failing_dpkg(tmp_path):
    fake_tool(tmp_path, "dpkg-query", 'echo "ii |nvidia-driver|535.216.01-1"\nexit 1\n')
    rc, out = run_sh(NvidiaStack().command(), tmp_path)
    assert rc == 0
    result = NvidiaStack().process(out)
    assert result["packages"] == ["nvidia-driver"]
    assert all(m.startswith("nvidia") for m in result["modules"])  # this machine's


def test_nvidia_stack_on_this_machine_runs_under_dash():
    rc, out = run_sh(NvidiaStack().command())
    assert rc == 0
    assert set(NvidiaStack().process(out)) == {"packages", "modules"}


def test_the_survey_runs_read_only_under_dash_on_this_machine(tmp_path):
    before = sorted(p.name for p in tmp_path.iterdir())
    settings = config(
        rocm_users=["root", "no-such-user"],
        pytorch_venv=str(tmp_path / "venv"),
        rocm_packages=["libc6"],
        rocm_driver="dkms",
    )
    reads = survey_reads(settings)
    survey = host_survey(reads, surveyed(reads, {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}))
    assert survey.identity["uid"] is not None and survey.distro["id"]
    assert survey.kernel and survey.arch
    assert survey.groups["users"]["no-such-user"] is None
    assert survey.groups["users"]["root"][0] == "root"
    assert survey.venv is None and survey.torch_build is None  # no venv there
    disk = {entry["path"]: entry for entry in survey.disk}
    assert disk[str(tmp_path / "venv")]["avail"] > 0  # measured at its nearest parent
    assert isinstance(survey.packages, dict) and isinstance(survey.modules, list)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_apt_sizing_is_skipped_when_the_release_is_installed():
    """Sizing loads apt's whole cache; a host with every package of the release needs none.
    Run under dash against this machine's dpkg: bash is installed."""
    rc, out = run_sh("dpkg-query -W -f='${Version}' bash")
    if rc != 0 or not out:
        pytest.skip("no dpkg on this machine")
    version = out[0]
    regex = "^" + version.split("-")[0].replace(".", "[.]") + "-"  # as a release's would
    fact = AptInstallSize()
    other = fact.process(run_sh(fact.command(packages=["bash"], version_regex="[.]99999-"))[1])
    assert other.message != "already installed from this release"
    same = fact.process(run_sh(fact.command(packages=["bash"], version_regex=regex))[1])
    assert same == InstallSize(need=0, message="already installed from this release")


def test_venv_torch_from_the_venvs_files(tmp_path):
    """dist-info names and torch/version.py: no Python runs, torch is never imported."""
    site = tmp_path / "venv/lib/python3.11/site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch/version.py").write_text(
        "from typing import Optional\n__version__ = '2.9.1+cu128'\n"
        "cuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n"
    )
    (site / "torch-2.9.1+cu128.dist-info").mkdir()
    (site / "torchvision-0.24.1+cu128.dist-info").mkdir()
    venv = str(tmp_path / "venv")
    survey = HostSurvey(
        venv=VenvDistributions().process(run_sh(VenvDistributions().command(venv))[1]),
        torch_build=TorchBuildStrings().process(run_sh(TorchBuildStrings().command(venv))[1]),
    )
    assert venv_torch(survey) == VenvTorch(torch="2.9.1+cu128", hip=None, cuda="12.8",
                                           build="cuda")  # fmt: skip
    assert venv_torch(HostSurvey(venv=None, torch_build=None)).build is None
