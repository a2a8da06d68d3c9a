"""The tests of rocm_fleet.facts.system that start a process or a loopback server (the
integration tier; its parsers' cases are data in tests/unit/facts/cases/system.*/)."""

from __future__ import annotations

import os
import shutil
import subprocess

from pyinfra.facts.deb import DebArch

from rocm_fleet.facts.round_trip import Read, Survey
from rocm_fleet.facts.system import (
    Architecture,
    DistroRelease,
    FreeSpace,
    Identity,
    LoadedModules,
    Wsl,
)
from unit.facts.support import run_sh


def test_distro_release_command_runs_on_this_machine():
    rc, out = run_sh(DistroRelease().command())
    assert rc == 0
    if os.path.exists("/etc/os-release"):
        assert DistroRelease().process(out)["id"]


def test_identity_architecture_wsl_and_modules_on_this_machine():
    rc, out = run_sh(Identity().command())
    assert rc == 0 and Identity().process(out)["uid"] == os.getuid()
    assert Identity().process([]) == Identity().default() == {"uid": None, "user": None}
    assert Identity().process(["1000", "admin"]) == {"uid": 1000, "user": "admin"}
    if shutil.which("dpkg"):
        assert (
            Architecture().process(run_sh(Architecture().command())[1])
            == subprocess.run(
                ["dpkg", "--print-architecture"], capture_output=True, text=True, check=False
            ).stdout.strip()
        )
    # pyinfra's own DebArch: no dpkg answers its default, None, alone (pyinfra checks for
    # the command) or surveyed (the section is empty).
    assert Architecture is DebArch and Architecture().default() is None
    survey = Survey()
    rc, out = run_sh(
        survey.command(reads=[Read("arch", Architecture)]).replace("dpkg ", "no-dpkg ")
    )
    assert rc == 0 and survey.process(out) == [None]
    assert run_sh(Wsl().command())[0] == 0
    assert Wsl().process(["interop"]) is True and Wsl().process([]) is False
    rc, out = run_sh(LoadedModules().command())
    assert rc == 0 and LoadedModules().process(out) == sorted(set(LoadedModules().process(out)))
    assert LoadedModules().process(["nvidia_uvm", "amdgpu", "", "nvidia_uvm"]) == [
        "amdgpu", "nvidia_uvm"
    ]  # fmt: skip


def test_free_space_measures_a_missing_path_at_its_parent(tmp_path):
    fact = FreeSpace()
    missing = tmp_path / "opt" / "rocm-fleet" / "venv"
    rc, out = run_sh(fact.command([str(tmp_path), str(missing)]))
    assert rc == 0
    (here, there) = fact.process(out)
    assert here["path"] == str(tmp_path) and there["path"] == str(missing)
    assert here["mount"] == there["mount"] and here["avail"] > 0
    assert fact.process([
        "__path=/opt",
        "__path=/var/cache/apt/archives",
        "Filesystem     1024-blocks      Used Available Capacity Mounted on",
        "/dev/nvme0n1p2   479597248 120000000 335191204      27% /",
        "/dev/nvme0n1p3    98304000  90000000   8304000      92% /var",
    ]) == [
        {"path": "/opt", "mount": "/", "avail": 335191204 * 1024},
        {"path": "/var/cache/apt/archives", "mount": "/var", "avail": 8304000 * 1024},
    ]  # fmt: skip
    assert fact.command([]) == "true" and fact.default() == []
    # a mount point with a space; and df failing for one path measures none
    assert fact.process(["__path=/srv", "/dev/sdb1 100 10 90 10% /mnt/big disk"]) == [
        {"path": "/srv", "mount": "/mnt/big disk", "avail": 90 * 1024}
    ]
    assert fact.process(["__path=/a", "__path=/b", "/dev/sda1 100 10 90 10% /"]) == []
