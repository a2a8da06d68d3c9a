"""The lab fleet the end-to-end tests share: built once per session, torn down at the end."""

from __future__ import annotations

import pytest

from e2e import pull_support
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


@pytest.fixture(scope="session")
def fleet():
    yield from running_lab(FLEET, RELEASES)


@pytest.fixture(scope="session")
def pull_fleet(tmp_path_factory):
    """The pull-mode fleet test_pull.py and test_pull_future.py share (pull_support.py)."""
    yield from pull_support.pull_fleet(tmp_path_factory)
