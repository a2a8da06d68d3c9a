"""The matrix's generated data files (tools/matrix_update.py; not edited by hand)."""

import json
from importlib.resources import files
from pathlib import Path

_DATA = json.loads(files(__package__).joinpath("upstream_data.json").read_text("utf-8"))

# The files the data was generated from.
SOURCES: dict[str, str] = _DATA["sources"]
# gfx target -> first classic release AMD's historical table lists it for.
GPU_LISTED_FROM: dict[str, str] = _DATA["gpu_listed_from"]
# Debian release -> the Instinct models os-support.yaml lists it for, and their gfx targets.
CORE_SDK_DEBIAN: dict[str, dict[str, list[str]]] = _DATA["core_sdk_debian"]
TORCH_STABLE_ROCM: dict[str, str] = _DATA["torch_stable_rocm"]  # torch minor -> its ROCm
RELEASES: list[dict] = _DATA["releases"]  # oldest first per stream, each field cited
# What each origin a row's "from" names is called in the tables (else printed as itself).
ORIGINS: dict[str, str] = _DATA.get("origins", {})
# AMD's Linux amdgpu drivers (driver-firmware-support.yaml), newest first: version -> notes.
AMDGPU_DRIVERS: dict[str, str] = _DATA.get("amdgpu_drivers", {})
DATA_DIR = Path(str(files(__package__)))


def _table(name: str) -> dict[str, list[dict]]:
    """A table file (tools/matrix_update.py tables): section -> rows, each cited."""
    data = json.loads(files(__package__).joinpath(name).read_text("utf-8"))
    return {section: rows for section, rows in data.items() if section != "_comment"}


GPU_TARGET_ROWS: list[dict] = _table("gpu_targets.json")["gpu_targets"]
DISTRO_ROWS: list[dict] = _table("distros.json")["distros"]
KERNEL_ROWS: dict[str, list[dict]] = _table("kernels.json")
TORCH_BUILD_ROWS: dict[str, list[dict]] = _table("torch_builds.json")
REPOSITORY_ROWS: dict[str, list[dict]] = _table("repositories.json")
PCI_ROWS: dict[str, list[dict]] = _table("pci_ids.json")
