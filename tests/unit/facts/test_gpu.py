"""rocm_fleet.facts.gpu: what needs Python beside its parsers' cases (tests/unit/facts/cases/
gpu.*/): the gfx name a KFD target version decodes to.
"""

from __future__ import annotations

import pytest

from rocm_fleet.facts.gpu import RocmAgents, gfx_from_target_version
from unit.facts.support import fixture, lines


@pytest.mark.parametrize(
    ("value", "gfx"),
    [
        (110000, "gfx1100"),
        (110001, "gfx1101"),
        (90010, "gfx90a"),
        (90402, "gfx942"),
        (90500, "gfx950"),
        (90008, "gfx908"),
        (100300, "gfx1030"),
        (100306, "gfx1036"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
        (0, None),
    ],
)
def test_gfx_from_target_version_decodes_like_rocm_agent_enumerator(value, gfx):
    assert gfx_from_target_version(value) == gfx


def agents(name: str, rc: int) -> dict:
    """RocmAgents' answer for a rocminfo transcript (tests/fixtures/rocminfo) and its exit status
    (tests/integration/facts/test_gpu.py compares it with sysfs)."""
    return RocmAgents().process([*lines(fixture("rocminfo", name)), f"__rc={rc}"])
