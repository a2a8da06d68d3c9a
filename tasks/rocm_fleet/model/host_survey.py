"""What preflight read from a host in one round trip (a field no read filled is None), its GPUs
as preflight and the audit both read them, and what one of preflight's rules finds (``Found``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from rocm_fleet.model import answers as a
from rocm_fleet.model import gpu_targets
from rocm_fleet.model.boot import BootState
from rocm_fleet.model.pci_ids import AMD_VENDOR, describe_device, lookup
from rocm_fleet.model.slurm import SlurmNodeView

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@dataclass(frozen=True)
class HostSurvey:
    """What a host answered to preflight's survey (each field: the fact that reads it)."""

    distro: a.DistroReleaseDict | None = None  # DistroRelease
    arch: str | None = None  # Architecture
    kernel: str | None = None  # RunningKernel
    identity: a.IdentityDict | None = None  # Identity
    wsl: bool | None = None  # Wsl
    pci: Sequence[a.PciGpu] | None = None  # PciGpus
    kfd: Sequence[a.KfdNode] | None = None  # KfdNodes
    amdgpu: a.AmdgpuModuleDict | None = None  # AmdgpuModule
    apu_memory: a.ApuMemoryDict | None = None  # ApuMemory
    modules: Sequence[str] | None = None  # LoadedModules
    packages: Mapping[str, str] | None = None  # InstalledPackages: name -> version
    nvidia_purge: a.PackagePurgeDict | None = None  # PackagePurge of NVIDIA's packages
    distro_rocm: a.DistroRocmDict | None = None  # DistroRocmPackages
    sources: Sequence[Sequence[str]] | None = None  # AptSourceLines: (path, line)
    rocm_version: str | None = None  # RocmVersion
    secure_boot: a.SecureBootDict | None = None  # SecureBoot
    reboot: a.RebootRequiredDict | None = None  # RebootRequired
    venv: Mapping[str, str] | None = None  # VenvDistributions: name -> version
    torch_build: Mapping[str, str | None] | None = None  # TorchBuildStrings
    disk: Sequence[a.FreeSpaceDict] | None = None  # FreeSpace
    apt: a.InstallSize | None = None  # AptInstallSize
    boot: BootState | None = None  # BootKernels
    groups: a.GroupMembershipDict | None = None  # GroupMembership
    dpkg: Sequence[str] | None = None  # DpkgInterrupted
    mirror: str | None = None  # DebianMirror
    nameservers: Sequence[str] | None = None  # Nameservers
    nginx: bool | None = None  # DaemonRunning of the mirror's nginx
    pull_running: bool | None = None  # LockHeld of the pull's lock
    pull_status: a.LastPull | None = None  # PullStatus
    held_packages: Sequence[str] | None = None  # HeldPackages: dpkg's hold selections
    slurm_node: SlurmNodeView | None = None  # SlurmNode (only with rocm_slurm_gres)
    # Read once per path: path -> the fact's answer.
    files: Mapping[str, a.FileDigestDict | None] = field(default_factory=dict)  # FileDigest
    directories: Mapping[str, bool] = field(default_factory=dict)  # DirectoryExists
    keyrings: Mapping[str, list[str] | None] = field(default_factory=dict)  # KeyringFingerprints
    ledgers: Mapping[str, list[str]] = field(default_factory=dict)  # Ledger
    mok: Mapping[str, a.MokKeyStateDict] = field(default_factory=dict)  # MokKeyState
    mok_pending: Mapping[str, a.MokPendingDict | None] = field(default_factory=dict)  # MokPending
    writable_by_others: Mapping[str, str | None] = field(default_factory=dict)  # WritableByOthers


#: The fields read once per path: a read of one names the path in its ``path`` argument.
PER_PATH = frozenset(f.name for f in fields(HostSurvey) if f.default_factory is dict)


@dataclass
class Found:
    """Problems (refusing the host), warnings, and in full the lists messages summarise."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    details: dict[str, list[str]] = field(default_factory=dict)

    def __add__(self, other: Found) -> Found:
        return Found(
            self.problems + other.problems,
            self.warnings + other.warnings,
            {**self.details, **other.details},
        )


# How many names a one-line message lists before "and N more".
LISTED = 5


def listed(names: list[str], what: str) -> str:
    """``names`` for one line: up to LISTED, then "and N more <what>"."""
    if len(names) <= LISTED:
        return ", ".join(names)
    return f"{', '.join(names[:LISTED])} and {len(names) - LISTED} more {what}"


def amd_pci(survey: HostSurvey) -> list[dict[str, Any]]:
    """The survey's PCI display and accelerator devices that are AMD's."""
    return [gpu for gpu in survey.pci or [] if gpu.get("vendor") == AMD_VENDOR]


def other_pci(survey: HostSurvey) -> list[str]:
    """The survey's display and accelerator devices of other vendors, described."""
    return [
        describe_device(gpu["slot"], gpu["vendor"], gpu["device"], gpu["class"])
        for gpu in survey.pci or []
        if gpu.get("vendor") != AMD_VENDOR
    ]


def gpus_found(survey: HostSurvey) -> list[dict[str, Any]]:
    """AMD GPUs: KFD nodes when amdgpu is loaded, else PCI devices by the PCI-ID table. Each:
    slot, device, gfx (None: unknown), name, apu, vram_total, gtt_total (bytes or None)."""
    pci = {gpu["slot"]: gpu for gpu in amd_pci(survey)}
    if survey.kfd:
        seen = [(n.get("slot"), n.get("device_id"), n["gfx"]) for n in survey.kfd]
    else:  # gfx from the table
        seen = [(slot, g["device"], None) for slot, g in pci.items()]
    found = []
    for slot, device, gfx in seen:
        row = lookup(device) if device else None
        gfx = gfx if survey.kfd else (row.gfx if row else None)
        target, memory = gpu_targets.gpu_target(gfx or ""), pci.get(slot or "") or {}
        found.append({
            "slot": slot, "device": device, "gfx": gfx, "name": row.name if row else None,
            "apu": target is not None and target.family == "ryzen",
            "vram_total": memory.get("vram_total"), "gtt_total": memory.get("gtt_total"),
        })  # fmt: skip
    return found


def gib(size: int | None) -> str:
    """Bytes as GiB for a person, e.g. 103079215104 -> "96.0 GiB"; "?" when unknown."""
    return "?" if size is None else f"{size / 2**30:.1f} GiB"


def apu_memory(gpu: dict[str, Any]) -> str:
    """What an APU's GPU memory is, e.g. "APU: 4.0 GiB VRAM carve-out, 96.0 GiB GTT"."""
    if gpu.get("vram_total") is None and gpu.get("gtt_total") is None:
        return "APU: memory not read (amdgpu not bound)"
    return f"APU: {gib(gpu.get('vram_total'))} VRAM carve-out, {gib(gpu.get('gtt_total'))} GTT"


def describe_gpus(found: list[dict[str, Any]]) -> str:
    counts = Counter(
        f"{label} ({apu_memory(gpu)})" if gpu.get("apu") else label
        for gpu in found
        if (label := gpu["gfx"] or f"unknown AMD device {gpu['device']}")
    )
    return ", ".join(f"{n} x {label}" for label, n in counts.items()) or "no AMD GPU"


def gpu_mismatch(
    config: Config, found: list[dict[str, Any]], others: list[str] | None = None
) -> str | None:
    """What is wrong with the GPUs against expected_gfx / expected_gpu_count, or None;
    ``others`` describes the display and accelerator devices of other vendors."""
    expected_count, expected_gfx = config.expected_gpu_count, config.expected_gfx_list
    if expected_count == 0:
        return None
    found_text = describe_gpus(found)
    if not found:
        instead = (
            f"found instead: {'; '.join(others)}"
            if others
            else "nor any other display or accelerator device"
        )
        return (
            "no AMD GPU found (no PCI device of vendor 0x1002 with a display or "
            f"processing-accelerator class; {instead}): seat the card, or set "
            "expected_gpu_count: 0 for a GPU-less host (CI runner, image builder)"
        )
    matching = [g for g in found if g["gfx"] in expected_gfx] if expected_gfx else found
    wanted = "/".join(expected_gfx) if expected_gfx else "AMD GPU"
    if expected_gfx and not matching:
        return (
            f"expected {expected_count or 'at least 1'} x {wanted}, found {found_text}: "
            "correct expected_gfx in the inventory or check the host's cards"
        )
    if expected_count is not None and len(matching) != expected_count:
        fewer = "too few GPUs" if len(matching) < expected_count else "more GPUs than expected"
        return (
            f"{fewer}: expected {expected_count} x {wanted}, found {len(matching)} "
            f"({found_text}): correct expected_gpu_count or check that every card is seated "
            "and enabled in the firmware"
        )
    return None


def apu_note(gpu: dict[str, Any], target: gpu_targets.GpuTarget) -> str:
    """Preflight's note on a Ryzen APU's integrated GPU."""
    pci = f" [1002:{gpu['device'].removeprefix('0x')}]" if gpu.get("device") else ""
    if gpu.get("vram_total") is None and gpu.get("gtt_total") is None:
        memory = "it has no VRAM of its own (a small carve-out)"
    else:
        memory = (
            f"its VRAM is a {gib(gpu.get('vram_total'))} carve-out of system memory and its "
            f"GTT {gib(gpu.get('gtt_total'))}"
        )
    return (
        f"{gpu['gfx']} at {gpu.get('slot') or '?'} is the integrated GPU of a Ryzen APU: "
        f"{target.products}{pci}; {memory}: it computes in system memory it shares with "
        "the CPU (GTT), so its usable memory is the host's; AMD lists Ryzen APUs for the "
        "ROCm Core SDK on Ubuntu 26.04 and 24.04.4 (OEM 6.17 kernel) only"
    )


def vf_note(gpu: dict[str, Any], distro_key: str | None) -> str | None:
    """Preflight's note on a GPU that is an SR-IOV virtual function (a VM's GPU), else None."""
    row = lookup(gpu["device"]) if gpu.get("device") else None
    if row is None or not row.vf:
        return None
    pci = f"1002:{row.device.removeprefix('0x')} at {gpu.get('slot') or '?'}"
    what = f"{pci} is an SR-IOV virtual function (this host is a VM guest): {row.name}, {row.gfx}"
    if not row.sr_iov:
        return f"{what}; AMD's virtualization data lists no SR-IOV guest for it: unofficial"
    guests = ", ".join(row.guest_os)
    hosts = "; ".join(
        f"{r['hypervisor']} on {r['host_os']}" + (f" with {r['driver']}" if r["driver"] else "")
        for r in row.sr_iov
    )
    listed = distro_key is not None and distro_key in (g.lower() for g in row.guest_os)
    fit = "" if listed or distro_key is None else f"; {distro_key} is not among them: unofficial"
    guest = row.guest or {}
    reads, not_read = ", ".join(guest.get("reads", ())), ", ".join(guest.get("not_read", ()))
    health = f"; in a guest amd-smi reads {reads}, not {not_read}" if row.guest else ""
    return f"{what}; AMD lists guests {guests} ({hosts}){fit}{health}"
