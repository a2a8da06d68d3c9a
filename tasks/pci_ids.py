"""AMD PCI device IDs -> LLVM gfx target, for telling which GPU a host has without a driver.

Preflight reads the PCI devices from sysfs before anything is installed (no amdgpu, no
rocminfo yet), so it needs this table to know that device 0x744c is a gfx1100 card.
When the amdgpu driver is loaded, the KFD topology's ``gfx_target_version`` is the
authority and this table is only used to name the card.

Sources, both read 2026-11:

* device ID -> chip and product names: the PCI ID database, ``pci.ids`` from
  pciutils/pciids (commit 006181e2c5d5, "Version: 2026.05.24"), vendor ``1002``
  ("Advanced Micro Devices, Inc. [AMD/ATI]"). The names below are its text.
* chip -> gfx target: the "Processors" table of LLVM's AMDGPU backend documentation
  (https://llvm.org/docs/AMDGPUUsage.html#processors), which lists each gfx target with
  its chips and products (gfx906 Vega 20, gfx908 Arcturus, gfx90a Aldebaran, gfx942 Aqua
  Vanjaram / MI300, gfx950 MI350, gfx1030 Navi 21, gfx1036 Raphael, gfx1100 Navi 31,
  gfx1101 Navi 32, gfx1102 Navi 33, gfx1200 Navi 44, gfx1201 Navi 48), and ROCm's
  "Accelerator and GPU hardware specifications" page
  (https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html) for the products.

Only the chips the matrix knows (``tasks.matrix.GPU_TARGETS``) are listed, with every
device ID pci.ids gives them (virtual functions and USB-C controllers left out). Other AMD
devices of a display or accelerator class are reported as "unknown AMD device 0x....".
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PciDevice:
    device: str  # "0x744c"
    gfx: str
    name: str  # pci.ids text


# fmt: off
_TABLE: tuple[tuple[str, str, str], ...] = (
    # gfx906: Vega 20
    ("0x66a0", "gfx906", "Vega 20 [Radeon Pro/Radeon Instinct]"),
    ("0x66a1", "gfx906", "Vega 20 [Radeon Pro VII/Radeon Instinct MI50]"),
    ("0x66a2", "gfx906", "Vega 20"),
    ("0x66a3", "gfx906", "Vega 20 [Radeon Pro Vega II/Radeon Pro Vega II Duo]"),
    ("0x66a7", "gfx906", "Vega 20 [Radeon Pro Vega 20]"),
    ("0x66af", "gfx906", "Vega 20 [Radeon VII]"),
    # gfx908: Arcturus
    ("0x7388", "gfx908", "Arcturus GL-XL"),
    ("0x738c", "gfx908", "Arcturus GL-XL [Instinct MI100]"),
    ("0x738e", "gfx908", "Arcturus GL-XL [Instinct MI100]"),
    # gfx90a: Aldebaran
    ("0x7408", "gfx90a", "Aldebaran/MI200 [Instinct MI250X]"),
    ("0x740c", "gfx90a", "Aldebaran/MI200 [Instinct MI250X/MI250]"),
    ("0x740f", "gfx90a", "Aldebaran/MI200 [Instinct MI210]"),
    # gfx942: Aqua Vanjaram (MI300 series)
    ("0x74a0", "gfx942", "Aqua Vanjaram [Instinct MI300A]"),
    ("0x74a1", "gfx942", "Aqua Vanjaram [Instinct MI300X]"),
    ("0x74a2", "gfx942", "Aqua Vanjaram [Instinct MI308X]"),
    ("0x74a5", "gfx942", "Aqua Vanjaram [Instinct MI325X]"),
    ("0x74a9", "gfx942", "Aqua Vanjaram [Instinct MI300X HF]"),
    ("0x74bd", "gfx942", "Aqua Vanjaram [Instinct MI300X HF]"),
    # gfx950: MI350 series (pci.ids still calls the chip "Aqua Vanjaram")
    ("0x75a0", "gfx950", "Aqua Vanjaram [Instinct MI350X]"),
    ("0x75a3", "gfx950", "Aqua Vanjaram [Instinct MI355X]"),
    # gfx1030: Navi 21
    ("0x73a1", "gfx1030", "Navi 21 [Radeon Pro V620]"),
    ("0x73a2", "gfx1030", "Navi 21 Pro-XTA [Radeon Pro W6900X]"),
    ("0x73a3", "gfx1030", "Navi 21 GL-XL [Radeon PRO W6800]"),
    ("0x73a5", "gfx1030", "Navi 21 [Radeon RX 6950 XT]"),
    ("0x73ab", "gfx1030", "Navi 21 Pro-XLA [Radeon Pro W6800X/Radeon Pro W6800X Duo]"),
    ("0x73af", "gfx1030", "Navi 21 [Radeon RX 6900 XT]"),
    ("0x73bf", "gfx1030", "Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]"),
    # gfx1036: Raphael (Ryzen 7000 integrated graphics)
    ("0x164e", "gfx1036", "Raphael"),
    # gfx1100: Navi 31
    ("0x7448", "gfx1100", "Navi 31 [Radeon Pro W7900]"),
    ("0x7449", "gfx1100", "Navi 31 [Radeon Pro W7800 48GB]"),
    ("0x744a", "gfx1100", "Navi 31 [Radeon Pro W7900 Dual Slot]"),
    ("0x744b", "gfx1100", "Navi 31 [Radeon Pro W7900D]"),
    ("0x744c", "gfx1100", "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]"),
    ("0x745e", "gfx1100", "Navi 31 [Radeon Pro W7800]"),
    # gfx1101: Navi 32
    ("0x7460", "gfx1101", "Navi 32 GL-XL [AMD Radeon PRO V710]"),
    ("0x7461", "gfx1101", "Navi 32 [AMD Radeon PRO V710]"),
    ("0x7470", "gfx1101", "Navi 32 [Radeon PRO W7700]"),
    ("0x747e", "gfx1101", "Navi 32 [Radeon RX 7700 XT / 7800 XT]"),
    # gfx1102: Navi 33
    ("0x7480", "gfx1102", "Navi 33 [Radeon RX 7600/7600 XT/7600M XT/7600S/7700S / PRO W7600]"),
    ("0x7483", "gfx1102", "Navi 33 [Radeon RX 7600M/7600M XT]"),
    ("0x7489", "gfx1102", "Navi 33 [Radeon Pro W7500]"),
    ("0x7499", "gfx1102", "Navi 33 [Radeon RX 7400/7300/Pro W7400]"),
    ("0x749f", "gfx1102", "Navi 33 [Radeon RX 7500]"),
    # gfx1200: Navi 44
    ("0x7590", "gfx1200", "Navi 44 [Radeon RX 9060 XT]"),
    # gfx1201: Navi 48
    ("0x7550", "gfx1201", "Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]"),
    ("0x7551", "gfx1201", "Navi 48 [Radeon AI PRO R9700]"),
)
# fmt: on

PCI_DEVICES: dict[str, PciDevice] = {d: PciDevice(d, g, n) for d, g, n in _TABLE}


def lookup(device: str) -> PciDevice | None:
    """The table row for a PCI device ID such as ``0x744C`` or ``744c``."""
    device = device.lower()
    if not device.startswith("0x"):
        device = "0x" + device
    return PCI_DEVICES.get(device)
