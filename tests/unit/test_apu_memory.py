"""rocm_apu_gtt_gib: an APU's GTT as the kernel's TTM page limit, in rocm-fleet's modprobe.d
file the way AMD's amd-ttm writes it; refused without an APU, above the host's RAM share, or
beside amdgpu.gttsize or another file's TTM limit; a reboot reason; a second run no change."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest

from rocm_fleet.checks import test_node
from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.system import ApuMemory
from rocm_fleet.model import apu, paths
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.findings import findings
from rocm_fleet.model.host_survey import HostSurvey
from unit.surveys import SurveyHost, changed, digest, fact_key, fresh_survey, plan, script_call

GIB = 2**30
# A Strix Halo with 128 GB: MemTotal as /proc/meminfo prints it with a 4 GiB carve-out
# (kB), and its integrated GPU as PciGpus reads it (tests/fixtures/sysfs/strixhalo).
MEM_TOTAL_KB = 129_898_872
STRIX_HALO = {"slot": "0000:c5:00.0", "vendor": "0x1002", "device": "0x1586",
              "class": "0x038000", "driver": "amdgpu", "vram_total": 4 * GIB,
              "gtt_total": 62 * GIB}  # fmt: skip
RX7900 = {"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x744c",
          "class": "0x030000", "driver": "amdgpu"}  # fmt: skip
DATA = {"rocm_version": "10.1.0", "expected_gfx": "gfx1151", "pytorch_install": False}


def memory(gttsize=(), pages_limit=(), kb=MEM_TOTAL_KB) -> dict:
    return {"mem_total": kb * 1024, "gttsize": list(gttsize), "pages_limit": list(pages_limit)}


def survey(gpu=STRIX_HALO, **apu_memory) -> HostSurvey:
    return fresh_survey("ubuntu-26.04", kernel="7.0.0-22-generic", pci=[gpu],
                        apu_memory=memory(**apu_memory))  # fmt: skip


def problems(gib, gpu=STRIX_HALO, **apu_memory) -> list[str]:
    config = load_config({**DATA, "rocm_apu_gtt_gib": gib} if gib else DATA)
    return apu.findings(config, survey(gpu, **apu_memory)).problems


def test_the_file_is_the_one_line_amds_amd_ttm_writes():
    # AMD's example (rocm-docs rdna3-5.rst): `amd-ttm --set 100` -> 26214400 pages.
    text = apu.modprobe_options(100)
    options = [line for line in text.splitlines() if not line.startswith("#")]
    assert options == ["options ttm pages_limit=26214400"]
    assert apu.gtt_bytes(100) == 100 * GIB
    assert "gttsize" not in text and "page_pool_size" not in text


@pytest.mark.parametrize("bad", ["96", 0, -4, 1.5, "96GB", True])
def test_the_setting_is_a_whole_number_of_gib(bad):
    with pytest.raises(ConfigError) as raised:
        load_config({**DATA, "rocm_apu_gtt_gib": bad}, "node")
    assert "rocm_apu_gtt_gib" in str(raised.value)
    assert load_config({**DATA, "rocm_apu_gtt_gib": 96}).rocm_apu_gtt_gib == 96


def test_more_than_the_rams_share_is_refused_naming_key_value_and_limit():
    # 90% of 123.9 GiB: 111 GiB at most.
    assert apu.limit_gib(MEM_TOTAL_KB * 1024) == 111
    assert problems(111) == []
    (problem,) = problems(112)
    assert problem.startswith("rocm_apu_gtt_gib is 112 GiB, more than this host's RAM allows")
    assert "at most 111 GiB (90% of its MemTotal of 123.9 GiB" in problem
    # and through preflight's rules, the host refused
    config = load_config({**DATA, "rocm_apu_gtt_gib": 128})
    result = findings(config, survey())
    assert result.row is None and any("rocm_apu_gtt_gib is 128 GiB" in p for p in result.problems)


def test_only_on_a_host_with_an_apu():
    (problem,) = problems(16, gpu=RX7900)
    assert "rocm_apu_gtt_gib is 16 but this host has no APU" in problem
    assert problems(None, gpu=RX7900) == []


@pytest.mark.parametrize(
    ("where", "line"),
    [("/proc/cmdline:1", "BOOT_IMAGE=/vmlinuz root=/dev/nvme0n1p2 amdgpu.gttsize=98304"),
     ("/etc/default/grub:6", 'GRUB_CMDLINE_LINUX_DEFAULT="quiet amdgpu.gttsize=98304"'),
     ("/etc/modprobe.d/amdgpu.conf:2", "options amdgpu gttsize=98304")],
)  # fmt: skip
def test_gttsize_anywhere_on_the_host_is_refused_with_where(where, line):
    (problem,) = problems(96, gttsize=[(where, line)])
    assert problem.startswith(f"amdgpu.gttsize is set in {where} ({line}): AMD deprecates it")
    assert problems(None, gttsize=[(where, line)]) == []  # not asked: not rocm-fleet's business


def test_another_files_ttm_limit_is_refused_and_rocm_fleets_own_is_not():
    amd_ttm = ("/etc/modprobe.d/ttm.conf:1", "options ttm pages_limit=26214400")
    (problem,) = problems(96, pages_limit=[amd_ttm])
    assert "already set in /etc/modprobe.d/ttm.conf:1" in problem and "amd-ttm --clear" in problem
    ours = (f"{paths.TTM_MODPROBE}:3", "options ttm pages_limit=16777216")
    assert problems(96, pages_limit=[ours]) == []


def test_gttsize_added_to_rocm_fleets_own_file_is_removed_by_the_write_not_refused():
    edited = apu.modprobe_options(96) + "options amdgpu gttsize=98304\n"
    answers = survey(gttsize=[(f"{paths.TTM_MODPROBE}:4", "options amdgpu gttsize=98304")])
    assert problems(96, gttsize=answers.apu_memory["gttsize"]) == []
    data = {**DATA, "rocm_apu_gtt_gib": 96}
    planned = plan(data, SurveyHost(changed(answers, files={paths.TTM_MODPROBE: digest(edited)})))
    (command,) = planned.find("Set the APU's GTT to 96 GiB").commands
    assert "gttsize" not in script_call(command)[1][1]


def test_the_fact_reads_memtotal_and_where_each_is_set():
    fact = ApuMemory()
    assert "/proc/cmdline" in fact.command() and "/etc/modprobe.d/*.conf" in fact.command()
    grub = 'GRUB_CMDLINE_LINUX_DEFAULT="quiet amdgpu.gttsize=98304"'
    found = fact.process([
        f"mem_total {MEM_TOTAL_KB}",
        f"gttsize /etc/default/grub:6:{grub}",
        "pages_limit /etc/modprobe.d/ttm.conf:1:options ttm pages_limit=26214400",
    ])  # fmt: skip
    assert found == {
        "mem_total": MEM_TOTAL_KB * 1024,
        "gttsize": [("/etc/default/grub:6", grub)],
        "pages_limit": [("/etc/modprobe.d/ttm.conf:1", "options ttm pages_limit=26214400")],
    }
    assert fact.process([]) == ApuMemory.default()


def test_the_plan_writes_the_file_marks_a_reboot_and_a_second_run_changes_nothing():
    data = {**DATA, "rocm_apu_gtt_gib": 96}
    answers = survey()
    first = plan(data, SurveyHost(copy.deepcopy(answers)))
    assert not first.refused
    op = first.find("Set the APU's GTT to 96 GiB")
    (command,) = op.commands
    name, (path, content, reason) = script_call(command)
    assert (name, path, reason) == ("module-options", paths.TTM_MODPROBE, apu.REBOOT_REASON)
    assert "options ttm pages_limit=25165824\n" in content
    # the reboot operation is told why (not allowed by default: the run lists the host)
    assert "APU memory | Set the APU's GTT to 96 GiB (TTM page limit)" in first.changes
    again = plan(data, SurveyHost(changed(answers, files={path: digest(content)})))
    assert not again.find("Set the APU's GTT").meta._maybe_is_change
    # unset again: the file goes, with a reboot reason
    unset = plan(DATA, SurveyHost(changed(answers, files={path: digest(content)})))
    (command,) = unset.find("Remove rocm-fleet's TTM page limit").commands
    assert script_call(command)[1] == [paths.TTM_MODPROBE, "", apu.REBOOT_REASON]


class NodeDouble:
    """What the check reads of a node, as testinfra's host gives it: amdgpu's sysfs files
    (``grep -H .`` lines), rocm-fleet's reboot reasons, the venv and torch's answer."""

    def __init__(self, gtt: dict[str, int], reasons: str = "", torch: list | None = None):
        self.gtt, self.reasons, self.torch = gtt, reasons, torch

    def run(self, command: str, *args: str) -> SimpleNamespace:
        if command.startswith("grep -H . /sys/bus/pci/devices/"):
            lines = [
                f"/sys/bus/pci/devices/{s}/mem_info_gtt_total:{n}" for s, n in self.gtt.items()
            ]
            return SimpleNamespace(stdout="\n".join(lines) + "\n")
        assert (command, args) == ("cat %s", (paths.REBOOT_REASONS,))
        return SimpleNamespace(stdout=self.reasons)

    def file(self, path: str) -> SimpleNamespace:
        return SimpleNamespace(exists=self.torch is not None)

    def check_output(self, command: str, python: str, probe: str) -> str:
        assert probe == test_node.TORCH_MEMORY_PROBE
        return json.dumps(self.torch)


def check(node_data: dict, host: NodeDouble) -> None:
    test_node.test_apu_gtt_is_the_size_asked(host, load_config(node_data))


def test_the_check_compares_amdgpus_gtt_and_torchs_memory_with_what_was_asked():
    asked = {**DATA, "rocm_apu_gtt_gib": 96, "pytorch_install": True}
    slot = STRIX_HALO["slot"]
    check(asked, NodeDouble({slot: 96 * GIB}, torch=[["gfx1151", 96 * GIB + 4 * GIB]]))
    # before the reboot amdgpu still reports the old limit: failed, saying a reboot is pending
    with pytest.raises(AssertionError) as old:
        check(asked, NodeDouble({slot: 62 * GIB}, reasons=apu.REBOOT_REASON + "\n"))
    assert f"amdgpu reports GTT {{'{slot}': {62 * GIB}}}" in str(old.value)
    assert "a reboot is pending" in str(old.value)
    # torch seeing a fraction of it (ROCm/ROCm 5444's symptom) fails
    with pytest.raises(AssertionError) as fraction:
        check(asked, NodeDouble({slot: 96 * GIB}, torch=[["gfx1151", 31 * GIB]]))
    assert f"torch sees {31 * GIB} bytes on gfx1151, less than the {96 * GIB} asked" in str(
        fraction.value
    )
    # not asked: nothing to compare
    with pytest.raises(pytest.skip.Exception):
        check(DATA, NodeDouble({slot: 62 * GIB}))


def test_rocm_state_absent_removes_the_file_whatever_the_setting():
    data = {**DATA, "rocm_apu_gtt_gib": 96, "rocm_state": "absent"}
    # the removal reads fact by fact (no preflight survey)
    host = SurveyHost(HostSurvey(), other={
        fact_key(FileDigest, path=paths.TTM_MODPROBE): digest(apu.modprobe_options(96)),
        InstalledPackages: {}, DpkgInterrupted: [],
    })  # fmt: skip
    (command,) = plan(data, host).find("Remove rocm-fleet's TTM").commands
    assert script_call(command)[1] == [paths.TTM_MODPROBE, "", apu.REBOOT_REASON]
