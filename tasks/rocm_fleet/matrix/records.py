"""Records of inputs that may be read but not committed: the cells the generator reads, as TOML,
rendered back into the file's form for the same parsers."""

from __future__ import annotations

import csv
import io
import json
import tomllib
from pathlib import Path

from rocm_fleet.matrix import device_tables
from rocm_fleet.matrix.amd_tables import csv_section, csv_table
from rocm_fleet.matrix.inputs import MatrixDataError
from rocm_fleet.matrix.pytorch_tables import RECORDED_COLUMNS, release_matrix

# The sections of AMD's historical CSV the tool reads (classic_releases, gpu_listed_from).
RECORDED_SECTIONS = ("Operating systems", "GPU / LLVM target", "AMD GPU Driver")


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def _toml_cells(cells: list[str]) -> str:
    return json.dumps(cells, ensure_ascii=False)


def historical_record(text: str) -> str:
    """The record of AMD's historical CSV: its header and the sections the tool reads."""
    rows, _columns = csv_table(text)
    lines = [f"columns = {_toml_cells(rows[0][1:])}"]
    for title in RECORDED_SECTIONS:
        section = csv_section(rows, title)
        lines += ["", "[[section]]", f"title = {_toml_string(title)}",
                  f"first_cell = {_toml_string(section[0][0])}", "rows = ["]  # fmt: skip
        lines += [f"  {_toml_cells(row[1:])}," for row in section]
        lines.append("]")
    return "\n".join(lines) + "\n"


def historical_from_record(text: str) -> str:
    """A record of AMD's historical CSV rendered back into the CSV's form."""
    try:
        record = tomllib.loads(text)
        columns = record["columns"]
        sections = record["section"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as err:
        raise MatrixDataError(f"historical CSV record: {err}") from None
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
    rows = release_matrix(text)
    lines = [f"columns = {_toml_cells(list(RECORDED_COLUMNS))}", "rows = ["]
    lines += [f"  {_toml_cells([row.get(c, '') for c in RECORDED_COLUMNS])}," for row in rows]
    return "\n".join([*lines, "]"]) + "\n"


def release_md_from_record(text: str) -> str:
    """A record of RELEASE.md's matrix rendered back into its Markdown table."""
    try:
        record = tomllib.loads(text)
        columns, rows = record["columns"], record["rows"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as err:
        raise MatrixDataError(f"RELEASE.md record: {err}") from None
    lines = ["## Release Compatibility Matrix", "", "| " + " | ".join(columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]  # fmt: skip
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


RECORD_KINDS = {
    "historical-csv": (historical_record, historical_from_record),
    "pytorch-release": (release_matrix_record, release_md_from_record),
    "pci-ids": (device_tables.pci_ids_record, device_tables.pci_ids_from_record),
    "device-info": (device_tables.device_info_record, device_tables.device_info_from_record),
    "gfxip-table": (device_tables.gfxip_record, device_tables.gfxip_from_record),
}


def input_text(path: Path, kind: str) -> str:
    """An input's text: the file, or a record of it (.toml) rendered back into its form."""
    text = path.read_text()
    if path.suffix == ".toml" and kind in RECORD_KINDS:
        return RECORD_KINDS[kind][1](text)
    return text
