"""The lab fleet of test_fleet.py, and the order the lab's modules start in."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e.support import running_lab
from lab import HostSpec

# Three hosts that must converge (two Debian releases, three GPU profiles, two ROCm
# releases) and one whose GPU is not what its inventory says.
FLEET = [
    HostSpec(
        "node1", suite="bookworm", profile="rx7900xtx",
        data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
              "rocm_users": ["alice"]},
    ),
    HostSpec(
        "node2", suite="trixie", profile="mi300x-8",
        data={"rocm_version": "7.2.1", "expected_gfx": "gfx942", "expected_gpu_count": 8,
              "rocm_packages": ["rocm"], "rocm_users": ["alice"]},
    ),
    HostSpec(
        "node3", suite="bookworm", profile="apu+rx7900xtx",
        data={"rocm_version": "7.2.1", "expected_gfx": "gfx1100", "expected_gpu_count": 1},
    ),
    HostSpec(
        "wronggpu", suite="bookworm", profile="mi300x-8",
        data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1},
    ),
]  # fmt: skip
CONVERGING = "node1,node2,node3"
RELEASES = sorted({spec.data["rocm_version"] for spec in FLEET})


@pytest.fixture(scope="module")
def fleet():
    yield from running_lab(FLEET, RELEASES)


#: The lab's longest modules, longest first (the per-module sum of test times of a junit run of
#: the lab tier). `make test` runs the lab's modules on two pytest-xdist workers
#: (``--dist loadfile --no-loadscope-reorder``), which take whole modules in collection order:
#: the longest starting first keeps a long one from running alone at the end. Order only; no
#: test depends on it.
LONGEST_FIRST = [
    "test_pull", "test_kernel_driver", "test_offline", "test_containers", "test_slurm_waves",
    "test_preflight", "test_lifecycle", "test_audit", "test_streams",
    "test_future_release", "test_amd_torch", "test_faults", "test_wheel",
]  # fmt: skip


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def order(item):
        return rank.get(item.path.stem, len(rank)) if item.path.parent == here else len(rank)

    items.sort(key=order)
