"""An APU's GPU memory (``rocm_apu_gtt_gib``) as the kernel's TTM ``pages_limit``, written as
AMD's ``amd-ttm --set`` writes it (ROCm/rocm-docs system-optimization/rdna3-5.rst @ bc298923;
superm1/amd-debug-tools ttm.py @ baa62a89) to ``paths.TTM_MODPROBE``; pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_fleet.assets import render
from rocm_fleet.model import paths
from rocm_fleet.model.host_survey import Found, HostSurvey, gpus_found

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config

KEY = "rocm_apu_gtt_gib"
GIB = 2**30
PAGE_SIZE = 4096  # amd64's, as TTM and amd-ttm count
RAM_SHARE_PERCENT = 90  # amd-ttm's MAX_MEMORY_PERCENTAGE, above which it asks
REBOOT_REASON = "the TTM page limit (APU GPU memory) changed"


def pages_limit(gib: int) -> int:
    return gib * GIB // PAGE_SIZE


def gtt_bytes(gib: int) -> int:
    """What amdgpu reports as ``mem_info_gtt_total`` under that limit."""
    return pages_limit(gib) * PAGE_SIZE


def modprobe_options(gib: int) -> str:
    """The whole of ``paths.TTM_MODPROBE`` for ``gib`` GiB."""
    return render("rocm-fleet-ttm.conf.j2", key=KEY, gib=gib, pages_limit=pages_limit(int(gib)))


def limit_gib(mem_total: int) -> int:
    """The most whole GiB ``rocm_apu_gtt_gib`` may be on a host with ``mem_total`` bytes."""
    return mem_total * RAM_SHARE_PERCENT // 100 // GIB


def findings(config: Config, survey: HostSurvey) -> Found:
    """Problems with ``rocm_apu_gtt_gib`` on this host: no APU, more than its RAM allows,
    ``amdgpu.gttsize`` set anywhere or the TTM limit set in a file not rocm-fleet's."""
    if (asked := config.rocm_apu_gtt_gib) is None:
        return Found()
    problems = []
    if not any(gpu.get("apu") for gpu in gpus_found(survey)):
        problems.append(
            f"{KEY} is {asked} but this host has no APU's integrated GPU (a Ryzen target): "
            "the TTM limit is only set for APUs; remove the key for this host"
        )
    memory = survey.apu_memory or {}
    if (total := memory.get("mem_total")) is None:
        problems.append(f"{KEY}: could not read MemTotal from /proc/meminfo to check {asked} GiB")
    elif asked > limit_gib(total):
        problems.append(
            f"{KEY} is {asked} GiB, more than this host's RAM allows: at most "
            f"{limit_gib(total)} GiB ({RAM_SHARE_PERCENT}% of its MemTotal of "
            f"{total / GIB:.1f} GiB, as AMD's amd-ttm allows without asking)"
        )
    ours = paths.TTM_MODPROBE  # edited, the deploy writes it whole again
    for where, line in memory.get("gttsize") or []:
        if where.rsplit(":", 1)[0] != ours:
            problems.append(
                f"amdgpu.gttsize is set in {where} ({line.strip()}): AMD deprecates it and it "
                f"conflicts with the TTM limit {KEY} sets; remove it there (after "
                f"{paths.DEFAULT_GRUB}: update-grub and a reboot)"
            )
    for where, line in memory.get("pages_limit") or []:
        if where.rsplit(":", 1)[0] != ours:
            problems.append(
                f"the TTM limit is already set in {where} ({line.strip()}), not by rocm-fleet: "
                f"remove that line (or `amd-ttm --clear`) and let {KEY} set it"
            )
    return Found(problems)
