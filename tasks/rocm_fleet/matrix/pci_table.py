"""The PCI table (pci_ids.json): pci.ids' AMD devices with the gfx AMD's tables give them, cited
overrides for the rest, other vendors' devices, the class and vendor names."""

from __future__ import annotations

from pathlib import Path

from rocm_fleet.matrix import device_tables as tables
from rocm_fleet.matrix.amd_tables import gpu_products
from rocm_fleet.matrix.device_tables import AMD_VENDOR, pci_amd_devices
from rocm_fleet.matrix.inputs import FROM_OVERRIDE, MatrixDataError, cited, stored_entry


def chip(name: str) -> str:
    """pci.ids' chip of a device name: "Navi 31 [Radeon RX 7900 XT]" -> "Navi 31"."""
    return name.split(" [", 1)[0].strip()


def unknown_pci_devices(listed: dict[str, str], known: dict[str, tuple[str, str]]) -> list[str]:
    """A line per device of ``listed`` not in ``known`` (ID -> (gfx, name)) of a known chip."""
    gfx_of_chip = {chip(name): gfx for gfx, name in known.values()}
    out = []
    for device, name in listed.items():
        gfx = gfx_of_chip.get(chip(name))
        if device not in known and gfx is not None:
            out.append(f"pci.ids lists {device} {name!r}, a {gfx} chip the data lacks")
    return out


STORED = Path("stored")
PCI_IDS = "pci-ids-devices.toml"
DEVICE_INFO = "device-info.toml"
GFXIP = "gfxip-table.toml"
GPU_LIST = "gpus.yaml"
VIRTUALIZATION = "virtualization-support.yaml"


def _cite(records: Path, name: str) -> str:
    entry = stored_entry(records, name)
    if not entry.get("cite"):
        raise MatrixDataError(f"{records / STORED / 'SOURCES.toml'}: no cite for {name}")
    return entry["cite"]


def amd_rows(records: Path, guest: dict | None = None) -> tuple[list[dict], dict[str, str]]:
    """(AMD's derived device rows, a VF's with ``guest``; pci.ids' names of AMD's devices)."""
    stored = records / STORED
    pci = pci_amd_devices(tables.pci_ids_from_record((stored / PCI_IDS).read_text("utf-8")))
    by_id, ambiguous = tables.device_info(
        tables.device_info_from_record((stored / DEVICE_INFO).read_text("utf-8"))
    )
    gfxip = tables.gfxip_table(tables.gfxip_from_record((stored / GFXIP).read_text("utf-8")))
    listed = {
        p.lower().removeprefix("amd "): (p, gfx)
        for gfx, families in gpu_products((stored / GPU_LIST).read_text("utf-8")).items()
        for names in families.values()
        for p in names
    }
    sr_iov = {
        p.lower().removeprefix("amd "): rows
        for p, rows in tables.sr_iov(
            (stored / VIRTUALIZATION).read_text("utf-8"), VIRTUALIZATION
        ).items()
    }
    found: dict[str, tuple[str, str, str]] = {}  # ID -> (gfx, from, source)
    for device in pci:
        if device in ambiguous:
            continue  # the KFD decides
        for table, name in ((by_id, DEVICE_INFO), (gfxip, GFXIP)):
            if device in table:
                found[device] = (table[device], str(STORED / name), _cite(records, name))
                break
        else:
            match = tables.product_gfx(pci[device], listed)
            if match:
                product, gfx = match[1]
                cite = f"{_cite(records, GPU_LIST)} ({product})"
                found[device] = (gfx, str(STORED / GPU_LIST), cite)
    chips: dict[str, set[str]] = {}
    for device, (gfx, _, _) in found.items():
        chips.setdefault(chip(pci[device]), set()).add(gfx)
    for device, name in pci.items():
        same = chips.get(chip(name), set())
        if device not in found and device not in ambiguous and len(same) == 1:
            gfx = next(iter(same))
            how = f"the chip {chip(name)!r}: every device of it AMD's tables map is {gfx}"
            found[device] = (gfx, f"{STORED / PCI_IDS} chip", how)
    rows = []
    for device in sorted(found):
        gfx, origin, cite = found[device]
        name = pci[device]
        row = {"vendor": f"0x{AMD_VENDOR}", "device": device, "gfx": gfx, "name": name,
               "from": {"name": str(STORED / PCI_IDS), "gfx": origin},
               "source": f"{cite}; name: {_cite(records, PCI_IDS)}"}  # fmt: skip
        if tables.is_vf(name):
            match = tables.product_gfx(name, {p: p for p in sr_iov})
            row["vf"] = True
            row["sr_iov"] = sr_iov[match[0]] if match else []
            if match:
                row["source"] += f"; SR-IOV: {_cite(records, VIRTUALIZATION)}"
            if guest:
                row["guest"] = {"reads": guest["reads"], "not_read": guest["not_read"]}
                row["source"] += f"; guest: {guest['source']}"
        rows.append(row)
    return rows, pci


def pci_tables(records: Path, over: dict, overrides: Path) -> dict[str, list[dict]]:
    """Preflight's PCI table: ``amd_rows``, the cited overrides' devices, vendor and class names."""
    guests = cited(over.get("pci_vf_guest", []), "pci_vf_guest", {"reads", "not_read"}, overrides)
    if len(guests) > 1:
        raise MatrixDataError(f"{overrides}: [[pci_vf_guest]]: one entry, not {len(guests)}")
    rows, pci = amd_rows(records, guests[0] if guests else None)
    derived = {r["device"] for r in rows}
    fields = {"gfx", "vendor", "devices", "recorded"}
    for entry in cited(over.get("pci_device", []), "pci_device", fields, overrides):
        vendor, gfx = entry.get("vendor", f"0x{AMD_VENDOR}"), entry.get("gfx")
        where = f"{overrides}: [[pci_device]] {gfx or vendor}"
        if vendor == f"0x{AMD_VENDOR}" and entry.get("devices"):
            raise MatrixDataError(
                f"{where}: an AMD device's name comes from pci.ids: list its ID in recorded"
            )
        for device in entry.get("recorded", []):
            if device in derived:
                raise MatrixDataError(f"{where}: AMD's tables map {device}: drop it here")
            if device not in pci:
                raise MatrixDataError(f"{where}: {device} is not in {STORED / PCI_IDS}")
            cite = f"{entry['source']}; name: {_cite(records, PCI_IDS)}"
            rows.append({"vendor": vendor, "device": device, "gfx": gfx, "name": pci[device],
                         "from": {"name": str(STORED / PCI_IDS), "gfx": FROM_OVERRIDE},
                         "source": cite})  # fmt: skip
            derived.add(device)
        for device, name in entry.get("devices", {}).items():
            rows.append({"vendor": vendor, "device": device, "gfx": gfx, "name": name,
                         "from": FROM_OVERRIDE, "source": entry["source"]})  # fmt: skip

    def names(section: str, key: str) -> list[dict]:
        entries = cited(over.get(section, []), section, {"names"}, overrides)
        return [{key: k, "name": v, "from": FROM_OVERRIDE, "source": e["source"]}
                for e in entries for k, v in e["names"].items()]  # fmt: skip

    return {"devices": rows, "vendors": names("pci_vendor", "vendor"),
            "classes": names("pci_class", "class")}  # fmt: skip
