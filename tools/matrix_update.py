"""Maintainer command: read AMD's and PyTorch's machine-readable data and write the matrix's
upstream data, tasks/rocm_fleet/model/upstream_data.json (read by model/upstream_data.py and
so by model/matrix.py: the release rows, each GPU target's first listing, the Core SDK's
distro listing, each torch minor's stable ROCm).

    python tools/matrix_update.py \\
        --historical-csv compatibility-matrix-historical-6.0.csv \\
        --os-support os-support.yaml --pytorch-release RELEASE.md \\
        [--release-history versions.rst] [--driver-list driver-firmware-support.yaml] \\
        [--gpu-list gpus.yaml] [--pci-ids pci.ids] [--listing rocm6.3=PAGE|URL ...] [--check]

    python tools/matrix_update.py --stored tests/fixtures/upstream/stored --check

reproduces the committed data from the stored copies and records (each input and its
citation from that directory's SOURCES.toml; an input given on the command line wins).
``python tools/matrix_update.py record {historical-csv,pytorch-release} FILE`` prints the
record of a file that may be read but not committed (see "records" below).

Inputs (fetch the current ones from the sources; nothing here goes on the network):

* AMD's ``docs/compatibility/compatibility-matrix-historical-6.0.csv`` (ROCm docs sources,
  ROCm/ROCm): one column per classic release ("7.0.1/7.0.0" for a shared column). Read from
  it: the releases, the Ubuntu and Debian versions of the "Operating systems" rows, the
  "GPU / LLVM target" rows, and the "AMD GPU Driver" row (from 7.0 the newest driver of a
  column is the release's own, listed as AMD's folder names it: 30.30.0 -> amdgpu/30.30).
* AMD's ``docs/data/os-support.yaml`` (ROCm/rocm-docs, the Core SDK's data): per GPU model the
  distros AMD lists. Debian is listed per Instinct model; the models are mapped to gfx targets
  with MODEL_GFX below (hand-kept, cited: the YAML names models, not targets).
* PyTorch's ``RELEASE.md`` (pytorch/pytorch): the "Release Compatibility Matrix" table gives
  the stable ROCm of each torch minor; a release's torch index is the ``rocm<X.Y.Z>`` or
  ``rocm<X.Y>`` that table names.
* AMD's ``docs/release/versions.rst`` (ROCm/rocm-docs, the release history): every release
  with its date. A release it lists that the other inputs don't (from the data's oldest
  release on) is added in the stream and repository of the releases it goes with (the newest
  of the same X.Y, else of the same major: a new Core SDK release needs no override), with no
  driver until an override names one; the dates go to "release_dates".
* AMD's ``docs/data/driver-firmware-support.yaml`` ("amdgpu_drivers": the drivers AMD lists)
  and ``docs/data/gpus.yaml`` ("gpu_products": per gfx target its products by family).
* pci.ids (pciutils/pciids), vendor 1002: reported, not written: AMD devices of a chip the
  product's PCI table (model/pci_ids.py) maps to a gfx target whose ID it lacks.
* Wheel index listings (``--listing rocm6.3=whl-rocm6.3-torch.html`` or the page's https URL,
  ``rocm6.3/torchvision=...`` for another project, ``whl-next=...`` for AMD's index): the
  versions each PEP 503 page lists, per local label ("torch_listed"). Reported: a torch the
  matrix's builds for that label lack (download.pytorch.org labels with the index, +rocm6.3;
  AMD with the release, +rocm10.1.0), and a label no release uses. Read over verified TLS
  with a size cap, or from a saved page.
* ``tools/matrix_overrides.toml`` (hand-kept, every entry cited): what the files above are
  silent on (the Core SDK's releases and drivers, releases absent from AMD's table, an index
  PyTorch builds for a ROCm its table doesn't name). An override may not contradict a value
  the upstream files give; one the files now give anyway is reported as redundant.

``python tools/matrix_update.py tables [--records DIR] [--data-dir DIR] [--check]`` writes
the matrix's other tables (gpu_targets.json, distros.json, kernels.json, torch_builds.json,
repositories.json beside upstream_data.json) from the stored upstream records
(tests/fixtures/upstream/) and the overrides' [[gpu_target]], [[distro]] and kernel
sections, each row with its source (rocm_fleet/offline/matrix_data.py builds, writes and
compares them; ``rocm-fleet matrix update`` runs the same).

The optional inputs not given on a run keep what the committed data has from them. Writes
the data file, or with --check prints, row by row, how the committed one differs, then each
thing upstream publishes that the matrix lacks ("upstream has: ..."); exit 1 when either.
Review that diff: every change is a change of AMD's or PyTorch's published data;
tests/unit/test_upstream_facts.py then names the recorded facts and lab doubles that must
move with it. Needs PyYAML (``pip install pyyaml``, in the dev extra).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import tomllib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import unquote

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tasks" / "rocm_fleet" / "model" / "upstream_data.json"
OVERRIDES = REPO / "tools" / "matrix_overrides.toml"

# Hand-kept overrides, each cited: the Instinct models os-support.yaml lists -> gfx target
# (TheRock RELEASES.md "Supported Python [device-*] install extras": MI355X / MI350X gfx950,
# MI325X / MI300X / MI300A gfx942, MI250X / MI250 / MI210 gfx90a, MI100 gfx908; MI350P is
# an MI350-series gfx950 part: ROCm gpu-arch-specs page, "MI350P" in the 7.14 tables, fact
# sheet §2.3).
MODEL_GFX = {
    "AMD Instinct MI355X": "gfx950",
    "AMD Instinct MI350X": "gfx950",
    "AMD Instinct MI350P": "gfx950",
    "AMD Instinct MI325X": "gfx942",
    "AMD Instinct MI300X": "gfx942",
    "AMD Instinct MI300A": "gfx942",
    "AMD Instinct MI250X": "gfx90a",
    "AMD Instinct MI250": "gfx90a",
    "AMD Instinct MI210": "gfx90a",
    "AMD Instinct MI100": "gfx908",
}
# os-support.yaml's OS names and versions -> the matrix's distro keys.
DISTROS = {("Ubuntu", "26.04"): "ubuntu 26.04", ("Ubuntu", "24.04.4"): "ubuntu 24.04",
           ("Ubuntu", "22.04.5"): "ubuntu 22.04", ("Debian", "13"): "debian 13",
           ("Debian", "12"): "debian 12"}  # fmt: skip
# The distros the matrix knows (model/matrix.py DISTROS), in its order.
MATRIX_DISTROS = ("ubuntu 22.04", "ubuntu 24.04", "ubuntu 26.04", "debian 12", "debian 13")
# The streams, their repositories (model/matrix.py REPOSITORIES) and their order.
STREAMS = ("classic", "core-sdk")
REPOSITORIES = ("repo.radeon.com", "repo.amd.com", "stable.repo.amd.com")

# What each release field was read from, as the data file and docs/supported-releases.md name it.
FROM_TABLE = "AMD compatibility table"
FROM_OS_SUPPORT = "AMD os-support.yaml"
FROM_PYTORCH = "PyTorch RELEASE.md"
FROM_OVERRIDE = "override"
FROM_HISTORY = "AMD versions.rst"
# The inputs every run reads; the others are optional (see build()).
REQUIRED_SOURCES = ("historical_csv", "os_support", "pytorch_release")

GFX = re.compile(r"\bgfx[0-9a-f]+\b")
FOOTNOTE = re.compile(r"\s*\[#[^\]]*\]_")


class UpstreamFormatError(ValueError):
    """An input file isn't in the form this command reads (the message says where)."""


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


# --- AMD's historical compatibility table ------------------------------------------------


def _table(text: str) -> tuple[list[list[str]], list[list[str]]]:
    """(the CSV's rows, per column the releases it names)."""
    rows = list(csv.reader(text.splitlines()))
    if not rows or rows[0][0].strip() != "ROCm Version":
        raise UpstreamFormatError("historical CSV: the first row must start with 'ROCm Version'")
    columns = [[v.strip() for v in cell.split("/")] for cell in rows[0][1:]]
    for versions in columns:
        for version in versions:
            if not re.fullmatch(r"\d+\.\d+\.\d+", version):
                raise UpstreamFormatError(f"historical CSV: {version!r} is not a release version")
    return rows, columns


def _section(rows: list[list[str]], title: str, *, required: bool = True) -> list[list[str]]:
    """The rows of the section whose first cell contains ``title``: its own row and the rows
    after it with an empty first cell, up to a blank row or the next section."""
    start = next((i for i, r in enumerate(rows) if r and title in r[0]), None)
    if start is None:
        if required:
            raise UpstreamFormatError(f"historical CSV: no {title!r} row")
        return []
    out = [rows[start]]
    for row in rows[start + 1 :]:
        if row[0].strip() or not any(c.strip() for c in row):
            break
        out.append(row)
    return out


def _per_release(rows, columns):
    """(release, cell) for each release of each column, for each row."""
    for row in rows:
        for cell, versions in zip(row[1:], columns, strict=False):
            for index, version in enumerate(versions):
                yield row, index, version, cell.strip()


def gpu_listed_from(text: str) -> dict[str, str]:
    """gfx -> the first release whose column of the historical CSV names it."""
    rows, columns = _table(text)
    first: dict[str, str] = {}
    for _row, _i, version, cell in _per_release(_section(rows, "GPU / LLVM target"), columns):
        for gfx in GFX.findall(cell):
            if gfx not in first or _version_key(version) < _version_key(first[gfx]):
                first[gfx] = version
    return dict(sorted(first.items()))


def _distro_keys(cell: str) -> list[str]:
    """ "Ubuntu 22.04.5, 22.04.4" -> ["ubuntu 22.04"]; "Debian 13, 12" -> the two Debians;
    distros the matrix doesn't know (RHEL, SLES, Ubuntu 20.04) -> nothing."""
    # AMD footnotes a cell ("Debian 12 [#single-node-past-60]_" in the 6.3.x columns)
    match = re.match(r"([A-Za-z][A-Za-z ]*?)\s+(\d.*)$", FOOTNOTE.sub("", cell).strip())
    if not match:
        return []
    name, numbers = match.group(1).strip().lower(), match.group(2)
    keys = []
    for number in (n.strip() for n in numbers.split(",")):
        parts = number.split(".")
        key = f"{name} {'.'.join(parts[:2]) if name == 'ubuntu' else parts[0]}"
        if key in MATRIX_DISTROS and key not in keys:
            keys.append(key)
    return keys


def _driver_folder(entry: str) -> str | None:
    """An entry of the "AMD GPU Driver" row as AMD's repository folder names it ("30.30.0"
    -> "30.30": amdgpu-docs conf.py amdgpu_url_version drops a trailing ".0"); None for a
    family ("6.4.x")."""
    entry = FOOTNOTE.sub("", entry).strip()
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", entry):
        return None
    return entry.removesuffix(".0") if entry.count(".") == 2 else entry


def classic_releases(text: str) -> dict[str, dict]:
    """Release -> {distros, gfx, amdgpu_driver} from the historical CSV's columns."""
    rows, columns = _table(text)
    out: dict[str, dict] = {
        v: {"distros": [], "gfx": [], "amdgpu_driver": None} for vs in columns for v in vs
    }
    for _r, _i, version, cell in _per_release(_section(rows, "Operating systems"), columns):
        out[version]["distros"] += [k for k in _distro_keys(cell)
                                    if k not in out[version]["distros"]]  # fmt: skip
    for _r, _i, version, cell in _per_release(_section(rows, "GPU / LLVM target"), columns):
        out[version]["gfx"] += GFX.findall(cell)
    # The driver row lists, newest first, the drivers a release supports; a shared column
    # ("7.0.1/7.0.0") lists its releases' own drivers first in the same order. Before 7.0
    # the driver is versioned with ROCm (amdgpu/<release>): no entry of its own.
    for _r, index, version, cell in _per_release(_section(rows, "AMD GPU Driver"), columns):
        entries = [e for e in cell.split(",") if e.strip()]
        if _version_key(version)[0] >= 7 and index < len(entries):
            out[version]["amdgpu_driver"] = _driver_folder(entries[index])
    for row in out.values():
        row["distros"] = [d for d in MATRIX_DISTROS if d in row["distros"]]
    return out


# --- records of inputs that can be read here but not committed ------------------------
#
# Two inputs reach this project only through a fetched snapshot of a repository or a copy of
# the file in a public index, whose content the project may read but not commit. Their facts
# are committed as records: the cells this tool reads, verbatim, with the file's commit and
# digest (tests/fixtures/upstream/stored/SOURCES.toml). ``matrix_update.py record KIND FILE``
# makes a record from the real file; given a record (a .toml file) in its place, the tool
# renders it back into the file's own form and reads it the same way, so the committed data
# is reproduced from the records by the very parsers that read the real files.

# The sections of AMD's historical CSV the tool reads (classic_releases, gpu_listed_from).
RECORDED_SECTIONS = ("Operating systems", "GPU / LLVM target", "AMD GPU Driver")
# The columns of PyTorch's Release Compatibility Matrix the tool reads (torch_stable_rocm).
RECORDED_COLUMNS = ("PyTorch version", "Stable ROCm")


def _toml_string(value: str) -> str:
    # A JSON string is a TOML basic string (the same escapes: \", \\, \n, \uXXXX).
    return json.dumps(value, ensure_ascii=False)


def _toml_cells(cells: list[str]) -> str:
    return "[" + ", ".join(_toml_string(c) for c in cells) + "]"


def historical_record(text: str) -> str:
    """The record of AMD's historical CSV: its "ROCm Version" row and the rows of the
    sections the tool reads, every cell as the file has it."""
    rows, _columns = _table(text)
    lines = [f"columns = {_toml_cells(rows[0][1:])}"]
    for title in RECORDED_SECTIONS:
        section = _section(rows, title)
        lines += ["", "[[section]]", f"title = {_toml_string(title)}",
                  f"first_cell = {_toml_string(section[0][0])}", "rows = ["]  # fmt: skip
        lines += [f"  {_toml_cells(row[1:])}," for row in section]
        lines.append("]")
    return "\n".join(lines) + "\n"


def historical_from_record(text: str) -> str:
    """A record of AMD's historical CSV rendered back into the CSV's form."""
    import io

    try:
        record = tomllib.loads(text)
        columns = record["columns"]
        sections = record["section"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as err:
        raise UpstreamFormatError(f"historical CSV record: {err}") from None
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["ROCm Version", *columns])
    for section in sections:
        for number, cells in enumerate(section["rows"]):
            writer.writerow([section["first_cell"] if number == 0 else "", *cells])
        writer.writerow([""] * (len(columns) + 1))
    return out.getvalue()


def release_matrix_record(text: str) -> str:
    """The record of RELEASE.md's Release Compatibility Matrix: per row the columns the tool
    reads, as the table has them."""
    rows = _release_matrix(text)
    lines = [f"columns = {_toml_cells(list(RECORDED_COLUMNS))}", "rows = ["]
    lines += [f"  {_toml_cells([row.get(c, '') for c in RECORDED_COLUMNS])}," for row in rows]
    return "\n".join([*lines, "]"]) + "\n"


def release_md_from_record(text: str) -> str:
    """A record of RELEASE.md's matrix rendered back into its Markdown table."""
    try:
        record = tomllib.loads(text)
        columns, rows = record["columns"], record["rows"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as err:
        raise UpstreamFormatError(f"RELEASE.md record: {err}") from None
    lines = ["## Release Compatibility Matrix", "", "| " + " | ".join(columns) + " |",
             "| " + " | ".join("---" for _ in columns) + " |"]  # fmt: skip
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


RECORD_KINDS = {
    "historical-csv": (historical_record, historical_from_record),
    "pytorch-release": (release_matrix_record, release_md_from_record),
}


def input_text(path: Path, kind: str) -> str:
    """An input's text: the file, or a record of it (.toml) rendered back into its form."""
    text = path.read_text()
    if path.suffix == ".toml" and kind in RECORD_KINDS:
        return RECORD_KINDS[kind][1](text)
    return text


# --- AMD's os-support.yaml ---------------------------------------------------------------


def os_support(text: str) -> dict:
    """Per matrix distro: the AMD families listed on it and, where AMD lists it per Instinct
    model (Debian), the models and their gfx targets."""
    import yaml  # the maintainer's tool only; the product doesn't need PyYAML

    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise UpstreamFormatError("os-support.yaml: not a mapping of GPU families")
    families: dict[str, set[str]] = {}
    models: dict[str, list[str]] = {}
    for family, members in data.items():
        if family.startswith("_") or not isinstance(members, dict):
            continue
        for model, systems in members.items():
            if not isinstance(systems, dict):
                continue
            for os_name, entry in systems.items():
                if not isinstance(entry, dict) or "versions" not in entry:
                    continue
                for version in entry["versions"]:
                    number = version.get("version") if isinstance(version, dict) else version
                    key = DISTROS.get((os_name, str(number)))
                    if key is None:
                        continue
                    families.setdefault(key, set()).add(family)
                    if os_name == "Debian":
                        models.setdefault(key, []).append(model)
    debian: dict[str, dict[str, list[str]]] = {}
    for key, names in sorted(models.items()):
        unknown = [m for m in names if m not in MODEL_GFX]
        if unknown:
            raise UpstreamFormatError(
                f"os-support.yaml lists {key} for {', '.join(unknown)}, which MODEL_GFX in "
                "tools/matrix_update.py doesn't map to a gfx target: add it with its source"
            )
        order = list(dict.fromkeys(MODEL_GFX.values()))  # newest target first
        targets = {MODEL_GFX[m] for m in names}
        debian[key] = {"models": names, "gfx": [g for g in order if g in targets]}
    return {
        "families": {k: sorted(v) for k, v in sorted(families.items())},
        "per_model": debian,
    }


# --- PyTorch's RELEASE.md ----------------------------------------------------------------


def _release_matrix(text: str) -> list[dict[str, str]]:
    """The rows of RELEASE.md's Release Compatibility Matrix, each by its column names."""
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if "Release Compatibility Matrix" in line), None
    )
    if start is None:
        raise UpstreamFormatError("RELEASE.md: no 'Release Compatibility Matrix' heading")
    header = None
    rows: list[dict[str, str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= {"-", " ", ":"}:
            continue
        rows.append(dict(zip(header, cells, strict=False)))
    if header is None or not set(RECORDED_COLUMNS) <= set(header):
        raise UpstreamFormatError(
            "RELEASE.md: the matrix table has no 'PyTorch version' or 'Stable ROCm' column"
        )
    return rows


def torch_stable_rocm(text: str) -> dict[str, str]:
    """torch minor -> its stable ROCm, from RELEASE.md's Release Compatibility Matrix."""
    out: dict[str, str] = {}
    for row in _release_matrix(text):
        match = re.fullmatch(r"ROCm ([0-9.]+)", row.get("Stable ROCm", ""))
        if match:
            out[row["PyTorch version"]] = match.group(1)
    return dict(sorted(out.items(), key=lambda kv: _version_key(kv[0]), reverse=True))


def torch_index(version: str, stable: dict[str, str]) -> str | None:
    """The download.pytorch.org index of a ROCm release, where RELEASE.md names one: the
    exact release (6.2.4 -> rocm6.2.4) or its minor (6.4.3 -> rocm6.4)."""
    named = set(stable.values())
    minor = ".".join(version.split(".")[:2])
    for candidate in (version, minor):
        if candidate in named:
            return f"rocm{candidate}"
    return None


# --- AMD's release list: rocm-docs docs/release/versions.rst -----------------------------

# One row of the list-table: "* - `10.1.0 <https://rocm.docs.amd.com/en/docs-10.1.0>`__"
# then "- October 5, 2026" (older rows abbreviate the month: "Apr 16, 2024").
RELEASE_ROW = re.compile(
    r"^\s*\* - `(?P<version>\d+\.\d+\.\d+) <(?P<url>https://[^\s>]+)>`__\s*\n"
    r"\s*- (?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})\s*$",
    re.M,
)


def release_history(text: str) -> dict[str, str]:
    """Release -> its date (ISO), newest first, from AMD's release history. A row the table
    has but this can't read is refused, so a changed format can't drop releases silently."""
    if "Release date" not in text:
        raise UpstreamFormatError("versions.rst: no 'Release date' column")
    out: dict[str, str] = {}
    for match in RELEASE_ROW.finditer(text):
        out[match["version"]] = _iso_date(match["date"], match["version"])
    rows = len(re.findall(r"^\s*\* - `", text, re.M))
    if not out or rows != len(out):
        raise UpstreamFormatError(
            f"versions.rst: read {len(out)} of its {rows} release rows (a row is '* - `X.Y.Z "
            "<url>`__' then '- Month D, YYYY')"
        )
    return dict(sorted(out.items(), key=lambda kv: _version_key(kv[0]), reverse=True))


def _iso_date(text: str, version: str) -> str:
    for form in ("%B %d, %Y", "%b %d, %Y"):
        try:
            return datetime.strptime(text, form).date().isoformat()
        except ValueError:
            continue
    raise UpstreamFormatError(f"versions.rst: release {version}: {text!r} is not a date")


# --- AMD's driver list: rocm-docs docs/data/driver-firmware-support.yaml -----------------


def amd_drivers(text: str) -> dict[str, str]:
    """amdgpu driver version -> its release notes, newest first, from the anchors the file
    defines (``_amdgpu_drivers``: every driver a GPU family's ``linux: amdgpu`` names)."""
    import yaml

    data = yaml.safe_load(text)
    entries = data.get("_amdgpu_drivers") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise UpstreamFormatError("driver-firmware-support.yaml: no '_amdgpu_drivers' list")
    out: dict[str, str] = {}
    for entry in entries:
        version = str(entry.get("version", "")) if isinstance(entry, dict) else ""
        if not re.fullmatch(r"\d+\.\d+\.\d+", version):
            raise UpstreamFormatError(
                f"driver-firmware-support.yaml: _amdgpu_drivers entry {entry!r} has no "
                "'version' X.Y.Z"
            )
        out[version] = str(entry.get("url", ""))
    return dict(sorted(out.items(), key=lambda kv: _version_key(kv[0]), reverse=True))


# --- AMD's GPU list: rocm-docs docs/data/gpus.yaml ---------------------------------------


def gpu_products(text: str) -> dict[str, dict[str, list[str]]]:
    """gfx target -> {family: [products]} from AMD's GPU list (families "AMD Instinct",
    "AMD Radeon", "AMD Ryzen"; each product names its ``gfx``): the tables' reader."""
    from rocm_fleet.offline import matrix_data

    try:
        return dict(sorted(matrix_data.gpu_products(text).items()))
    except matrix_data.MatrixDataError as err:
        raise UpstreamFormatError(str(err)) from None


# --- the PCI ID database: pci.ids, vendor 1002 -------------------------------------------

AMD_VENDOR = "1002"


def pci_amd_devices(text: str) -> dict[str, str]:
    """AMD's device IDs ("0x744c") -> pci.ids' name, from the vendor 1002 section: device
    lines are one tab, the ID, two spaces, the name; subsystem lines (two tabs) and comments
    are skipped; the section ends at the next vendor line."""
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
                raise UpstreamFormatError(f"pci.ids: vendor {AMD_VENDOR}: unreadable {line!r}")
            out[f"0x{match[1]}"] = match[2]
    if not out:
        raise UpstreamFormatError(f"pci.ids: no vendor {AMD_VENDOR} section with devices")
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


# --- wheel index listings (PEP 503 project pages) ----------------------------------------

LISTING_CAP = 8 * 1024 * 1024  # bytes: whl/rocm7.2/torch/ is ~100 KiB; far more is not a listing


def listed_versions(html: str, page_url: str) -> dict[str, list[str]]:
    """A PEP 503 project page (download.pytorch.org's whl/rocmX.Y/torch/, AMD's whl-next
    torch/) -> local label ("rocm6.3", "" for none) -> the public versions of its wheels."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from rocm_fleet.offline.wheels import parse_page

    out: dict[str, set[str]] = {}
    for link in parse_page(html, page_url):
        if not link.filename.endswith(".whl"):
            continue
        try:
            _name, version, _build, _tags = parse_wheel_filename(unquote(link.filename))
        except InvalidWheelFilename as err:
            raise UpstreamFormatError(f"{page_url}: {err}") from None
        out.setdefault(version.local or "", set()).add(version.public)
    return {label: sorted(vs, key=_version_key) for label, vs in sorted(out.items())}


def read_listing(where: str) -> tuple[str, str]:
    """(the page, its URL) from a saved page or an https URL (verified TLS, at most
    LISTING_CAP bytes: the project's own fetcher)."""
    if not where.startswith(("https://", "http://")):
        path = Path(where)
        try:
            return path.read_text(), path.resolve().as_uri()
        except (OSError, UnicodeDecodeError) as err:
            raise UpstreamFormatError(f"listing {where}: {err}") from None
    if not where.startswith("https://"):
        raise UpstreamFormatError(f"{where}: a listing is read over https only")
    from rocm_fleet.offline.download import DownloadError, Fetcher

    fetcher = Fetcher(retries=2, content_cap=LISTING_CAP)
    try:
        return fetcher.content(where).decode(), where
    except (DownloadError, UnicodeDecodeError) as err:
        raise UpstreamFormatError(f"listing {where}: {err}") from None
    finally:
        fetcher.close()


# --- the release rows --------------------------------------------------------------------

OVERRIDE_FIELDS = {"version", "stream", "repository", "amdgpu_driver", "torch_index", "source"}


def load_overrides(text: str) -> list[dict]:
    """The hand-kept overrides; each must say where it comes from (checked as the tables'
    overrides are)."""
    from rocm_fleet.offline import matrix_data

    try:
        entries = tomllib.loads(text).get("release", [])
        choices = {"stream": STREAMS, "repository": REPOSITORIES}
        fields = OVERRIDE_FIELDS - {"source"}
        return matrix_data.cited(entries, "release", fields, "matrix_overrides.toml", choices)
    except tomllib.TOMLDecodeError as err:
        raise UpstreamFormatError(f"matrix_overrides.toml: {err}") from err
    except matrix_data.MatrixDataError as err:
        raise UpstreamFormatError(str(err)) from None


def release_rows(
    table: dict[str, dict],
    support: dict,
    stable: dict[str, str],
    overrides: list[dict],
    history: dict[str, str] | None = None,
) -> tuple[list[dict], list[str]]:
    """(the release rows, notes for the maintainer). Each row names where each of its
    values comes from ("from"): AMD's table, os-support.yaml, RELEASE.md, AMD's release
    history (versions.rst) or an override."""
    rows: dict[str, dict] = {}
    for version, found in table.items():
        rows[version] = {
            "version": version, "stream": "classic", "repository": "repo.radeon.com",
            "distros": found["distros"], "gfx": found["gfx"],
            "amdgpu_driver": found["amdgpu_driver"], "torch_index": None,
            "from": {"row": FROM_TABLE, "amdgpu_driver": FROM_TABLE}, "source": None,
        }  # fmt: skip
    notes: list[str] = []
    for entry in overrides:
        version = entry["version"]
        row = rows.get(version)
        cite = FROM_OVERRIDE
        source = " ".join(entry["source"].split())
        if row is None:
            stream = entry.get("stream", "classic")
            rows[version] = {
                "version": version, "stream": stream,
                "repository": entry.get("repository", "repo.radeon.com"),
                # AMD's table is silent on a release it doesn't list; os-support.yaml is the
                # Core SDK's current listing (AMD publishes no copy per release).
                "distros": [d for d in MATRIX_DISTROS if d in support["families"]]
                if stream == "core-sdk" else None,
                "gfx": None, "amdgpu_driver": entry.get("amdgpu_driver"), "torch_index": None,
                "from": {"row": cite, "amdgpu_driver": cite}, "source": source,
            }  # fmt: skip
            if stream == "core-sdk":
                rows[version]["from"]["distros"] = FROM_OS_SUPPORT
        else:
            filled = "torch_index" in entry  # checked against RELEASE.md below
            for field in ("stream", "repository", "amdgpu_driver"):
                if field not in entry:
                    continue
                if row[field] is None:
                    row[field], row["from"][field] = entry[field], cite
                    filled = True
                elif row[field] == entry[field]:
                    notes.append(
                        f"override of {version} {field} is redundant: {FROM_TABLE} now gives "
                        f"{row[field]!r}; drop it from matrix_overrides.toml"
                    )
                else:
                    raise UpstreamFormatError(
                        f"matrix_overrides.toml: release {version} {field} = {entry[field]!r} "
                        f"contradicts {FROM_TABLE} ({row[field]!r}): overrides only fill what "
                        "upstream is silent on"
                    )
            if not filled:  # AMD's table now lists the release and all it says
                notes.append(
                    f"override of {version} is redundant: {FROM_TABLE} now lists it; drop it "
                    "from matrix_overrides.toml"
                )
                continue
        row = rows[version]
        row["source"] = source
        if "torch_index" in entry:
            row["torch_index"], row["from"]["torch_index"] = entry["torch_index"], cite
    if history is not None:
        notes += _from_history(rows, history, support)
    for row in rows.values():
        index = torch_index(row["version"], stable)
        if index is None:
            row["from"].setdefault("torch_index", f"{FROM_PYTORCH} (names no index for it)")
        elif "torch_index" in row["from"] and row["torch_index"] != index:
            raise UpstreamFormatError(
                f"matrix_overrides.toml: release {row['version']} torch_index = "
                f"{row['torch_index']!r} contradicts {FROM_PYTORCH} ({index!r})"
            )
        elif "torch_index" in row["from"]:
            notes.append(f"override of {row['version']} torch_index is redundant: "
                         f"{FROM_PYTORCH} now gives {index!r}")  # fmt: skip
        else:
            row["torch_index"], row["from"]["torch_index"] = index, FROM_PYTORCH
        if row["amdgpu_driver"] is None:
            row["from"].pop("amdgpu_driver", None)
    ordered = sorted(
        rows.values(), key=lambda r: (STREAMS.index(r["stream"]), _version_key(r["version"]))
    )
    return ordered, notes


def _like(version: str, rows: dict[str, dict]) -> dict | None:
    """The known release a new one belongs with: the newest of the same X.Y, else of the
    same major (10.2.0 with 10.1.0; 7.14.2 with 7.14.1, not with 7.2.4)."""
    key = _version_key(version)
    for width in (2, 1):
        same = [r for r in rows.values() if _version_key(r["version"])[:width] == key[:width]]
        if same:
            return max(same, key=lambda r: _version_key(r["version"]))
    return None


def _from_history(rows: dict[str, dict], history: dict[str, str], support: dict) -> list[str]:
    """Add the releases AMD's release history lists and no other input does (from the
    oldest release the data has on), each in the stream and repository of the releases it
    belongs with; notes: a release it can't place, a citation of versions.rst for a release
    versions.rst doesn't list."""
    notes: list[str] = []
    oldest = min(_version_key(v) for v in rows) if rows else (0,)
    for version, released in sorted(history.items(), key=lambda kv: _version_key(kv[0])):
        if version in rows or _version_key(version) < oldest:
            continue
        like = _like(version, rows)
        if like is None:
            notes.append(
                f"{FROM_HISTORY} lists {version} ({released}), in no stream the data knows: "
                "add it to matrix_overrides.toml with its stream and source"
            )
            continue
        same = f"as {like['version']}"
        core = like["stream"] == "core-sdk"
        rows[version] = {
            "version": version, "stream": like["stream"], "repository": like["repository"],
            "distros": [d for d in MATRIX_DISTROS if d in support["families"]] if core else None,
            "gfx": None, "amdgpu_driver": None, "torch_index": None,
            "from": {"row": FROM_HISTORY, "stream": same, "repository": same,
                     **({"distros": FROM_OS_SUPPORT} if core else {})},
            "source": f"{FROM_HISTORY}: {version} released {released}",
        }  # fmt: skip
        notes.append(
            f"new release {version} ({released}) from {FROM_HISTORY}: no driver until "
            "matrix_overrides.toml names one with its source (dkms refused meanwhile)"
        )
    for row in rows.values():
        if "versions.rst" in (row["source"] or "") and row["version"] not in history:
            notes.append(
                f"release {row['version']}: its source cites versions.rst, which doesn't "
                "list it; cite what does"
            )
    return notes


# --- what upstream publishes that the data lacks -----------------------------------------


def discoveries(
    data: dict,
    pci_devices: dict[str, str] | None = None,
    known_pci: dict[str, tuple[str, str]] | None = None,
    known_gfx: set[str] | None = None,
    torch_builds: dict[str, set[str]] | None = None,
) -> list[str]:
    """What the upstream files publish that the matrix doesn't have, one line each:
    GPU targets of AMD's GPU list, PCI devices of a known chip, torch versions an index lists,
    and AMD's newest driver when a release has none."""
    lines: list[str] = []
    if known_gfx is not None:
        for gfx, families in (data.get("gpu_products") or {}).items():
            if gfx not in known_gfx:
                named = "; ".join(f"{f}: {', '.join(p)}" for f, p in families.items())
                lines.append(f"gpus.yaml lists {gfx} ({named}), not in the matrix's GPU list")
    if pci_devices is not None and known_pci is not None:
        lines += unknown_pci_devices(pci_devices, known_pci)
    if torch_builds is not None:  # keyed by local label: "rocm6.3", AMD's "rocm10.1.0"
        for index, projects in (data.get("torch_listed") or {}).items():
            for label, versions in projects.get("torch", {}).items():
                if not label.startswith("rocm"):
                    continue  # CPU / CUDA builds an index may also carry
                known = torch_builds.get(label)
                missing = sorted(set(versions) - (known or set()), key=_version_key)
                if known is None:
                    lines.append(f"{index} lists torch {', '.join(missing)} +{label}, a build "
                                 "label no release of the matrix uses")  # fmt: skip
                elif missing:
                    lines.append(f"{index} lists torch {', '.join(missing)} +{label}, which "
                                 "the matrix's builds for it lack")  # fmt: skip
    drivers = list(data.get("amdgpu_drivers") or {})
    for row in data["releases"]:
        if drivers and row["amdgpu_driver"] is None and _version_key(row["version"])[0] >= 7:
            lines.append(f"release {row['version']} has no driver; AMD's driver list's "
                         f"newest is {drivers[0]}")  # fmt: skip
    return lines


def _matrix_knows() -> tuple[dict[str, tuple[str, str]], set[str], dict[str, set[str]]]:
    """(PCI ID -> (gfx, name), the GPU targets, per local label its torch versions): what
    the product's matrix has, for discoveries(). A download.pytorch.org index labels its
    builds with its own name (+rocm6.3); AMD's index with the release (+rocm10.1.0)."""
    from rocm_fleet.model import matrix, pci_ids

    known_pci = {d: (row.gfx, row.name) for d, row in pci_ids.PCI_DEVICES.items()}
    gfx = {t.gfx for t in matrix.GPU_TARGETS}
    torch = {i: {b.torch for b in builds} for i, builds in matrix.TORCH_INDEXES.items()}
    for rel in matrix.RELEASES:
        if rel.amd_wheels is not None:
            torch[rel.amd_wheels.label] = {b.torch for b in rel.amd_wheels.builds}
    return known_pci, gfx, torch


# --- output and comparison ---------------------------------------------------------------


@dataclass
class Inputs:
    """The files read, as text; the optional ones None where not given (their sections are
    then kept as the committed data has them)."""

    historical: str
    os_support: str
    release_md: str
    overrides: str
    history: str | None = None
    drivers: str | None = None
    gpus: str | None = None
    listings: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (page, url)


def build(inputs: Inputs, sources: dict[str, str], previous: dict | None = None
          ) -> tuple[dict, list[str]]:  # fmt: skip
    previous = previous or {}
    table = classic_releases(inputs.historical)
    support = os_support(inputs.os_support)
    stable = torch_stable_rocm(inputs.release_md)
    history = release_history(inputs.history) if inputs.history is not None else None
    releases, notes = release_rows(
        table, support, stable, load_overrides(inputs.overrides), history
    )
    if history is None:  # the rows only the release history gives: kept as committed
        have = {r["version"] for r in releases}
        kept = [
            r
            for r in previous.get("releases", [])
            if r.get("from", {}).get("row") == FROM_HISTORY and r["version"] not in have
        ]
        releases = sorted([*releases, *kept], key=lambda r: (
            STREAMS.index(r["stream"]), _version_key(r["version"])))  # fmt: skip
    # an optional input not given this time: where the committed data says it came from
    sources = {**{k: v for k, v in previous.get("sources", {}).items()
                  if k not in REQUIRED_SOURCES}, **sources}  # fmt: skip
    data = {
        "_comment": "Generated by tools/matrix_update.py from AMD's and PyTorch's "
        "machine-readable files and tools/matrix_overrides.toml; do not edit (run the tool "
        "and review its diff).",
        "sources": sources,
        "gpu_listed_from": gpu_listed_from(inputs.historical),
        "os_families": support["families"],
        "core_sdk_debian": support["per_model"],
        "torch_stable_rocm": stable,
        "releases": releases,
    }
    ours = {r["version"] for r in releases}
    optional = {
        "release_dates": (inputs.history, lambda: {
            v: d for v, d in (history or {}).items() if v in ours}),
        "amdgpu_drivers": (inputs.drivers, lambda: amd_drivers(inputs.drivers)),
        "gpu_products": (inputs.gpus, lambda: gpu_products(inputs.gpus)),
        "torch_listed": (inputs.listings or None, lambda: {
            **previous.get("torch_listed", {}), **_listings(inputs.listings)}),
    }  # fmt: skip
    for section, (given, read) in optional.items():
        if given is not None:
            data[section] = read()
        elif section in previous:
            data[section] = previous[section]
    return data, notes


def _listings(listings: dict[str, tuple[str, str]]) -> dict[str, dict[str, dict]]:
    """index -> project -> local label -> versions, from the listings given as
    "<index>[/<project>]" (project torch by default)."""
    out: dict[str, dict[str, dict]] = {}
    for key, (page, url) in sorted(listings.items()):
        index, _, project = key.partition("/")
        out.setdefault(index, {})[project or "torch"] = listed_versions(page, url)
    return out


def render(data: dict) -> str:
    """The data file: JSON, one release row per line (a diff names the row)."""
    parts = []
    for key, value in data.items():
        if key == "releases":
            rows = ",\n".join(f"    {json.dumps(row, ensure_ascii=False)}" for row in value)
            parts.append(f'  "releases": [\n{rows}\n  ]')
        else:
            body = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
            parts.append(f"  {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _fmt(value) -> str:
    return json.dumps(value)


def row_diff(old: dict, new: dict) -> list[str]:
    """How ``new`` differs from ``old``, one line per changed row or field, naming where the
    new value comes from."""
    lines: list[str] = []
    for section in dict.fromkeys([*old, *new]):
        if section == "_comment":
            continue
        before, after = old.get(section), new.get(section)
        if section == "releases":
            before = {r["version"]: r for r in before or []}
            after = {r["version"]: r for r in after or []}
        if isinstance(before, dict) and isinstance(after, dict):
            for key in dict.fromkeys([*before, *after]):
                b, a = before.get(key), after.get(key)
                if b == a:
                    continue
                if section != "releases" or b is None or a is None:
                    lines.append(f"{section} {key}: {_fmt(b)} -> {_fmt(a)}")
                    continue
                for field in dict.fromkeys([*b, *a]):
                    if field != "from" and b.get(field) != a.get(field):
                        origin = a.get("from", {}).get(field, a.get("from", {}).get("row"))
                        lines.append(f"releases {key} {field}: {_fmt(b.get(field))} -> "
                                     f"{_fmt(a.get(field))}  [{origin}]")  # fmt: skip
                if b.get("from") != a.get("from"):
                    lines.append(f"releases {key} from: {_fmt(b.get('from'))} -> "
                                 f"{_fmt(a.get('from'))}")  # fmt: skip
        elif before != after:
            lines.append(f"{section}: {_fmt(before)} -> {_fmt(after)}")
    return lines


RECORDS = REPO / "tests" / "fixtures" / "upstream"
DATA_DIR = OUTPUT.parent


def tables_main(argv: list[str]) -> int:
    """``matrix_update.py tables``: write the matrix's tables (GPU targets, distros, kernels,
    torch builds) from the stored upstream records and the overrides, or with --check print
    how the committed ones differ (exit 1 when they do)."""
    from rocm_fleet.offline import matrix_data

    parser = argparse.ArgumentParser(
        prog="matrix_update.py tables", description=tables_main.__doc__
    )
    parser.add_argument(
        "--records",
        type=Path,
        default=RECORDS,
        help="the stored upstream records (download.pytorch.org.toml, ...)",
    )
    parser.add_argument("--overrides", type=Path, default=OVERRIDES)
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=DATA_DIR,
        help="where the data files are (written, or compared with --check)",
    )
    parser.add_argument("--check", action="store_true", help="compare, don't write")
    args = parser.parse_args(argv)  # fmt: skip
    try:
        lines, status = matrix_data.update(
            args.records, args.overrides, args.data_dir, check=args.check
        )
    except matrix_data.MatrixDataError as err:
        print(f"matrix_update: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return status


# The inputs --stored can fill: SOURCES.toml's ``input`` -> the option's attribute.
STORED_INPUTS = {
    "historical-csv": "historical_csv", "os-support": "os_support",
    "pytorch-release": "pytorch_release", "release-history": "release_history",
    "driver-list": "driver_list", "gpu-list": "gpu_list",
}  # fmt: skip


def _take_stored(args: argparse.Namespace, notes: dict[str, str]) -> None:
    """Fill each input not given on the command line from the stored copies' SOURCES.toml:
    a file whose entry names an ``input`` is that input, its ``cite`` the source note."""
    sources = args.stored / "SOURCES.toml"
    try:
        files = tomllib.loads(sources.read_text())["files"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as err:
        raise UpstreamFormatError(f"{sources}: {err}") from None
    for name, entry in files.items():
        option = entry.get("input")
        if option is None:
            continue
        if option not in STORED_INPUTS or "cite" not in entry:
            raise UpstreamFormatError(
                f"{sources}: [files.{name!r}] input {option!r} needs a cite; valid inputs: "
                f"{', '.join(STORED_INPUTS)}"
            )
        if getattr(args, STORED_INPUTS[option]) is None:
            setattr(args, STORED_INPUTS[option], args.stored / name)
            notes.setdefault(option, entry["cite"])


def record_main(argv: list[str]) -> int:
    """``matrix_update.py record KIND FILE``: print the record of an input file that may be
    read but not committed (the cells this tool reads, verbatim), to store in its place."""
    parser = argparse.ArgumentParser(
        prog="matrix_update.py record", description=record_main.__doc__
    )
    parser.add_argument("kind", choices=sorted(RECORD_KINDS))
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    try:
        print(RECORD_KINDS[args.kind][0](args.file.read_text()), end="")
    except UpstreamFormatError as err:
        print(f"matrix_update: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["tables"]:
        return tables_main(argv[1:])
    if argv[:1] == ["record"]:
        return record_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--historical-csv", type=Path)
    parser.add_argument("--os-support", type=Path)
    parser.add_argument("--pytorch-release", type=Path)
    parser.add_argument(
        "--stored",
        type=Path,
        metavar="DIR",
        help="take each input not given from DIR's SOURCES.toml (its file and citation): "
        "tests/fixtures/upstream/stored reproduces the committed data",
    )
    parser.add_argument("--overrides", type=Path, default=OVERRIDES)
    parser.add_argument(
        "--release-history",
        type=Path,
        metavar="versions.rst",
        help="AMD's release list: releases it has that the data lacks",
    )
    parser.add_argument("--driver-list", type=Path, metavar="driver-firmware-support.yaml")
    parser.add_argument("--gpu-list", type=Path, metavar="gpus.yaml")
    parser.add_argument(
        "--pci-ids",
        type=Path,
        metavar="pci.ids",
        help="report AMD devices of a known chip that the data lacks",
    )
    parser.add_argument("--listing", action="append", default=[],
                        metavar="INDEX[/PROJECT]=PAGE|URL",
                        help="a wheel index's project page, saved or https (rocm6.3=torch.html, "
                        "rocm6.3/torchvision=https://download.pytorch.org/whl/rocm6.3/"
                        "torchvision/, whl-next=https://stable.repo.amd.com/rocm/whl-next/"
                        "torch/)")  # fmt: skip
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="compare, don't write")
    parser.add_argument("--source-note", action="append", default=[], metavar="FILE=WHERE",
                        help="where an input was read from (commit, URL), for SOURCES")  # fmt: skip
    args = parser.parse_args(argv)
    notes = dict(n.split("=", 1) for n in args.source_note)
    if args.stored is not None:
        try:
            _take_stored(args, notes)
        except UpstreamFormatError as err:
            print(f"matrix_update: {err}", file=sys.stderr)
            return 2
    missing = [f"--{o}" for o in ("historical-csv", "os-support", "pytorch-release")
               if getattr(args, o.replace("-", "_")) is None]  # fmt: skip
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)} (or --stored)")
    sources = {
        "historical_csv": notes.get("historical-csv", args.historical_csv.name),
        "os_support": notes.get("os-support", args.os_support.name),
        "pytorch_release": notes.get("pytorch-release", args.pytorch_release.name),
    }
    for option, key in (("release-history", "release_history"), ("driver-list", "driver_list"),
                        ("gpu-list", "gpu_list")):  # fmt: skip
        given = getattr(args, key)
        if given is not None:
            sources[key] = notes.get(option, given.name)
    try:
        current = json.loads(args.output.read_text()) if args.output.exists() else {}
    except json.JSONDecodeError:
        current = {}

    def text(path: Path | None) -> str | None:
        return path.read_text() if path is not None else None

    try:
        listings = {}
        for spec in args.listing:
            key, sep, where = spec.partition("=")
            if not sep or not re.fullmatch(r"(rocm[0-9.]+|whl-next|whl-multi-arch)(/[a-z]+)?",
                                           key):  # fmt: skip
                raise UpstreamFormatError(
                    f"--listing {spec!r}: expected INDEX[/PROJECT]=PAGE|URL, INDEX a "
                    "download.pytorch.org rocmX.Y or AMD's whl-next / whl-multi-arch "
                    "(rocm6.3=page.html)"
                )
            listings[key] = read_listing(where)
            sources[f"listing {key}"] = notes.get(f"listing {key}", where)
        inputs = Inputs(
            input_text(args.historical_csv, "historical-csv"), args.os_support.read_text(),
            input_text(args.pytorch_release, "pytorch-release"), args.overrides.read_text(),
            text(args.release_history), text(args.driver_list), text(args.gpu_list), listings,
        )  # fmt: skip
        data, remarks = build(inputs, sources, current)
        pci = pci_amd_devices(args.pci_ids.read_text()) if args.pci_ids else None
    except UpstreamFormatError as err:
        print(f"matrix_update: {err}", file=sys.stderr)
        return 2
    for remark in remarks:
        print(f"matrix_update: note: {remark}", file=sys.stderr)
    known_pci, known_gfx, torch_builds = _matrix_knows()
    found = discoveries(data, pci, known_pci, known_gfx, torch_builds)
    if args.check:
        diff = row_diff(current, data)
        print("\n".join(diff) if diff else "upstream data unchanged")
        for line in found:
            print(f"upstream has: {line}")
        return 1 if diff or found else 0
    args.output.write_text(render(data))
    print(f"wrote {args.output}")
    for line in found:
        print(f"upstream has: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
