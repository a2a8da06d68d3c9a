"""Records of inputs that may be read but not committed: the cells the generator reads, as TOML,
rendered back into the file's form for the same parsers."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rocm_fleet.matrix import device_tables as dt
from rocm_fleet.matrix.amd_tables import csv_section, csv_table
from rocm_fleet.matrix.pytorch_tables import RECORDED_COLUMNS, release_matrix

# The sections of AMD's historical CSV the tool reads (classic_releases, gpu_listed_from).
RECORDED_SECTIONS = ("Operating systems", "GPU / LLVM target", "AMD GPU Driver")


def historical_record(text: str) -> str:
    """The record of AMD's historical CSV: its header and the sections the tool reads."""
    rows, _columns = csv_table(text)
    lines = [f"columns = {dt.dumps(rows[0][1:])}"]
    for title in RECORDED_SECTIONS:
        section = csv_section(rows, title)
        lines += ["", "[[section]]", f"title = {dt.dumps(title)}",
                  f"first_cell = {dt.dumps(section[0][0])}", "rows = ["]  # fmt: skip
        lines += [f"  {dt.dumps(row[1:])}," for row in section]
        lines.append("]")
    return "\n".join(lines) + "\n"


def historical_from_record(text: str) -> str:
    """A record of AMD's historical CSV rendered back into the CSV's form."""
    columns, sections = dt.record(text, "historical CSV", "columns", "section")
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
    return dt.table(list(RECORDED_COLUMNS), rows)


def release_md_from_record(text: str) -> str:
    """A record of RELEASE.md's matrix rendered back into its Markdown table."""
    columns, rows = dt.record(text, "RELEASE.md", "columns", "rows")
    lines = ["## Release Compatibility Matrix", "", "| " + " | ".join(columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]  # fmt: skip
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


RECORD_KINDS = {
    "historical-csv": (historical_record, historical_from_record),
    "pytorch-release": (release_matrix_record, release_md_from_record),
    "pci-ids": (dt.pci_ids_record, dt.pci_ids_from_record),
    "device-info": (dt.device_info_record, dt.device_info_from_record),
    "gfxip-table": (dt.gfxip_record, dt.gfxip_from_record),
}


def input_text(path: Path, kind: str) -> str:
    """An input's text: the file, or a record of it (.toml) rendered back into its form."""
    text = path.read_text()
    if path.suffix == ".toml" and kind in RECORD_KINDS:
        return RECORD_KINDS[kind][1](text)
    return text
