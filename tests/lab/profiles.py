"""Hardware profiles: which AMD GPUs a lab host pretends to have.

The profile is the single source of truth for all GPU doubles in a host (the fake
rocminfo from the AMD repo double, the torch double from the PyTorch double): both read
PROFILE_PATH inside the host, one GPU per line `gfx|marketing name|uuid|gcnArchName`.
An empty file means "no AMD GPU", which is how a CPU-only host looks to the deploy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Path inside a host root; both the rocminfo and the torch doubles read it.
PROFILE_PATH = "etc/rocm-fleet-lab/gpus"


@dataclass(frozen=True)
class Gpu:
    gfx: str  #: LLVM target as rocminfo's agent Name, e.g. "gfx1100"
    name: str  #: marketing name, e.g. "Radeon RX 7900 XTX"
    uuid: str  #: rocminfo Uuid, e.g. "GPU-b54ca445df90862b"
    arch: str  #: torch gcnArchName / ISA suffix, e.g. "gfx942:sramecc+:xnack-"

    def line(self) -> str:
        return f"{self.gfx}|{self.name}|{self.uuid}|{self.arch}"


def _mi300x(i: int) -> Gpu:
    return Gpu("gfx942", "AMD Instinct MI300X", f"GPU-2f1d{i:012x}", "gfx942:sramecc+:xnack-")


PROFILES: dict[str, tuple[Gpu, ...]] = {
    "none": (),
    "rx7900xtx": (Gpu("gfx1100", "Radeon RX 7900 XTX", "GPU-b54ca445df90862b", "gfx1100"),),
    "w7900": (Gpu("gfx1100", "AMD Radeon PRO W7900", "GPU-7c3e9a01d2f4b865", "gfx1100"),),
    "mi300x-8": tuple(_mi300x(i) for i in range(8)),
    # the same server with four of its GPUs pulled (an RMA): a card swap that changes the count
    "mi300x-4": tuple(_mi300x(i) for i in range(4)),
    # RDNA4: the inbox amdgpu driver needs a newer kernel than Debian 12's 6.1
    # (tasks/rocm_fleet/model/matrix.py INBOX_MIN_KERNEL).
    "rx9070xt": (Gpu("gfx1201", "AMD Radeon RX 9070 XT", "GPU-4e2a91c07d3b5f18", "gfx1201"),),
    # An APU's iGPU is enumerated (and visible to torch) next to the discrete card; the
    # deploy must not pick gfx1036 as "the" GPU.  Real iGPUs report Uuid GPU-XX.
    # A Ryzen AI Max+ 395 (Strix Halo) mini PC: one integrated GPU, gfx1151, as its real
    # rocminfo prints it (Name gfx1151, Uuid GPU-XX, Marketing Name "Radeon 8060S Graphics";
    # index ids 56824215310, 52625323941) and PCI 1002:1586, class 0x0380 (sysfs.py).
    "strixhalo": (Gpu("gfx1151", "Radeon 8060S Graphics", "GPU-XX", "gfx1151"),),
    "apu+rx7900xtx": (
        Gpu("gfx1036", "AMD Radeon Graphics", "GPU-XX", "gfx1036"),
        Gpu("gfx1100", "Radeon RX 7900 XTX", "GPU-b54ca445df90862b", "gfx1100"),
    ),
}


def gpus(profile: str) -> tuple[Gpu, ...]:
    try:
        return PROFILES[profile]
    except KeyError:
        raise KeyError(f"unknown GPU profile {profile!r}; known: {', '.join(PROFILES)}") from None


def render(profile: str) -> str:
    """The profile file's content (empty for "none")."""
    return "".join(g.line() + "\n" for g in gpus(profile))


def write(root: Path, profile: str) -> None:
    """Install a profile into a host root (takes effect on the next rocminfo/torch call)."""
    path = root / PROFILE_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render(profile))
    tmp.chmod(0o644)
    tmp.replace(path)
    from . import rvs, smi, sysfs  # the same GPUs as PCI devices, KFD nodes, amd-smi, RVS

    sysfs.write(root, profile)
    smi.write(root, profile)
    rvs.write(root)
