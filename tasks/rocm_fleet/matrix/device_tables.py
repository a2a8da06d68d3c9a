"""AMD's device tables (GPUOpen device_info's kCardInfo, librocdxg's kGfxipTable), pci.ids and
virtualization-support.yaml, read, and the parts of the PCI rows derived from them
(docs/decisions/matrix-data-and-citations.md). Each file can be given whole or as its record
(``*_record`` makes one, ``*_from_record`` renders it back for the same parser)."""

import csv
import io
import json
import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar

from rocm_fleet.matrix.amd_tables import csv_section, csv_table, gpu_products, yaml_families
from rocm_fleet.matrix.inputs import FROM_OVERRIDE, MatrixDataError, cited, stored_entry
from rocm_fleet.matrix.pytorch_tables import RECORDED_COLUMNS, release_matrix

AMD_VENDOR_LINE = "1002  Advanced Micro Devices, Inc. [AMD/ATI]"

# GPUOpen-Tools/device_info DeviceInfo.cpp, a kCardInfo row: {asic, 0xID, 0xREV, generation,
# is_apu, "CAL name", "marketing name"}; the CAL name of a GFX9+ part is its gfx target.
CARD_ROW = re.compile(
    r"\{\s*GDT_\w+,\s*0x([0-9A-Fa-f]{4}),\s*0x([0-9A-Fa-f]{2}),\s*GDT_HW_GENERATION_\w+,\s*"
    r'(?:true|false),\s*"([^"]*)",\s*"([^"]*)"\s*\}'
)
# ROCm librocdxg (rocm-systems shared/src/utils.cpp) kGfxipTable: { 0xID, major, minor, step }.
GFXIP_ROW = re.compile(r"\{\s*0x([0-9A-Fa-f]{4}),\s*(\d+),\s*(\d+),\s*(\d+)\s*\}")
GFX = re.compile(r"gfx[0-9a-f]+")
# pci.ids marks a virtual function's name so: "[Instinct MI300X VF]", "MxGPU", "SRIOV".
VF_WORDS = re.compile(r"\b(VF|MxGPU|SRIOV)\b")
BRANDS = ("radeon", "instinct", "firepro", "amd")
T = TypeVar("T")


def _id(value: str) -> str:
    return f"0x{value.lower()}"


def device_info_rows(text: str) -> list[tuple[str, str, str]]:
    """DeviceInfo.cpp's kCardInfo rows whose CAL name is a gfx target: (ID, revision, gfx)."""
    rows = [(_id(m[1]), _id(m[2]), m[3]) for m in CARD_ROW.finditer(text) if GFX.fullmatch(m[3])]
    if not rows:
        raise MatrixDataError("DeviceInfo.cpp: no kCardInfo row with a gfx target")
    return rows


def device_info(text: str) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(device ID -> gfx, device ID -> its gfx targets where revisions of one ID differ)."""
    targets: dict[str, list[str]] = {}
    for device, _rev, gfx in device_info_rows(text):
        if gfx not in targets.setdefault(device, []):
            targets[device].append(gfx)
    one = {d: t[0] for d, t in targets.items() if len(t) == 1}
    return one, {d: t for d, t in targets.items() if len(t) > 1}


def _gfxip_rows(text: str) -> list[list]:
    """librocdxg's kGfxipTable: [device ID, major, minor, stepping] per row."""
    rows = [[_id(m[1]), int(m[2]), int(m[3]), int(m[4])] for m in GFXIP_ROW.finditer(text)]
    if not rows:
        raise MatrixDataError("kGfxipTable: no { 0xID, major, minor, stepping } row")
    return rows


def gfxip_table(text: str) -> dict[str, str]:
    """librocdxg's kGfxipTable: device ID -> gfx (major, minor, stepping as LLVM names it)."""
    return {device: f"gfx{a}{b}{c:x}" for device, a, b, c in _gfxip_rows(text)}


def sr_iov(text: str, where: str) -> dict[str, list[dict]]:
    """virtualization-support.yaml: product -> its SR-IOV rows, in the file's order."""
    out: dict[str, list[dict]] = {}
    for products in yaml_families(text, where).values():
        for product, rows in (products or {}).items():
            for row in rows or []:
                if not isinstance(row, dict) or "technology" not in row:
                    raise MatrixDataError(f"{where}: {product}: unreadable row {row!r}")
                if row["technology"] != "SR-IOV":
                    continue
                driver = row.get("driver") or {}
                out.setdefault(product, []).append({
                    "hypervisor": row.get("hypervisor"), "host_os": row.get("host_os"),
                    "guest_os": list(row.get("guest_os") or []),
                    "driver": driver.get("name"), "driver_url": driver.get("url"),
                })  # fmt: skip
    return out


def dumps(value: object) -> str:
    """A record's value: a JSON string or list is a TOML basic string or array."""
    return json.dumps(value, ensure_ascii=False)


def table(columns: list[str], rows: list[list]) -> str:
    """A record of one table: its columns and rows."""
    cells = "".join(f"  {dumps(r)},\n" for r in rows)
    return f"columns = {dumps(columns)}\nrows = [\n{cells}]\n"


def record(text: str, what: str, *keys: str) -> Any:
    """A record read (the values of ``keys``, each required, when named)."""
    try:
        data = tomllib.loads(text)
        return [data[k] for k in keys] if keys else data
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as err:
        raise MatrixDataError(f"{what} record: {err}") from None


def device_info_record(text: str) -> str:
    """The record of DeviceInfo.cpp: each kCardInfo row with a gfx target, (ID, rev, gfx)."""
    return table(["device", "revision", "gfx"], [list(r) for r in device_info_rows(text)])


def device_info_from_record(text: str) -> str:
    rows = record(text, "DeviceInfo.cpp").get("rows", [])
    return "\n".join(
        f'{{GDT_RECORDED, {d}, {r}, GDT_HW_GENERATION_RECORDED, false, "{g}", ""}},'
        for d, r, g in rows
    )


def gfxip_record(text: str) -> str:
    """The record of librocdxg's utils.cpp: kGfxipTable's rows (ID, major, minor, stepping)."""
    return table(["device", "major", "minor", "stepping"], _gfxip_rows(text))


def gfxip_from_record(text: str) -> str:
    rows = record(text, "kGfxipTable").get("rows", [])
    return "\n".join(f"  {{ {d}, {a}, {b}, {c} }}," for d, a, b, c in rows)


def pci_ids_record(text: str) -> str:
    """The record of pci.ids: vendor 1002's device lines (ID, name), subsystems left out."""
    return table(["device", "name"], [[d, n] for d, n in pci_amd_devices(text).items()])


def pci_ids_from_record(text: str) -> str:
    rows = record(text, "pci.ids").get("rows", [])
    lines = [AMD_VENDOR_LINE, *(f"\t{d.removeprefix('0x')}  {n}" for d, n in rows)]
    return "\n".join(lines) + "\n"


def products(name: str) -> list[str]:
    """The products in a pci.ids name's brackets, each whole: "Navi 31 [Radeon RX 7900
    XT/7900 XTX]" -> ["Radeon RX 7900 XT", "Radeon RX 7900 XTX"]."""
    match = re.search(r"\[(.*)\]", name)
    if not match:
        return []
    parts = [p.strip() for p in re.split(r"/| / ", match[1]) if p.strip()]
    words = parts[0].split() if parts else []
    lead = next((i for i, w in enumerate(words) if re.search(r"\d", w)), len(words))
    return [p if p.split()[0].lower() in BRANDS else " ".join([*words[:lead], p]) for p in parts]


def product_gfx(name: str, listed: dict[str, T]) -> tuple[str, T] | None:
    """(the product, its value) for the longest of ``listed`` (lower-case, no "AMD ") that a
    product of the pci.ids name is, or starts with ("Instinct MI300X VF"); None if none."""
    found = []
    for product in products(name):
        wanted = product.lower().removeprefix("amd ")
        for known, gfx in listed.items():
            if wanted == known or wanted.startswith(known + " "):
                found.append((len(known), known, gfx))
    if not found:
        return None
    _, known = max((n, k) for n, k, _ in found)
    return known, listed[known]


def is_vf(name: str) -> bool:
    """Whether pci.ids names a virtual function (SR-IOV) of a GPU."""
    return bool(VF_WORDS.search(name))


#: pci.ids' vendor ID of AMD (ATI)
AMD_VENDOR = "1002"


def pci_amd_devices(text: str) -> dict[str, str]:
    """AMD's device IDs ("0x744c") -> pci.ids' name (vendor 1002's device lines)."""
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


# Records of inputs that may be read but not committed (the cells read, as TOML, rendered back
# for the same parsers). The historical CSV's sections read (classic_releases, gpu_listed_from):
RECORDED_SECTIONS = ("Operating systems", "GPU / LLVM target", "AMD GPU Driver")


def historical_record(text: str) -> str:
    """The record of AMD's historical CSV: its header and the sections the tool reads."""
    rows, _columns = csv_table(text)
    lines = [f"columns = {dumps(rows[0][1:])}"]
    for title in RECORDED_SECTIONS:
        section = csv_section(rows, title)
        lines += ["", "[[section]]", f"title = {dumps(title)}",
                  f"first_cell = {dumps(section[0][0])}", "rows = ["]  # fmt: skip
        lines += [f"  {dumps(row[1:])}," for row in section]
        lines.append("]")
    return "\n".join(lines) + "\n"


def historical_from_record(text: str) -> str:
    """A record of AMD's historical CSV rendered back into the CSV's form."""
    columns, sections = record(text, "historical CSV", "columns", "section")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["ROCm Version", *columns])
    for section in sections:
        for number, cells in enumerate(section["rows"]):
            writer.writerow([section["first_cell"] if number == 0 else "", *cells])
        writer.writerow([""] * (len(columns) + 1))
    return out.getvalue()


def release_matrix_record(text: str) -> str:
    """The record of RELEASE.md's Release Compatibility Matrix: the columns the tool reads."""
    rows = [[row.get(c, "") for c in RECORDED_COLUMNS] for row in release_matrix(text)]
    return table(list(RECORDED_COLUMNS), rows)


def release_md_from_record(text: str) -> str:
    """A record of RELEASE.md's matrix rendered back into its Markdown table."""
    columns, rows = record(text, "RELEASE.md", "columns", "rows")
    lines = ["## Release Compatibility Matrix", "", "| " + " | ".join(columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]  # fmt: skip
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


RECORD_KINDS = {
    "historical-csv": (historical_record, historical_from_record),
    "pytorch-release": (release_matrix_record, release_md_from_record),
    "pci-ids": (pci_ids_record, pci_ids_from_record),
    "device-info": (device_info_record, device_info_from_record),
    "gfxip-table": (gfxip_record, gfxip_from_record),
}


def input_text(path: Path, kind: str) -> str:
    """An input's text: the file, or a record of it (.toml) rendered back into its form."""
    text = path.read_text("utf-8")
    if path.suffix == ".toml" and kind in RECORD_KINDS:
        return RECORD_KINDS[kind][1](text)
    return text


# The PCI table (pci_ids.json): pci.ids' AMD devices with the gfx AMD's tables give them, cited
# overrides for the rest, other vendors' devices, the class and vendor names.
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
    pci = pci_amd_devices(input_text(stored / PCI_IDS, "pci-ids"))
    by_id, ambiguous = device_info(input_text(stored / DEVICE_INFO, "device-info"))
    gfxip = gfxip_table(input_text(stored / GFXIP, "gfxip-table"))
    listed = {
        p.lower().removeprefix("amd "): (p, gfx)
        for gfx, families in gpu_products((stored / GPU_LIST).read_text("utf-8")).items()
        for names in families.values()
        for p in names
    }
    sriov = {
        p.lower().removeprefix("amd "): rows
        for p, rows in sr_iov((stored / VIRTUALIZATION).read_text("utf-8"), VIRTUALIZATION).items()
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
            match = product_gfx(pci[device], listed)
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
        if is_vf(name):
            match = product_gfx(name, {p: p for p in sriov})
            row["vf"] = True
            row["sr_iov"] = sriov[match[0]] if match else []
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
