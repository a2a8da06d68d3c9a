"""Kernels per GPU family and per driver release (kernels.json ``family_kernel``,
``driver_kernel``). The first from AMD's os-support.yaml: each model's Ubuntu / Debian versions
name a kernel ("GA 6.8", "HWE 6.17", "OEM 6.17", Debian's "6.12"); a family's row is the newest
any of its models on that release lists. The second from cited overrides: AMD publishes no
file of it, only the rule that an ``amdgpu-dkms`` package's kernel base is the newest kernel it
supports (ROCm/legacy-rocm-build#6193)."""

from __future__ import annotations

from pathlib import Path

from rocm_fleet.matrix.amd_tables import AMD_FAMILIES, DISTROS
from rocm_fleet.matrix.inputs import FROM_OVERRIDE, MatrixDataError, cited, read_toml, read_yaml
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


def family_kernels(text: str, where: str = "os-support.yaml") -> list[dict]:
    """Rows (distro, family, kernel, kind, models) from AMD's os-support.yaml, in the matrix's
    distro order then the file's family order."""
    data = read_yaml(text, where)
    if not isinstance(data, dict):
        raise MatrixDataError(f"{where}: not a mapping of GPU families")
    found: dict[tuple[str, str], dict] = {}
    for family, members in data.items():
        if str(family).startswith("_") or not isinstance(members, dict):
            continue
        if family not in AMD_FAMILIES:
            raise MatrixDataError(f"{where}: family {family!r}: expected one of {AMD_FAMILIES}")
        for model, systems in members.items():
            for os_name, entry in (systems or {}).items():
                for version in (entry or {}).get("versions", []):
                    if not isinstance(version, dict):
                        continue
                    key = DISTROS.get((os_name, str(version.get("version"))))
                    if key is None or "kernel" not in version:
                        continue
                    kind, kernel = _kernel(version["kernel"], f"{where}: {model}")
                    row = found.setdefault((key, AMD_FAMILIES[family]), {
                        "distro": key, "family": AMD_FAMILIES[family], "kernel": kernel,
                        "kind": kind, "models": [],
                    })  # fmt: skip
                    if kernel_key(kernel) > kernel_key(row["kernel"]):
                        row.update(kernel=kernel, kind=kind)
                    row["models"].append(model)
    order = {d: i for i, d in enumerate(DISTROS.values())}
    return sorted(found.values(), key=lambda r: order[r["distro"]])


def family_kernel_rows(records: Path) -> list[dict]:
    """kernels.json's ``family_kernel`` rows from the stored os-support.yaml, each cited."""
    path = records / OS_SUPPORT
    entry = (
        read_toml(records / "stored" / "SOURCES.toml").get("files", {}).get("os-support.yaml", {})
    )
    cite = entry.get("cite") or str(OS_SUPPORT)
    return [
        {**{k: v for k, v in row.items() if k != "models"}, "from": str(OS_SUPPORT),
         "source": f"{cite}: {len(row['models'])} models, e.g. {row['models'][0]}"}
        for row in family_kernels(path.read_text("utf-8"), str(path))
    ]  # fmt: skip


def driver_kernel_rows(over: dict, overrides: Path) -> list[dict]:
    """kernels.json's ``driver_kernel`` rows: per amdgpu driver release, its ``amdgpu-dkms``
    package version where cited, and the newest kernel series AMD supports it on: the
    package's kernel base (the version's first two numbers: "1:6.16.13.30300400-2341068" ->
    6.16), or the ``kernel_base`` AMD names where the version isn't quoted."""
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
