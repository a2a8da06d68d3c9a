"""The GPUs of a hardware profile as sysfs files in a host root: PCI devices and KFD topology.

sshd runs chrooted without a sysfs mount, so `/sys` in a lab root is a plain directory and
these files are what the deploy's PCI and KFD facts read (`PciGpus`, `KfdNodes`,
`NodeSurvey`). Per GPU of the profile: `/sys/bus/pci/devices/<slot>/{vendor,device,class}`
with a `driver` link to amdgpu, and a KFD node `/sys/class/kfd/kfd/topology/nodes/<n>/
properties` (node 0 is the CPU), plus `/sys/module/amdgpu/initstate` = `live`: the driver
is loaded, as on a machine where the distribution's amdgpu has bound the cards.

Values come from the real trees in tests/fixtures/sysfs (see tests/fixtures/README.md): the
RX 7900 XTX node file is the template; device IDs are pci.ids' (0x744c Navi 31 RX 7900 XTX,
0x7448 Navi 31 PRO W7900, 0x74a1 MI300X with class 0x120000 "processing accelerator",
0x164e Raphael iGPU); gfx_target_version is what rocm_agent_enumerator decodes back to the
profile's gfx (110000 -> gfx1100, 90402 -> gfx942, 100306 -> gfx1036).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from . import profiles
from ._util import REPO_ROOT

FIXTURE_NODE = (
    REPO_ROOT / "tests/fixtures/sysfs/rx7900xtx/class/kfd/kfd/topology/nodes/1/properties"
)
CPU_NODE = REPO_ROOT / "tests/fixtures/sysfs/rx7900xtx/class/kfd/kfd/topology/nodes/0/properties"

#: marketing name -> (PCI device id, PCI class)
DEVICES = {
    "Radeon RX 7900 XTX": ("0x744c", "0x030000"),
    "AMD Radeon PRO W7900": ("0x7448", "0x030000"),
    "AMD Instinct MI300X": ("0x74a1", "0x120000"),
    "AMD Radeon Graphics": ("0x164e", "0x030000"),
    "AMD Radeon RX 9070 XT": ("0x7550", "0x030000"),  # Navi 48 (model/pci_ids.json)
    # Strix Halo's iGPU: "Display controller [0380] ... [1002:1586]" (lspci -nn on real hosts,
    # tests/fixtures/upstream/gpus.toml)
    "Radeon 8060S Graphics": ("0x1586", "0x038000"),
}
#: gfx_target_version per target (major*10000 + minor*100 + stepping; Strix Halo's 110501,
#: index id 70949645881)
TARGET_VERSIONS = {"gfx1100": 110000, "gfx942": 90402, "gfx1036": 100306, "gfx1201": 120001,
                   "gfx1151": 110501}  # fmt: skip

#: amdgpu's memory totals of an APU's GPU device (mem_info_vram_total, mem_info_gtt_total,
#: bytes: Linux Documentation/gpu/amdgpu/driver-misc.rst), per marketing name. Strix Halo:
#: what a real Ryzen AI MAX+ 395 with 128 GB printed, `cat .../mem_info_gtt_total` 103079215104
#: (96 GiB, GTT raised with ttm.pages_limit) and `.../mem_info_vram_total` 4294967296 (the 4
#: GiB firmware carve-out): noamsto/nix-amd-ai issue #42, 2026-08-27, ASUS ROG Flow Z13 (3p).
#: Discrete cards get none: the deploy only reports memory for APUs.
APU_MEMORY = {"Radeon 8060S Graphics": (4294967296, 103079215104)}

#: ``options ttm ... pages_limit=N`` in a modprobe.d file (modprobe.d(5)).
_TTM_LIMIT = re.compile(r"^\s*options\s+ttm\s+(?:\S+\s+)*?pages_limit=(\d+)(?:\s|$)")
#: TTM's page size on amd64.
PAGE_SIZE = 4096

#: What this module writes under ROOT (removed before each write): sysfs, and each GPU's DRM
#: render node (what Slurm's gres.conf names and slurmd stats); and /dev/kfd (KFD_DEVICE).
OWNED = ("sys/bus/pci", "sys/class/kfd", "sys/module/amdgpu", "dev/dri")
#: The DRM character devices' major number (Linux's devices.txt: 226 = DRI).
DRM_MAJOR = 226
#: /dev/kfd, amdgpu's compute device; its major: the kernel gives amdkfd a dynamic one
#: (register_chrdev(0, ...) in drivers/gpu/drm/amd/amdkfd/kfd_chardev.c); 235 is one real
#: hosts show.
KFD_DEVICE, KFD_MAJOR = "dev/kfd", 235


def _slot(index: int) -> tuple[str, int]:
    bus = 0x03 + 0x10 * index
    return f"0000:{bus:02x}:00.0", bus << 8


def write(root: Path, profile: str) -> None:
    """Replace the host's GPU sysfs files with those of `profile` (none: no AMD device)."""
    for rel in OWNED:
        shutil.rmtree(root / rel, ignore_errors=True)
    (root / KFD_DEVICE).unlink(missing_ok=True)
    gpus = profiles.gpus(profile)
    sys = root / "sys"
    drivers = sys / "bus/pci/drivers/amdgpu"
    drivers.mkdir(parents=True, exist_ok=True)
    (sys / "bus/pci/devices").mkdir(parents=True, exist_ok=True)
    if not gpus:
        return
    nodes = sys / "class/kfd/kfd/topology/nodes"
    (nodes / "0").mkdir(parents=True)
    (nodes / "0/properties").write_text(CPU_NODE.read_text())
    template = FIXTURE_NODE.read_text().splitlines()
    for i, gpu in enumerate(gpus):
        device, pci_class = DEVICES[gpu.name]
        slot, location = _slot(i)
        path = sys / "bus/pci/devices" / slot
        path.mkdir(parents=True)
        (path / "vendor").write_text("0x1002\n")
        (path / "device").write_text(device + "\n")
        (path / "class").write_text(pci_class + "\n")
        (path / "driver").symlink_to("../../drivers/amdgpu")
        if gpu.name in APU_MEMORY:
            vram, gtt = APU_MEMORY[gpu.name]
            (path / "mem_info_vram_total").write_text(f"{vram}\n")
            (path / "mem_info_gtt_total").write_text(f"{gtt}\n")
        values = {
            "gfx_target_version": TARGET_VERSIONS[gpu.gfx],
            "device_id": int(device, 16),
            "location_id": location,
            "drm_render_minor": 128 + i,
        }
        lines = []
        for line in template:
            key = line.split(" ", 1)[0]
            lines.append(f"{key} {values[key]}" if key in values else line)
        (nodes / str(i + 1)).mkdir()
        (nodes / str(i + 1) / "properties").write_text("\n".join(lines) + "\n")
        dri = root / "dev/dri"
        dri.mkdir(parents=True, exist_ok=True)
        minor = values["drm_render_minor"]
        os.mknod(dri / f"renderD{minor}", stat.S_IFCHR | 0o660, os.makedev(DRM_MAJOR, minor))
    module = sys / "module/amdgpu"
    module.mkdir(parents=True)
    (module / "initstate").write_text("live\n")
    # the driver's devices as the kernel links them (module/amdgpu/drivers/pci:amdgpu ->
    # bus/pci/drivers/amdgpu, one link per bound device, its drm/ children): what AMD's
    # container toolkit enumerates (ROCm/container-toolkit internal/amdgpu/amdgpu.go)
    (module / "drivers").mkdir()
    (module / "drivers/pci:amdgpu").symlink_to("../../../bus/pci/drivers/amdgpu")
    for i in range(len(gpus)):
        slot, _ = _slot(i)
        (drivers / slot).symlink_to(f"../../devices/{slot}")
        (sys / "bus/pci/devices" / slot / "drm" / f"renderD{128 + i}").mkdir(parents=True)
    # amdkfd's one device node, mode 0660 like the render nodes (the lab runs no udev)
    os.mknod(root / KFD_DEVICE, stat.S_IFCHR | 0o660, os.makedev(KFD_MAJOR, 0))


def load_ttm(root: Path) -> int | None:
    """What the kernel does at boot with the TTM page limit: modprobe applies
    ``options ttm pages_limit=N`` from /etc/modprobe.d (files in name order, the last
    setting wins) and amdgpu sizes each APU's GTT to those pages' bytes. Without one, the
    APU reports its profile's recorded GTT again. Returns the limit applied (None: none)."""
    limit = None
    for conf in sorted((root / "etc/modprobe.d").glob("*.conf")):
        for line in conf.read_text().splitlines():
            if match := _TTM_LIMIT.match(line):
                limit = int(match.group(1))
    names = {device: name for name, (device, _) in DEVICES.items()}
    for gtt in (root / "sys/bus/pci/devices").glob("*/mem_info_gtt_total"):
        name = names[(gtt.parent / "device").read_text().strip()]
        total = limit * PAGE_SIZE if limit is not None else APU_MEMORY[name][1]
        gtt.write_text(f"{total}\n")
    return limit
