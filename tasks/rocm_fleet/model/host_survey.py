"""What preflight read from a host in one round trip (a field no read filled is None), and what
one of preflight's rules finds (``Found``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

from rocm_fleet.model import answers as a
from rocm_fleet.model.boot import BootState
from rocm_fleet.model.slurm import SlurmNodeView


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
