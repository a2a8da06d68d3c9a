"""What amd-smi reports for a hardware profile's GPUs, as JSON files in a host root.

The amd-smi double (amd_repo.py's ``amd-smi-lib``, POSIX sh) prints these files for
``amd-smi metric|static|xgmi ... --json``; they are assembled per GPU from the real outputs in
tests/fixtures/amd-smi (README there says where each comes from): an Instinct MI300X gets the
MI300X records, a Radeon the RX 7900 XTX's, an integrated GPU the Strix Halo APU's (every
counter "N/A"). Each GPU's ``bdf`` is its slot in the lab's sysfs (sysfs.py), and a lab GPU
is healthy: its link runs at the card's full width, no ECC error, every XGMI link up.
:func:`set_gpu` changes one GPU's readings for a test (a narrowed link, ECC errors).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import profiles, sysfs
from ._util import REPO_ROOT

#: in the host root; the amd-smi double reads ``<name>.json`` here
DATA_DIR = "etc/rocm-fleet-lab/amd-smi"
FIXTURES = REPO_ROOT / "tests/fixtures/amd-smi"
#: kind -> the fixtures (metric, static, xgmi) its GPUs' records come from
KINDS = {
    "instinct": ("metric_mi300x_healthy.json", "static_mi300x.json", "xgmi_mi300x_up.json"),
    "radeon": ("metric_rx7900xtx_x8.json", "static_rx7900xtx.json", None),
    "apu": ("metric_strixhalo_apu.json", "static_strixhalo_apu.json", "xgmi_strixhalo_apu.json"),
}


def _records(name: str | None) -> list[dict[str, Any]]:
    if name is None:
        return []
    data = json.loads((FIXTURES / name).read_text())
    return data["gpu_data"] if isinstance(data, dict) else data


def _kind(gpu: profiles.Gpu) -> str:
    if "Instinct" in gpu.name:
        return "instinct"
    return "apu" if gpu.uuid == "GPU-XX" else "radeon"


def reports(profile: str) -> dict[str, list[dict[str, Any]]]:
    """(metric, static, xgmi) -> the per-GPU records amd-smi would print for the profile."""
    out: dict[str, list[dict[str, Any]]] = {"metric": [], "static": [], "xgmi": []}
    seen: dict[str, int] = {}
    for index, gpu in enumerate(profiles.gpus(profile)):
        kind = _kind(gpu)
        nth = seen[kind] = seen.get(kind, -1) + 1  # the kind's n-th GPU takes its n-th record
        slot = sysfs._slot(index)[0]
        for report, name in zip(("metric", "static", "xgmi"), KINDS[kind], strict=True):
            records = _records(name)
            if not records:
                continue
            record = json.loads(json.dumps(records[nth % len(records)]))
            record["gpu"] = index
            if report == "static":
                record["bus"]["bdf"] = slot
            if report == "xgmi":
                record["bdf"] = slot
            out[report].append(record)
    for metric, static in zip(out["metric"], out["static"], strict=True):
        width = static["bus"]["max_pcie_width"]
        if isinstance(metric["pcie"].get("width"), int) and isinstance(width, int):
            metric["pcie"]["width"] = width  # healthy: the card's full width
    return out


def write(root: Path, profile: str) -> None:
    """Replace the host's amd-smi reports with the profile's (none: no file, no GPU)."""
    directory = root / DATA_DIR
    directory.mkdir(parents=True, exist_ok=True)
    for report, records in reports(profile).items():
        path = directory / f"{report}.json"
        if records:
            path.write_text(json.dumps(records, indent=4) + "\n")
            path.chmod(0o644)
        else:
            path.unlink(missing_ok=True)


def set_gpu(root: Path, gpu: int, **metric: Any) -> None:
    """Change GPU ``gpu``'s ``amd-smi metric`` sections, e.g. ``pcie={"width": 8}`` or
    ``ecc={"total_uncorrectable_count": 1}`` (merged into the section)."""
    path = root / DATA_DIR / "metric.json"
    records = json.loads(path.read_text())
    for record in records:
        if record["gpu"] == gpu:
            for section, values in metric.items():
                record[section] = {**record.get(section, {}), **values}
    path.write_text(json.dumps(records, indent=4) + "\n")


AMD_SMI = f"""#!/bin/sh
# amd-smi double (rocm-fleet lab): what amd-smi prints with --json for the host's GPUs, from
# /{DATA_DIR} (tests/lab/smi.py). Other output formats and commands are not doubled.
dir=/{DATA_DIR}
json=no; link=no
for arg in "$@"; do
    case $arg in --json) json=yes ;; --link-status) link=yes ;; esac
done
[ "$json" = yes ] || {{ echo "amd-smi double: only --json is doubled" >&2; exit 2; }}
case $1 in
    metric|static) file=$dir/$1.json ;;
    xgmi) [ "$link" = yes ] || {{ echo "amd-smi double: only xgmi --link-status" >&2; exit 2; }}
          file=$dir/xgmi.json ;;
    *) echo "amd-smi double: $1 is not doubled" >&2; exit 2 ;;
esac
if [ ! -r "$file" ]; then echo "[]"; exit 0; fi
cat "$file"
"""
