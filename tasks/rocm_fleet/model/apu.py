"""An APU's GPU memory as a setting: the kernel's TTM page limit, the way AMD documents it.

A Ryzen APU's GPU (Strix Halo, gfx1151) has no memory of its own beyond a small firmware
carve-out: what it may map of system memory (GTT) is what the kernel's Translation Table
Manager allows, ``/sys/module/ttm/parameters/pages_limit``, counted in pages. AMD's
"AMD RDNA3.5 system optimization" page (ROCm/rocm-docs
docs/reference/system-optimization/rdna3-5.rst, commit bc298923bbd7ba4dc8fb5f40a8ec2934d958a98c,
"Configuring shared memory limits on Linux") says to raise that limit, keep the BIOS carve-out
small, and reboot; its tool, ``amd-ttm --set <GB>`` (superm1/amd-debug-tools
src/amd_debug/ttm.py, commit baa62a89da88e83d687b13b6765eb0b658c9c37c), writes exactly one line,
``options ttm pages_limit=<GiB * 2**30 / page size>``, to a modprobe.d file and nothing else (no
``page_pool_size``, no ``amdgpu.gttsize``), refuses more than the system's memory and asks
before going over 90% of it. ``rocm_apu_gtt_gib`` writes that line to rocm-fleet's own file
(``paths.TTM_MODPROBE``); the change applies at the next boot (a reboot reason).

``amdgpu.gttsize`` is the older knob: "deprecated and will be removed" (Linux
Documentation/gpu/amdgpu/module-parameters.rst), and set beside the TTM limit the two
disagree about the GTT. So wherever the host sets it (the running kernel's command line,
GRUB's defaults, a modprobe.d file) or sets the TTM limit in a file not rocm-fleet's, the
setting is refused with the place named: rocm-fleet doesn't edit the admin's files. In
rocm-fleet's own file (edited by hand) it is no problem: the deploy writes that file whole,
which removes it.

Pure: ``findings`` judges the survey's ``apu_memory`` answer (``facts.system.ApuMemory``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_fleet.assets import render
from rocm_fleet.model import paths
from rocm_fleet.model.found import Found
from rocm_fleet.model.gpus import gpus_found
from rocm_fleet.model.host_survey import HostSurvey

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config

KEY = "rocm_apu_gtt_gib"
GIB = 2**30
#: TTM counts 4 KiB pages on amd64, the one architecture rocm-fleet deploys (preflight
#: refuses others); amd-ttm divides by the page size the same way.
PAGE_SIZE = 4096
#: The share of MemTotal preflight allows: amd-ttm's MAX_MEMORY_PERCENTAGE, above which AMD's
#: tool warns "This could cause system instability" and asks; a deploy can't ask, so it
#: refuses. The other 10% is what the CPU side keeps when the GPU maps all it may: the kernel,
#: sshd and the job's own process. (MemTotal already excludes the firmware carve-out.)
RAM_SHARE_PERCENT = 90
REBOOT_REASON = "the TTM page limit (APU GPU memory) changed"


def pages_limit(gib: int) -> int:
    """TTM's ``pages_limit`` for ``gib`` GiB."""
    return gib * GIB // PAGE_SIZE


def gtt_bytes(gib: int) -> int:
    """What amdgpu reports as ``mem_info_gtt_total`` under that limit: the pages' bytes."""
    return pages_limit(gib) * PAGE_SIZE


def modprobe_options(gib: int) -> str:
    """The whole of ``paths.TTM_MODPROBE`` for ``gib`` GiB (an int: the file's one value can
    only ever be digits)."""
    return render("rocm-fleet-ttm.conf.j2", key=KEY, gib=gib, pages_limit=pages_limit(int(gib)))


def limit_gib(mem_total: int) -> int:
    """The most whole GiB ``rocm_apu_gtt_gib`` may be on a host with ``mem_total`` bytes."""
    return mem_total * RAM_SHARE_PERCENT // 100 // GIB


def findings(config: Config, survey: HostSurvey) -> Found:
    """Problems with ``rocm_apu_gtt_gib`` on this host: no APU, more than its RAM allows,
    ``amdgpu.gttsize`` set anywhere or the TTM limit set in a file not rocm-fleet's."""
    asked = config.rocm_apu_gtt_gib
    if asked is None:
        return Found()
    problems = []
    if not any(gpu.get("apu") for gpu in gpus_found(survey)):
        problems.append(
            f"{KEY} is {asked} but this host has no APU's integrated GPU (a Ryzen target): "
            "the TTM limit is only set for APUs; remove the key for this host"
        )
    memory = survey.apu_memory or {}
    total = memory.get("mem_total")
    if total is None:
        problems.append(f"{KEY}: could not read MemTotal from /proc/meminfo to check {asked} GiB")
    elif asked > limit_gib(total):
        problems.append(
            f"{KEY} is {asked} GiB, more than this host's RAM allows: at most "
            f"{limit_gib(total)} GiB ({RAM_SHARE_PERCENT}% of its MemTotal of "
            f"{total / GIB:.1f} GiB, as AMD's amd-ttm allows without asking)"
        )
    for where, line in memory.get("gttsize") or []:
        if _ours(where):
            continue  # rocm-fleet's own file, edited: the deploy writes it whole again
        problems.append(
            f"amdgpu.gttsize is set in {where} ({line.strip()}): AMD deprecates it and it "
            f"conflicts with the TTM limit {KEY} sets; remove it there (after "
            f"{paths.DEFAULT_GRUB}: update-grub and a reboot)"
        )
    for where, line in memory.get("pages_limit") or []:
        if not _ours(where):
            problems.append(
                f"the TTM limit is already set in {where} ({line.strip()}), not by rocm-fleet: "
                f"remove that line (or `amd-ttm --clear`) and let {KEY} set it"
            )
    return Found(problems)


def _ours(where: str) -> bool:
    """Whether a "file:line" place is rocm-fleet's own TTM file."""
    return where.rsplit(":", 1)[0] == paths.TTM_MODPROBE
