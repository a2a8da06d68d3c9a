"""AMD's device tables (GPUOpen device_info's kCardInfo, librocdxg's kGfxipTable), pci.ids and
virtualization-support.yaml, read, and the parts of the PCI rows derived from them
(docs/decisions/matrix-data-and-citations.md). Each file can be given whole or as its record
(``*_record`` makes one, ``*_from_record`` renders it back for the same parser)."""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any, TypeVar

from rocm_fleet.matrix.inputs import MatrixDataError, read_yaml

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


def gfxip_table(text: str) -> dict[str, str]:
    """librocdxg's kGfxipTable: device ID -> gfx (major, minor, stepping as LLVM names it)."""
    out = {_id(m[1]): f"gfx{m[2]}{m[3]}{int(m[4]):x}" for m in GFXIP_ROW.finditer(text)}
    if not out:
        raise MatrixDataError("kGfxipTable: no { 0xID, major, minor, stepping } row")
    return out


def sr_iov(text: str, where: str) -> dict[str, list[dict]]:
    """virtualization-support.yaml: product -> its SR-IOV rows, in the file's order."""
    data = read_yaml(text, where)
    if not isinstance(data, dict):
        raise MatrixDataError(f"{where}: not a mapping of GPU families")
    out: dict[str, list[dict]] = {}
    for family, products in data.items():
        if str(family).startswith("_"):
            continue
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
    rows = [[_id(m[1]), int(m[2]), int(m[3]), int(m[4])] for m in GFXIP_ROW.finditer(text)]
    if not rows:
        raise MatrixDataError("kGfxipTable: no { 0xID, major, minor, stepping } row")
    return table(["device", "major", "minor", "stepping"], rows)


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
