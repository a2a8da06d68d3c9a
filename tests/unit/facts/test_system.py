"""rocm_fleet.facts.system: the distribution, the machine and what a reboot needs."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from pyinfra.facts.deb import DebArch

from rocm_fleet.facts.round_trip import Read, Survey
from rocm_fleet.facts.system import (
    AmdgpuModule,
    Architecture,
    DistroRelease,
    FreeSpace,
    Identity,
    LoadedModules,
    RebootRequired,
    Wsl,
)
from unit.facts.support import FIXTURES, fixture, lines, run_sh


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("debian-12", ("debian", [], "12", "bookworm", "12.9")),
        ("debian-13", ("debian", [], "13", "trixie", "13.1")),
        ("debian-11", ("debian", [], "11", "bullseye", None)),
        ("ubuntu-22.04", ("ubuntu", ["debian"], "22.04", "jammy", "22.04.5")),
        ("ubuntu-24.04", ("ubuntu", ["debian"], "24.04", "noble", "24.04.3")),
    ],
)
def test_distro_release(name, expected):
    output = lines(fixture("os-release", name))
    companion = FIXTURES / "os-release" / f"{name}.debian_version"
    if companion.exists():
        output.append("__debian_version=" + companion.read_text().strip())
    result = DistroRelease().process(output)
    got = (
        result["id"],
        result["id_like"],
        result["version_id"],
        result["codename"],
        result["point_release"],
    )
    assert got == expected
    assert result["pretty_name"].startswith(("Debian GNU/Linux", "Ubuntu"))


def test_distro_release_without_os_release():
    assert DistroRelease().process([]) is None
    assert DistroRelease().process(["__debian_version=12.9"]) is None


def test_distro_release_command_runs_on_this_machine():
    rc, out = run_sh(DistroRelease().command())
    assert rc == 0
    if os.path.exists("/etc/os-release"):
        assert DistroRelease().process(out)["id"]


# ---------------------------------------------------------------------------------------
# system
# ---------------------------------------------------------------------------------------


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


def test_amdgpu_module_inbox_dkms_and_absent():
    assert AmdgpuModule().process(["loaded", "initstate=live"]) == {
        "loaded": True, "version": None, "initstate": "live"
    }  # fmt: skip
    assert AmdgpuModule().process(["loaded", "version=6.12.12", "initstate=live"])["version"] == (
        "6.12.12"
    )
    assert AmdgpuModule().process([]) == AmdgpuModule().default()
    assert AmdgpuModule().default() == {"loaded": False, "version": None, "initstate": None}


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


def test_reboot_required_reads_debians_files_and_our_reasons():
    output = ["__required", "__pkg=linux-image-6.12.38+deb12-amd64", "__pkg=amdgpu-dkms",
              "__reason=new driver amdgpu-dkms", "__reason=new driver amdgpu-dkms"]  # fmt: skip
    assert RebootRequired().process(output) == {
        "required": True,
        "packages": ["linux-image-6.12.38+deb12-amd64", "amdgpu-dkms"],
        "reasons": ["new driver amdgpu-dkms"],
    }
    assert RebootRequired().process([]) == RebootRequired().default()
