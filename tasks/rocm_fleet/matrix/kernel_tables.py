"""Kernels per GPU family (os-support.yaml: the newest any model lists) and per driver release
(cited overrides: an ``amdgpu-dkms`` package's kernel base is its newest kernel)."""

from pathlib import Path

from rocm_fleet.matrix.amd_tables import AMD_FAMILIES, DISTROS, os_support_rows
from rocm_fleet.matrix.inputs import FROM_OVERRIDE, MatrixDataError, cited, stored_entry
from rocm_fleet.model.versions import kernel_key

OS_SUPPORT = Path("stored") / "os-support.yaml"
# os-support.yaml's kernel kinds -> how the matrix names them (a bare version: the GA kernel).
KINDS = {"GA": "ga", "HWE": "hwe", "OEM": "oem"}


def _kernel(text: str, where: str) -> tuple[str, str]:
    """("ga" | "hwe" | "oem", version) of an os-support kernel cell ("HWE 6.17", "6.1.0")."""
    words = str(text).split()
    kind, version = (words[0], words[1]) if len(words) == 2 else ("GA", words[0] if words else "")
    if kind not in KINDS or not version[:1].isdigit():
        raise MatrixDataError(f"{where}: kernel {text!r}: expected [GA|HWE|OEM] <version>")
    return KINDS[kind], version


def family_kernel_rows(records: Path) -> list[dict]:
    """kernels.json's ``family_kernel`` rows (the newest kernel any model of a family lists per
    distro) from the stored os-support.yaml, each cited, in distro order."""
    where, cite = str(records / OS_SUPPORT), stored_entry(records, "os-support.yaml").get("cite")
    cite, text = cite or str(OS_SUPPORT), (records / OS_SUPPORT).read_text("utf-8")
    found: dict[tuple[str, str], dict] = {}
    for family, model, _os, version, key in os_support_rows(text, where, AMD_FAMILIES):
        if not isinstance(version, dict) or "kernel" not in version:
            continue
        kind, kernel = _kernel(version["kernel"], f"{where}: {model}")
        row = found.setdefault((key, AMD_FAMILIES[family]), {
            "distro": key, "family": AMD_FAMILIES[family], "kernel": kernel, "kind": kind,
            "models": [],
        })  # fmt: skip
        if kernel_key(kernel) > kernel_key(row["kernel"]):
            row.update(kernel=kernel, kind=kind)
        row["models"].append(model)
    order = {d: i for i, d in enumerate(DISTROS.values())}
    return [
        {**{k: v for k, v in row.items() if k != "models"}, "from": str(OS_SUPPORT),
         "source": f"{cite}: {len(row['models'])} models, e.g. {row['models'][0]}"}
        for row in sorted(found.values(), key=lambda r: order[r["distro"]])
    ]  # fmt: skip


def driver_kernel_rows(over: dict, overrides: Path) -> list[dict]:
    """kernels.json's ``driver_kernel`` rows: per driver its ``amdgpu-dkms`` version and newest
    kernel, the package's kernel base ("1:6.16.13.30300400-2341068" -> 6.16) or ``kernel_base``."""
    rows = []
    fields = {"driver", "dkms", "kernel_base"}
    for entry in cited(over.get("driver_kernel", []), "driver_kernel", fields, overrides):
        dkms = entry.get("dkms")
        base = str(dkms).split(":", 1)[-1].split(".")[:2] if dkms else str(
            entry.get("kernel_base", "")).split(".")  # fmt: skip
        if (
            len(base) != 2
            or not all(p.isdigit() for p in base)
            or ("kernel_base" in entry) == (dkms is not None)
        ):
            raise MatrixDataError(
                f"{overrides}: [[driver_kernel]] {entry['driver']}: give dkms (an amdgpu-dkms "
                "version, [epoch:]<kernel base>.<build>-<id>) or kernel_base (X.Y), not both"
            )
        rows.append({"driver": entry["driver"], "dkms": dkms, "max_kernel": ".".join(base),
                     "from": FROM_OVERRIDE, "source": entry["source"]})  # fmt: skip
    return rows
