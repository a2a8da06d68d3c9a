"""rocm_fleet.facts.system: the distribution, the machine and what a reboot needs."""

from __future__ import annotations

import pytest

from rocm_fleet.facts.system import (
    AmdgpuModule,
    DistroRelease,
    RebootRequired,
)
from unit.facts.support import FIXTURES, fixture, lines


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


# ---------------------------------------------------------------------------------------
# system
# ---------------------------------------------------------------------------------------


def test_amdgpu_module_inbox_dkms_and_absent():
    assert AmdgpuModule().process(["loaded", "initstate=live"]) == {
        "loaded": True, "version": None, "initstate": "live"
    }  # fmt: skip
    assert AmdgpuModule().process(["loaded", "version=6.12.12", "initstate=live"])["version"] == (
        "6.12.12"
    )
    assert AmdgpuModule().process([]) == AmdgpuModule().default()
    assert AmdgpuModule().default() == {"loaded": False, "version": None, "initstate": None}


def test_reboot_required_reads_debians_files_and_our_reasons():
    output = ["__required", "__pkg=linux-image-6.12.38+deb12-amd64", "__pkg=amdgpu-dkms",
              "__reason=new driver amdgpu-dkms", "__reason=new driver amdgpu-dkms"]  # fmt: skip
    assert RebootRequired().process(output) == {
        "required": True,
        "packages": ["linux-image-6.12.38+deb12-amd64", "amdgpu-dkms"],
        "reasons": ["new driver amdgpu-dkms"],
    }
    assert RebootRequired().process([]) == RebootRequired().default()
