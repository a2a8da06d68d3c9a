"""AMD PCI device IDs -> LLVM gfx target, for telling which GPU a host has without a driver.

Preflight reads the PCI devices from sysfs before anything is installed (no amdgpu, no
rocminfo yet), so it needs this table to know that device 0x744c is a gfx1100 card.
When the amdgpu driver is loaded, the KFD topology's ``gfx_target_version`` is the
authority and this table is only used to name the card.

Sources, both read 2026-11:

* device ID -> chip and product names: the PCI ID database, ``pci.ids`` from
  pciutils/pciids (commit 006181e2c5d5, "Version: 2026.05.24"; re-read at c1c12547d626,
  "Version: 2026.08.22", for the MI350P, the Navi 33 IDs, the Hawk Point / Krackan2 iGPUs
  and the RX 9050 name: tests/fixtures/upstream/stored/pci-ids-amd.toml), vendor ``1002``
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

A host without an AMD GPU is told what it has instead (``describe_device``): the vendor,
the device and the class names below are pci.ids' text too (same commit; its "C" class
list and vendor lines), for the vendors whose display devices servers and workstations
carry and NVIDIA's data-centre GPUs, the cards a fleet moving from CUDA has. Any other
device is named by its IDs.
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
    # MI350P: gfx950 in AMD's GPU list (rocm-docs docs/data/gpus.yaml @ 793e0c2e)
    ("0x75a8", "gfx950", "Aqua Vanjaram [Instinct MI350P]"),
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
    ("0x73f0", "gfx1102", "Navi 33 [Radeon RX 7600M XT]"),
    ("0x7481", "gfx1102", "Navi 33 [Steam Machine]"),
    ("0x7487", "gfx1102", "Navi 33 [Radeon Graphics]"),
    ("0x748b", "gfx1102", "Navi 33 [Radeon Graphics]"),
    # gfx1200: Navi 44
    ("0x7590", "gfx1200", "Navi 44 [Radeon RX 9050 / 9060 XT]"),
    # gfx1201: Navi 48
    ("0x7550", "gfx1201", "Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]"),
    ("0x7551", "gfx1201", "Navi 48 [Radeon AI PRO R9700]"),
    # Ryzen APUs' integrated GPUs (PCI class 0x0380 Display controller or 0x0300), named as
    # `lspci -nn` prints pci.ids' text on real hosts (the pci.ids commit above predates them
    # in this table): gfx1151 Strix Halo [1002:1586] (index ids 11168654324, 60474082021),
    # gfx1150 Strix Point [1002:150e] (ids 61467806748, 71109434606), gfx1152 Krackan
    # [1002:1114] (ids 57951517021, 333961495), gfx1103 Phoenix [1002:15bf] (ids 56938988044,
    # 58016835651). Chip -> gfx: LLVM AMDGPUUsage, TheRock RELEASES.md (matrix.GPU_TARGETS).
    ("0x1586", "gfx1151",
     "Strix Halo [Radeon Graphics / Radeon 8050S Graphics / Radeon 8060S Graphics]"),
    ("0x150e", "gfx1150", "Strix [Radeon 880M / 890M]"),
    ("0x1114", "gfx1152", "Krackan [Radeon 840M / 860M Graphics]"),
    ("0x15bf", "gfx1103", "Phoenix1"),
    # Hawk Point and Krackan2 (pci.ids 2026.08.22): gfx from AMD's own device table, ROCm/
    # rocm-systems shared/src/utils.cpp @ 8dd7ed862f0d, kGfxipTable "{ 0x1900, 11, 0, 3 }"
    # (gfx1103) and "{ 0x1902, 11, 5, 3 }" (gfx1153). Phoenix2 0x15c8, HawkPoint2 0x1901 and
    # Granite Ridge 0x13c0 are in no AMD device table read, so they stay unknown here.
    ("0x1900", "gfx1103", "HawkPoint1"),
    ("0x1902", "gfx1153", "Krackan2"),
)
# fmt: on

PCI_DEVICES: dict[str, PciDevice] = {d: PciDevice(d, g, n) for d, g, n in _TABLE}

# pci.ids' vendor 1002: preflight's GPUs are the display and accelerator devices of this
# vendor (facts.gpu.PciGpus reads every vendor's).
AMD_VENDOR = "0x1002"


def lookup(device: str) -> PciDevice | None:
    """The table row for a PCI device ID such as ``0x744C`` or ``744c``."""
    device = device.lower()
    if not device.startswith("0x"):
        device = "0x" + device
    return PCI_DEVICES.get(device)


# PCI class (base class and subclass) -> pci.ids' name, for the classes PciGpus reads.
CLASS_NAMES = {
    "0x0300": "VGA compatible controller",
    "0x0301": "XGA compatible controller",
    "0x0302": "3D controller",
    "0x0380": "Display controller",
    "0x1200": "Processing accelerators",
}

VENDOR_NAMES = {
    AMD_VENDOR: "Advanced Micro Devices, Inc. [AMD/ATI]",
    "0x10de": "NVIDIA Corporation",
    "0x8086": "Intel Corporation",
    "0x1a03": "ASPEED Technology, Inc.",
    "0x102b": "Matrox Electronics Systems Ltd.",
    "0x1af4": "Red Hat, Inc.",
    "0x1b36": "Red Hat, Inc.",
    "0x15ad": "VMware",
    "0x1414": "Microsoft Corporation",
}

# NVIDIA (0x10de) data-centre GPUs, device ID -> pci.ids name.
NVIDIA_DEVICES = {
    "0x1db4": "GV100GL [Tesla V100 PCIe 16GB]",
    "0x1eb8": "TU104GL [Tesla T4]",
    "0x20b0": "GA100 [A100 SXM4 40GB]",
    "0x20b2": "GA100 [A100 SXM4 80GB]",
    "0x20b5": "GA100 [A100 PCIe 80GB]",
    "0x20f1": "GA100 [A100 PCIe 40GB]",
    "0x2321": "GH100 [H100L 94GB]",
    "0x2324": "GH100 [H800]",
    "0x2330": "GH100 [H100 SXM5 80GB]",
    "0x2331": "GH100 [H100 PCIe]",
    "0x2335": "GH100 [H200 SXM 141GB]",
    "0x2342": "GH100 [GH200 120GB / 480GB]",
    "0x26b5": "AD102GL [L40]",
    "0x26b9": "AD102GL [L40S]",
    "0x27b8": "AD104GL [L4]",
    "0x2901": "GB100 [B200]",
}


def describe_device(slot: str, vendor: str, device: str, pci_class: str) -> str:
    """A PCI device as an operator reads it, e.g. ``NVIDIA Corporation 10de:2335 GH100
    [H200 SXM 141GB] (3D controller) at 0000:00:06.0``; unknown names are left out."""
    vendor, device, pci_class = vendor.lower(), device.lower(), pci_class.lower()
    ids = f"{vendor.removeprefix('0x')}:{device.removeprefix('0x')}"
    if vendor == AMD_VENDOR:
        row = lookup(device)
        name = row.name if row else None
    else:
        name = NVIDIA_DEVICES.get(device) if vendor == "0x10de" else None
    class_name = CLASS_NAMES.get(pci_class[:6], f"class {pci_class}")
    words = [VENDOR_NAMES.get(vendor), ids, name, f"({class_name})", f"at {slot}"]
    return " ".join(word for word in words if word)
