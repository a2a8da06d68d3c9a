"""The PCI table (pci_ids.json): AMD's devices of pci.ids (vendor 1002), the devices of a known
chip the data lacks, and the table's rows from the cited overrides and the stored pci.ids
record, which an override may not contradict."""

from __future__ import annotations

import re
from pathlib import Path

from rocm_fleet.matrix.inputs import FROM_OVERRIDE, MatrixDataError, cited, read_toml

AMD_VENDOR = "1002"


def pci_amd_devices(text: str) -> dict[str, str]:
    """AMD's device IDs ("0x744c") -> pci.ids' name, from the vendor 1002 section's device
    lines (subsystem lines and comments skipped)."""
    out: dict[str, str] = {}
    inside = False
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if not line.startswith("\t"):
            if inside:
                break
            inside = line.startswith(AMD_VENDOR + "  ")
            continue
        if inside and not line.startswith("\t\t"):
            match = re.fullmatch(r"\t([0-9a-f]{4})  (.+)", line)
            if not match:
                raise MatrixDataError(f"pci.ids: vendor {AMD_VENDOR}: unreadable {line!r}")
            out[f"0x{match[1]}"] = match[2]
    if not out:
        raise MatrixDataError(f"pci.ids: no vendor {AMD_VENDOR} section with devices")
    return out


def chip(name: str) -> str:
    """pci.ids' chip of a device name: "Navi 31 [Radeon RX 7900 XT]" -> "Navi 31"."""
    return name.split(" [", 1)[0].strip()


def unknown_pci_devices(listed: dict[str, str], known: dict[str, tuple[str, str]]) -> list[str]:
    """Devices pci.ids lists whose chip is one a known device's (``known``: ID -> (gfx,
    name)) but whose ID isn't known: the gfx comes from the chip they share."""
    gfx_of_chip = {chip(name): gfx for gfx, name in known.values()}
    out = []
    for device, name in listed.items():
        gfx = gfx_of_chip.get(chip(name))
        if device not in known and gfx is not None:
            out.append(f"pci.ids lists {device} {name!r}, a {gfx} chip the data lacks")
    return out


PCI_RECORD = Path("stored") / "pci-ids-amd.toml"


def pci_tables(records: Path, over: dict, overrides: Path) -> dict[str, list[dict]]:
    """Preflight's PCI table: per gfx target its AMD device IDs and names, other vendors'
    devices (``vendor``, no gfx), the vendor and class names, from the overrides; the name
    (and an APU's gfx) of an ID an entry lists as ``recorded`` from the stored pci.ids record,
    which an entry may not contradict."""
    record = read_toml(records / PCI_RECORD)
    named: dict[str, tuple[str, str | None, str]] = {}  # ID -> (name, gfx, where)
    for section in ("new", "renamed", "same_chip", "apu"):
        for device, value in record.get(section, {}).items():
            if device.startswith("0x"):  # not a note
                name = value[-1] if isinstance(value, list) else value  # renamed: [old, new]
                gfx = name.get("gfx") or None if isinstance(name, dict) else None
                name = name["name"] if isinstance(name, dict) else name
                named.setdefault(device, (name, gfx, f"{PCI_RECORD} [{section}]"))
    fields = {"gfx", "vendor", "devices", "recorded"}
    rows: dict[str, dict] = {}
    for entry in cited(over.get("pci_device", []), "pci_device", fields, overrides):
        vendor, gfx = entry.get("vendor", f"0x{AMD_VENDOR}"), entry.get("gfx")
        where = f"{overrides}: [[pci_device]] {gfx or vendor}"
        found = [
            (d, n, FROM_OVERRIDE, entry["source"]) for d, n in entry.get("devices", {}).items()
        ]
        for device in entry.get("recorded", []):
            if device not in named:
                raise MatrixDataError(f"{where}: {device} is not in {PCI_RECORD}")
            name, listed, origin = named[device]
            if listed not in (None, gfx):
                raise MatrixDataError(f"{where}: {device} contradicts {origin} (gfx {listed})")
            cite = f"{entry['source']}; name: {record['source']}"
            found.append(
                (device, name, {"name": origin, "gfx": origin if listed else FROM_OVERRIDE}, cite)
            )
        for device, name, origin, cite in found:
            if device in rows or (origin == FROM_OVERRIDE and device in named):
                raise MatrixDataError(
                    f"{where}: {device} is listed twice, or {PCI_RECORD} names it: list it "
                    "once, as recorded where the record names it"
                )
            rows[device] = {"vendor": vendor, "device": device, "gfx": gfx, "name": name,
                            "from": origin, "source": cite}  # fmt: skip

    def names(section: str, key: str) -> list[dict]:
        entries = cited(over.get(section, []), section, {"names"}, overrides)
        return [{key: k, "name": v, "from": FROM_OVERRIDE, "source": e["source"]}
                for e in entries for k, v in e["names"].items()]  # fmt: skip

    return {"devices": list(rows.values()), "vendors": names("pci_vendor", "vendor"),
            "classes": names("pci_class", "class")}  # fmt: skip
