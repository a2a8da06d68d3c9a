"""The GPU targets the matrix knows: family, products, first classic release listing it."""

import re
from dataclasses import dataclass

from rocm_fleet.model import upstream_data


@dataclass(frozen=True)
class GpuTarget:
    gfx: str
    family: str  # "instinct", "radeon" or "ryzen" (an APU's integrated GPU)
    products: str
    supported_from: str | None  # first classic release that lists it, None = never listed


_FROM = upstream_data.GPU_LISTED_FROM
GPU_TARGETS = tuple(
    GpuTarget(r["gfx"], r["family"], r["products"], _FROM.get(r["gfx"]))
    for r in upstream_data.GPU_TARGET_ROWS
)
GFX_NAME = re.compile(r"^gfx[0-9]{2,4}[0-9a-f]$")


def gpu_target(gfx: str) -> GpuTarget | None:
    return next((row for row in GPU_TARGETS if row.gfx == gfx), None)
