"""PCI device IDs -> LLVM gfx target and names: which GPU a host has before any driver. Rows:
pci_ids.json (``matrix.device_tables``); a virtual function carries AMD's SR-IOV data for it."""

from dataclasses import dataclass

from rocm_fleet.model.upstream_data import PCI_ROWS


@dataclass(frozen=True)
class PciDevice:
    device: str  # "0x744c"
    gfx: str
    name: str  # pci.ids text
    vf: bool = False  # an SR-IOV virtual function
    sr_iov: tuple[dict, ...] = ()  # AMD's SR-IOV rows: hypervisor, host_os, guest_os, driver
    guest: dict | None = None  # what a guest reads of the GPU's health: reads, not_read

    @property
    def guest_os(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(g for row in self.sr_iov for g in row["guest_os"]))


AMD_VENDOR, NVIDIA_VENDOR = "0x1002", "0x10de"
_DEVICES = PCI_ROWS["devices"]
PCI_DEVICES: dict[str, PciDevice] = {
    r["device"]: PciDevice(
        r["device"],
        r["gfx"],
        r["name"],
        r.get("vf", False),
        tuple(r.get("sr_iov", ())),
        r.get("guest"),
    )
    for r in _DEVICES
    if r["vendor"] == AMD_VENDOR
}
# NVIDIA's data-centre GPUs, device ID -> pci.ids name.
NVIDIA_DEVICES = {r["device"]: r["name"] for r in _DEVICES if r["vendor"] == NVIDIA_VENDOR}
# PCI class (base and subclass) -> pci.ids' name.
CLASS_NAMES = {r["class"]: r["name"] for r in PCI_ROWS["classes"]}
VENDOR_NAMES = {r["vendor"]: r["name"] for r in PCI_ROWS["vendors"]}


def lookup(device: str) -> PciDevice | None:
    """The table row for a PCI device ID such as ``0x744C`` or ``744c``."""
    return PCI_DEVICES.get("0x" + device.lower().removeprefix("0x"))


def describe_device(slot: str, vendor: str, device: str, pci_class: str) -> str:
    """A PCI device as an operator reads it, e.g. ``NVIDIA Corporation 10de:2335 GH100
    [H200 SXM 141GB] (3D controller) at 0000:00:06.0``; unknown names are left out."""
    vendor, device, pci_class = vendor.lower(), device.lower(), pci_class.lower()
    ids = f"{vendor.removeprefix('0x')}:{device.removeprefix('0x')}"
    row = lookup(device) if vendor == AMD_VENDOR else None
    name = row.name if row else NVIDIA_DEVICES.get(device) if vendor == NVIDIA_VENDOR else None
    class_name = CLASS_NAMES.get(pci_class[:6], f"class {pci_class}")
    words = [VENDOR_NAMES.get(vendor), ids, name, f"({class_name})", f"at {slot}"]
    return " ".join(word for word in words if word)
