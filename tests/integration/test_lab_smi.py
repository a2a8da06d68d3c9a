"""The lab's amd-smi double: what it prints for each hardware profile parses with the
product's own parser into healthy GPUs at the lab's sysfs slots, the double script answers
only what it doubles, and set_gpu makes the faults the node check must catch."""

from __future__ import annotations

import json
import subprocess

import pytest

from lab import profiles, smi
from rocm_fleet.model.health import gpu_health
from unit.facts.support import DASH


def double(tmp_path, profile: str):
    smi.write(tmp_path, profile)
    script = tmp_path / "amd-smi"
    script.write_text(smi.AMD_SMI.replace(f"/{smi.DATA_DIR}", str(tmp_path / smi.DATA_DIR)))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([DASH, str(script), *args], capture_output=True, text=True,
                              check=False)  # fmt: skip

    return run


def read(run) -> list:
    return gpu_health(
        run("metric", "--ecc", "--pcie", "--json").stdout,
        run("static", "--json").stdout,
        run("xgmi", "--link-status", "--json").stdout,
    )


@pytest.mark.parametrize("profile", [p for p in profiles.PROFILES if p != "none"])
def test_every_profile_is_healthy_at_its_sysfs_slots(tmp_path, profile):
    gpus = read(double(tmp_path, profile))
    assert len(gpus) == len(profiles.gpus(profile))
    assert [g.bdf for g in gpus] == [f"0000:{0x03 + 0x10 * i:02x}:00.0" for i in range(len(gpus))]
    assert [g.problems() for g in gpus] == [[]] * len(gpus)


def test_instinct_has_xgmi_and_ecc_and_the_apu_nothing(tmp_path):
    (mi300x, *_) = read(double(tmp_path / "a", "mi300x-8"))
    assert mi300x.ecc.uncorrectable == 0 and mi300x.xgmi and mi300x.pcie.width == 16
    (apu, radeon) = read(double(tmp_path / "b", "apu+rx7900xtx"))
    assert (apu.ecc.available, apu.pcie.width, apu.xgmi) == (False, None, None)
    assert (radeon.ecc.available, radeon.pcie.width, radeon.xgmi) == (False, 16, None)


def test_set_gpu_makes_a_fault_and_the_double_refuses_what_it_does_not_double(tmp_path):
    run = double(tmp_path, "mi300x-8")
    smi.set_gpu(tmp_path, 5, pcie={"width": 8}, ecc={"total_uncorrectable_count": 3})
    assert [g.gpu for g in read(run) if g.problems()] == [5]
    assert run("metric").returncode == 2  # human output is not doubled
    assert run("xgmi", "--json").returncode == 2
    smi.write(tmp_path, "none")
    assert json.loads(run("metric", "--json").stdout) == []
