"""End to end: a Ryzen AI Max+ 395 (Strix Halo, gfx1151) host. Preflight names its integrated
GPU by model and target and says how its memory works; the Core SDK's per-target package for
gfx1151 converges in one run, verifies the GPU, and a second run changes nothing.

The lab's hosts are Debian (AMD lists Ryzen APUs on Ubuntu 26.04 / 24.04.4 only, which the
lab can't build), so the run also carries the "AMD lists debian 13 for ..." warning a real
Debian host would get. Torch is off here (10.x torch from AMD's index: test_amd_torch.py)."""

from __future__ import annotations

import re

import pytest

from e2e.support import changed, deploy, host_line, running_lab, sh, succeeded
from lab import HostSpec
from rocm_fleet.model import matrix

pytestmark = pytest.mark.e2e

HOST = HostSpec("apu", suite="trixie", profile="strixhalo",
                data={"rocm_version": "10.0.0", "expected_gfx": "gfx1151",
                      "expected_gpu_count": 1, "pytorch_install": False})  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    yield from running_lab([HOST], ["10.0.0"])


def test_a_strix_halo_host_is_named_converges_and_verifies(lab):
    dry = deploy(lab, limit="apu", dry=True)
    note = host_line(dry, "apu", "warning: gfx1151 at ")
    print(note)
    assert "is the integrated GPU of a Ryzen APU: Ryzen AI Max / Max+ (Strix Halo)" in note
    assert "[1002:1586]" in note and "system memory it shares with the CPU (GTT)" in note
    # amdgpu's mem_info_vram_total / mem_info_gtt_total of the lab's APU (a real Strix
    # Halo's: tests/lab/sysfs.py APU_MEMORY), in GiB
    assert "its VRAM is a 4.0 GiB carve-out of system memory and its GTT 96.0 GiB" in note

    result = deploy(lab, limit="apu")
    succeeded(result)
    assert changed(result)["Verify | Check rocminfo and torch see the expected GPUs"] == ["apu"]
    out = sh(lab, "apu", "dpkg-query -W -f='${Package} ${Version}\\n' 'amdrocm*'")
    packages = dict(line.split() for line in out.splitlines())
    assert packages["amdrocm10.0-gfx1151"].startswith("10.0.0-"), packages
    assert "amdrocm10.0" not in packages  # the per-target package, not every target's
    agents = sh(lab, "apu", "/opt/rocm/core-10.0/bin/rocminfo")
    assert re.findall(r"^\s+Name:\s+(gfx\w+)\s*$", agents, re.M) == ["gfx1151"]
    assert "Radeon 8060S Graphics" in agents

    again = deploy(lab, limit="apu")
    succeeded(again)
    assert changed(again) == {}
    assert matrix.gpu_target("gfx1151").family == "ryzen"
