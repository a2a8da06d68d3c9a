"""End to end: a Ryzen AI Max+ 395 (Strix Halo, gfx1151) host. Preflight names its integrated
GPU by model and target and says how its memory works; the Core SDK's per-target package for
gfx1151 converges in one run, verifies the GPU, and a second run changes nothing.

With ``rocm_apu_gtt_gib`` the host gets the TTM page limit in its modprobe.d file: the audit
shows it pending, the run lists the host for a reboot and the check says the
GTT is not yet the size asked; with reboots allowed the lab's boot applies the limit (its
sysfs double sizes the APU's GTT from the modprobe.d option, tests/lab/sysfs.py load_ttm),
and the check passes. More than the RAM allows, or ``amdgpu.gttsize`` on the host, is
refused before anything changes.

The lab's hosts are Debian (AMD lists Ryzen APUs on Ubuntu 26.04 / 24.04.4 only, which the
lab can't build), so the run also carries the "AMD lists debian 13 for ..." warning a real
Debian host would get. Torch is off here (10.x torch from AMD's index: test_amd_torch.py)."""

from __future__ import annotations

import re
import sys

import pytest

from e2e.support import (
    audit,
    changed,
    deploy,
    host_line,
    inventory_with,
    refusal,
    running_lab,
    sh,
    succeeded,
)
from lab import HostSpec
from rocm_fleet.model import apu, gpu_targets, paths

pytestmark = pytest.mark.e2e

HOST = HostSpec("apu", suite="trixie", profile="strixhalo",
                data={"rocm_version": "10.0.0", "expected_gfx": "gfx1151",
                      "expected_gpu_count": 1, "pytorch_install": False})  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    yield from running_lab([HOST], ["10.0.0"])


OPTION = "Set the APU's GTT to 8 GiB (TTM page limit)"
GTT_SYSFS = "cat /sys/bus/pci/devices/*/mem_info_gtt_total"


def check(lab, inventory) -> str:
    result = lab.run(
        [sys.executable, "-m", "rocm_fleet.cli", "check", str(inventory), "--limit", "apu", "-v"],
        env={"COLUMNS": "1000"},  # a line a check, not wrapped
    )  # fmt: skip
    print(result.stdout[-3000:])
    return result


def dry_refusal(lab, inventory) -> str:
    """Why preflight refused the APU host in a ``--dry`` run of ``inventory`` ("" if not;
    its problems joined by "; ")."""
    dry = deploy(lab, limit="apu", dry=True, inventory=inventory)
    print(dry.output[-2000:])
    return refusal(dry, "apu") or ""


def test_a_strix_halo_host_is_named_converges_verifies_and_gets_the_gtt_asked(lab, tmp_path):
    """One test, each step on the host the last left (so it runs alone and in any order)."""
    # One run: its preflight names the GPU, and it converges. (Its second run, changing
    # nothing, is the last run below: the whole node, this package included.)
    result = deploy(lab, limit="apu")
    note = host_line(result, "apu", "warning: gfx1151 at ")
    print(note)
    assert "is the integrated GPU of a Ryzen APU: Ryzen AI Max / Max+ (Strix Halo)" in note
    assert "[1002:1586]" in note and "system memory it shares with the CPU (GTT)" in note
    # amdgpu's mem_info_vram_total / mem_info_gtt_total of the lab's APU (a real Strix
    # Halo's: tests/lab/sysfs.py APU_MEMORY), in GiB
    assert "its VRAM is a 4.0 GiB carve-out of system memory and its GTT 96.0 GiB" in note

    succeeded(result)
    assert changed(result)["Verify | Check rocminfo and torch see the expected GPUs"] == ["apu"]
    out = sh(lab, "apu", "dpkg-query -W -f='${Package} ${Version}\\n' 'amdrocm*'")
    packages = dict(line.split() for line in out.splitlines())
    assert packages["amdrocm10.0-gfx1151"].startswith("10.0.0-"), packages
    assert "amdrocm10.0" not in packages  # the per-target package, not every target's
    agents = sh(lab, "apu", "/opt/rocm/core-10.0/bin/rocminfo")
    assert re.findall(r"^\s+Name:\s+(gfx\w+)\s*$", agents, re.M) == ["gfx1151"]
    assert "Radeon 8060S Graphics" in agents
    assert gpu_targets.gpu_target("gfx1151").family == "ryzen"

    # One --dry run, two refusals (preflight names every problem it finds): more than 90% of
    # the host's MemTotal (this machine's: /proc is the lab host's own), naming the key, the
    # value and the limit; and amdgpu.gttsize in a modprobe.d file of the admin's, the place
    # named. Nothing written.
    too_much = inventory_with(lab, tmp_path / "much.py", {"rocm_apu_gtt_gib": 4096})
    sh(lab, "apu", "mkdir -p /etc/modprobe.d && echo 'options amdgpu gttsize=98304' "
                   "> /etc/modprobe.d/amdgpu-gtt.conf")  # fmt: skip
    reason = dry_refusal(lab, too_much)
    assert "rocm_apu_gtt_gib is 4096 GiB, more than this host's RAM allows: at most " in reason
    assert "amdgpu.gttsize is set in /etc/modprobe.d/amdgpu-gtt.conf:1" in reason
    sh(lab, "apu", "rm /etc/modprobe.d/amdgpu-gtt.conf")
    asked = inventory_with(lab, tmp_path / "asked.py", {"rocm_apu_gtt_gib": 8})

    # Pending: the audit shows the change before it is made (the run's JSON below shows it
    # made; --dry reporting exactly the drift is test_fleet.py's).
    report = audit(lab, inventory=asked)
    (row,) = report.json["hosts"]
    assert any(OPTION in drift for drift in row["drift"]), row

    # Written, no reboot allowed: the host is listed, amdgpu still reports the old GTT, and
    # the check says so.
    run = deploy(lab, limit="apu", inventory=asked)
    succeeded(run)
    assert changed(run)[f"APU memory | {OPTION}"] == ["apu"]
    assert sh(lab, "apu", f"cat {paths.TTM_MODPROBE}") == apu.modprobe_options(8)
    assert "Hosts that need a reboot" in run.output and apu.REBOOT_REASON in run.output
    assert sh(lab, "apu", GTT_SYSFS).split() == [str(96 * 2**30)]
    before = check(lab, asked)
    assert before.returncode == 1 and "a reboot is pending" in before.stdout

    # Reboots allowed: the boot applies it, the check passes, and a second run changes nothing.
    allowed = inventory_with(lab, tmp_path / "allowed.py", {"rocm_apu_gtt_gib": 8,
                                                            "rocm_reboot": "allow"})  # fmt: skip
    run = deploy(lab, limit="apu", inventory=allowed)
    succeeded(run)
    assert lab.boots["apu"][-1].get("ttm pages_limit") == str(apu.pages_limit(8)), lab.boots
    assert sh(lab, "apu", GTT_SYSFS).split() == [str(8 * 2**30)]
    after = check(lab, allowed)
    assert after.returncode == 0, after.stdout[-3000:]
    again = deploy(lab, limit="apu", inventory=allowed)
    succeeded(again)
    assert changed(again) == {}
