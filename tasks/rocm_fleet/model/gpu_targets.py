"""The GPU targets the matrix knows: per gfx target its family (Instinct, Radeon, Ryzen
APU), the products it names and the first classic release AMD lists it for. The rows are data
(gpu_targets.json beside this module, each with its source; the first listing from
upstream_data.json), written by tools/matrix_update.py."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rocm_fleet.model import upstream_data


@dataclass(frozen=True)
class GpuTarget:
    gfx: str
    family: str  # "instinct", "radeon" or "ryzen" (an APU's integrated GPU)
    products: str
    supported_from: str | None  # first classic release that lists it, None = never listed


# Rows: gpu_targets.json, in the matrix's order (product -> gfx, each row cited: AMD's
# system-requirements files, TheRock RELEASES.md's device-extra table and LLVM's AMDGPUUsage
# processors table for the Ryzen APUs, AMD's gpus.yaml for gfx1153). First listing: the "GPU
# / LLVM target" rows of AMD's historical compatibility table, read by tools/matrix_update.py
# into upstream_data.GPU_LISTED_FROM (a target it never names: None; recorded independently
# in tests/fixtures/upstream/gpus.toml). gfx906 is in no column 6.0.0-7.2.0 of that table;
# gfx1036 (Ryzen 7000 iGPU) is never listed and is here so the deploy can tell an iGPU from a
# missing expected dGPU. No classic release lists the Ryzen APUs; the Core SDK ships
# per-target packages for them (CORE_SDK_GFX_PACKAGES).
GPU_TARGETS: tuple[GpuTarget, ...] = tuple(
    GpuTarget(
        row["gfx"], row["family"], row["products"], upstream_data.GPU_LISTED_FROM.get(row["gfx"])
    )
    for row in upstream_data.GPU_TARGET_ROWS
)

GFX_NAME = re.compile(r"^gfx[0-9]{2,4}[0-9a-f]$")


def gpu_target(gfx: str) -> GpuTarget | None:
    for row in GPU_TARGETS:
        if row.gfx == gfx:
            return row
    return None
