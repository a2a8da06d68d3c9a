"""AMD's machine-readable files, read (historical CSV, os-support.yaml, versions.rst,
driver-firmware-support.yaml, gpus.yaml); a row that can't be read is refused, named."""

import contextlib
import csv
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from rocm_fleet.matrix.inputs import MATRIX_DISTROS, MatrixDataError, read_yaml, version_key
from rocm_fleet.model.gpu_targets import GFX_NAME
from rocm_fleet.model.versions import RELEASE_LIST_ROW, is_driver_folder, is_full_release

# os-support.yaml's Instinct models -> gfx (docs/decisions/matrix-data-and-citations.md).
MODEL_GFX = {f"AMD Instinct {m}": gfx for gfx, models in (
    ("gfx950", ("MI355X", "MI350X", "MI350P")), ("gfx942", ("MI325X", "MI300X", "MI300A")),
    ("gfx90a", ("MI250X", "MI250", "MI210")), ("gfx908", ("MI100",))) for m in models}  # fmt: skip
# os-support.yaml's OS names and versions -> the matrix's distro keys.
DISTROS = {("Ubuntu", "26.04"): "ubuntu 26.04", ("Ubuntu", "24.04.4"): "ubuntu 24.04",
           ("Ubuntu", "22.04.5"): "ubuntu 22.04", ("Debian", "13"): "debian 13",
           ("Debian", "12"): "debian 12"}  # fmt: skip

GFX = re.compile(r"\bgfx[0-9a-f]+\b")
FOOTNOTE = re.compile(r"\s*\[#[^\]]*\]_")


def yaml_families(text: str, where: str) -> dict:
    """AMD's YAML file of GPU families: each family's members by name ("_" keys left out)."""
    data = read_yaml(text, where)
    if not isinstance(data, dict):
        raise MatrixDataError(f"{where}: not a mapping of GPU families")
    return {family: v for family, v in data.items() if not str(family).startswith("_")}


def csv_table(text: str) -> tuple[list[list[str]], list[list[str]]]:
    """(the CSV's rows, per column the releases it names)."""
    rows = list(csv.reader(text.splitlines()))
    if not rows or rows[0][0].strip() != "ROCm Version":
        raise MatrixDataError("historical CSV: the first row must start with 'ROCm Version'")
    columns = [[v.strip() for v in cell.split("/")] for cell in rows[0][1:]]
    for versions in columns:
        for version in versions:
            if not is_full_release(version):
                raise MatrixDataError(f"historical CSV: {version!r} is not a release version")
    return rows, columns


def csv_section(rows: list[list[str]], title: str) -> list[list[str]]:
    """The rows of the section whose first cell contains ``title``, up to a blank row or the
    next section."""
    start = next((i for i, r in enumerate(rows) if r and title in r[0]), None)
    if start is None:
        raise MatrixDataError(f"historical CSV: no {title!r} row")
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
    rows, columns = csv_table(text)
    first: dict[str, str] = {}
    for _row, _i, version, cell in _per_release(csv_section(rows, "GPU / LLVM target"), columns):
        for gfx in GFX.findall(cell):
            if gfx not in first or version_key(version) < version_key(first[gfx]):
                first[gfx] = version
    return dict(sorted(first.items()))


def _distro_keys(cell: str) -> list[str]:
    """ "Ubuntu 22.04.5, 22.04.4" -> ["ubuntu 22.04"]; distros the matrix lacks -> nothing."""
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
    """A "AMD GPU Driver" entry as AMD's folder names it ("30.30.0" -> "30.30"); None for a
    family ("6.4.x")."""
    entry = FOOTNOTE.sub("", entry).strip()
    if not is_driver_folder(entry):
        return None
    return entry.removesuffix(".0") if entry.count(".") == 2 else entry


def classic_releases(text: str) -> dict[str, dict]:
    """Release -> {distros, gfx, amdgpu_driver} from the historical CSV's columns."""
    rows, columns = csv_table(text)
    out: dict[str, dict] = {
        v: {"distros": [], "gfx": [], "amdgpu_driver": None} for vs in columns for v in vs
    }
    for _r, _i, version, cell in _per_release(csv_section(rows, "Operating systems"), columns):
        out[version]["distros"] += [k for k in _distro_keys(cell)
                                    if k not in out[version]["distros"]]  # fmt: skip
    for _r, _i, version, cell in _per_release(csv_section(rows, "GPU / LLVM target"), columns):
        out[version]["gfx"] += GFX.findall(cell)
    # A shared column ("7.0.1/7.0.0") lists its releases' own drivers first; none before 7.0.
    for _r, index, version, cell in _per_release(csv_section(rows, "AMD GPU Driver"), columns):
        entries = [e for e in cell.split(",") if e.strip()]
        if version_key(version)[0] >= 7 and index < len(entries):
            out[version]["amdgpu_driver"] = _driver_folder(entries[index])
    for row in out.values():
        row["distros"] = [d for d in MATRIX_DISTROS if d in row["distros"]]
    return out


def os_support_rows(text: str, where: str = "os-support.yaml",
                    families: Iterable[str] | None = None) -> Iterator[tuple]:  # fmt: skip
    """(family, model, OS name, its version entry, matrix distro key) per version os-support.yaml
    lists on a distro the matrix knows; ``families``: the only ones allowed."""
    for family, members in yaml_families(text, where).items():
        if not isinstance(members, dict):
            continue
        if families is not None and family not in families:
            raise MatrixDataError(f"{where}: family {family!r}: expected one of {families}")
        for model, systems in members.items():
            for os_name, entry in (systems if isinstance(systems, dict) else {}).items():
                for version in entry.get("versions", []) if isinstance(entry, dict) else ():
                    number = version.get("version") if isinstance(version, dict) else version
                    key = DISTROS.get((os_name, str(number)))
                    if key is not None:
                        yield family, model, os_name, version, key


def os_support(text: str) -> dict:
    """Per matrix distro: the AMD families listed on it and (Debian) its models' gfx targets."""
    families: dict[str, set[str]] = {}
    models: dict[str, list[str]] = {}
    for family, model, os_name, _version, key in os_support_rows(text):
        families.setdefault(key, set()).add(family)
        if os_name == "Debian":
            models.setdefault(key, []).append(model)
    debian: dict[str, dict[str, list[str]]] = {}
    for key, names in sorted(models.items()):
        unknown = [m for m in names if m not in MODEL_GFX]
        if unknown:
            raise MatrixDataError(
                f"os-support.yaml lists {key} for {', '.join(unknown)}, which MODEL_GFX in "
                "rocm_fleet's matrix generator doesn't map to a gfx target: add it with its source"
            )
        order = list(dict.fromkeys(MODEL_GFX.values()))  # newest target first
        targets = {MODEL_GFX[m] for m in names}
        debian[key] = {"models": names, "gfx": [g for g in order if g in targets]}
    return {"families": {k: sorted(v) for k, v in sorted(families.items())}, "per_model": debian}


def release_history(text: str) -> dict[str, str]:
    """Release -> its date (ISO), newest first; a row that can't be read is refused."""
    if "Release date" not in text:
        raise MatrixDataError("versions.rst: no 'Release date' column")
    out: dict[str, str] = {}
    for match in RELEASE_LIST_ROW.finditer(text):
        out[match["version"]] = _iso_date(match["date"], match["version"])
    rows = len(re.findall(r"^\s*\* - `", text, re.M))
    if not out or rows != len(out):
        raise MatrixDataError(
            f"versions.rst: read {len(out)} of its {rows} release rows (a row is '* - `X.Y.Z "
            "<url>`__' then '- Month D, YYYY')"
        )
    return dict(sorted(out.items(), key=lambda kv: version_key(kv[0]), reverse=True))


def _iso_date(text: str, version: str) -> str:
    for form in ("%B %d, %Y", "%b %d, %Y"):
        with contextlib.suppress(ValueError):
            return datetime.strptime(text, form).date().isoformat()
    raise MatrixDataError(f"versions.rst: release {version}: {text!r} is not a date")


def amd_drivers(text: str) -> dict[str, str]:
    """amdgpu driver version -> its release notes, newest first (``_amdgpu_drivers``)."""
    data = read_yaml(text, "driver-firmware-support.yaml")
    entries = data.get("_amdgpu_drivers") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise MatrixDataError("driver-firmware-support.yaml: no '_amdgpu_drivers' list")
    out: dict[str, str] = {}
    for entry in entries:
        version = str(entry.get("version", "")) if isinstance(entry, dict) else ""
        if not is_full_release(version):
            raise MatrixDataError(
                f"driver-firmware-support.yaml: _amdgpu_drivers entry {entry!r} has no "
                "'version' X.Y.Z"
            )
        out[version] = str(entry.get("url", ""))
    return dict(sorted(out.items(), key=lambda kv: version_key(kv[0]), reverse=True))


# AMD's GPU list's family names -> GpuTarget.family.
AMD_FAMILIES = {"AMD Instinct": "instinct", "AMD Radeon": "radeon", "AMD Ryzen": "ryzen"}
GPU_LIST = Path("stored") / "gpus.yaml"


def gpu_products(text: str, where: str = "gpus.yaml") -> dict[str, dict[str, list[str]]]:
    """gfx target -> {family: [products]} from AMD's GPU list, in its order; ``where`` names the
    file in an error."""
    out: dict[str, dict[str, list[str]]] = {}
    for family, products in yaml_families(text, where).items():
        if not isinstance(products, dict):
            raise MatrixDataError(f"{where}: family {family!r} is not a mapping of products")
        for product, fields in products.items():
            gfx = fields.get("gfx") if isinstance(fields, dict) else None
            if not isinstance(gfx, str) or not GFX_NAME.fullmatch(gfx):
                raise MatrixDataError(
                    f"{where}: {family} / {product}: gfx {gfx!r} is not a gfx target"
                )
            out.setdefault(gfx, {}).setdefault(family, []).append(product)
    return out
