"""rocm_fleet.facts.gpu: the GPU facts (rocminfo's agents, ROCm's version file, the PCI
and KFD sysfs trees run under dash against tests/fixtures/sysfs).
"""

from __future__ import annotations

import json

import pytest
from pyinfra.api.exceptions import FactProcessError

from rocm_fleet.facts.gpu import (
    RocmAgents,
    RocmVersion,
    gfx_from_target_version,
)
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


# ---------------------------------------------------------------------------------------
# RocmAgents
# ---------------------------------------------------------------------------------------


def agents(name: str, rc: int) -> dict:
    return RocmAgents().process([*lines(fixture("rocminfo", name)), f"__rc={rc}"])


def test_rocminfo_rx7900xtx_ignores_cpu_agent_and_strips_colour():
    result = agents("rx7900xtx.txt", 0)
    assert result["status"] == "ok"
    assert result["rc"] == 0
    assert result["message"] == "ROCk module version 6.7.0 is loaded"
    assert result["gpus"] == [
        {
            "name": "gfx1100",
            "marketing_name": "Radeon RX 7900 XTX",
            "uuid": "GPU-fff29e921a701d68",
            "vendor": "AMD",
            "node": 1,
            "chip_id": "0x744c",
            "compute_units": 96,
            "pci_bdf": "0d:00.0",
            "apu": False,
            "isa": ["amdgcn-amd-amdhsa--gfx1100"],
        }
    ]
    json.dumps(result)  # audit-ready


def test_rocminfo_mi300x_x8_lists_eight_gpus_in_agent_order():
    result = agents("mi300x_x8.txt", 0)
    gpus = result["gpus"]
    assert result["status"] == "ok"
    assert result["message"] == "ROCk module version 6.8.5 is loaded"
    assert len(gpus) == 8
    assert {gpu["name"] for gpu in gpus} == {"gfx942"}
    assert {gpu["marketing_name"] for gpu in gpus} == {"AMD Instinct MI300X"}
    assert [gpu["node"] for gpu in gpus] == list(range(2, 10))
    assert gpus[0]["uuid"] == "GPU-07386a321fa45d1e"
    assert gpus[-1]["uuid"] == "GPU-6f890acb8eb0492b"
    assert len({gpu["uuid"] for gpu in gpus}) == 8
    assert [gpu["pci_bdf"] for gpu in gpus] == [
        f"{bus}:00.0" for bus in ("1b", "3d", "4e", "5f", "9d", "bd", "cd", "dd")
    ]
    assert all(gpu["isa"] == ["amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"] for gpu in gpus)
    assert all(gpu["chip_id"] == "0x74a1" and gpu["compute_units"] == 304 for gpu in gpus)


def test_rocminfo_igpu_beside_dgpu_reports_both_and_flags_the_apu():
    gpus = agents("rx9070xt_igpu_gfx1036.txt", 0)["gpus"]
    assert [(g["name"], g["marketing_name"], g["apu"]) for g in gpus] == [
        ("gfx1201", "AMD Radeon RX 9070 XT", False),
        ("gfx1036", "AMD Radeon Graphics", True),
    ]
    assert gpus[0]["isa"] == ["amdgcn-amd-amdhsa--gfx1201", "amdgcn-amd-amdhsa--gfx12-generic"]
    assert gpus[1]["isa"] == ["amdgcn-amd-amdhsa--gfx1036", "amdgcn-amd-amdhsa--gfx10-3-generic"]
    assert gpus[1]["uuid"] == "GPU-XX"
    assert (gpus[0]["pci_bdf"], gpus[1]["pci_bdf"]) == ("03:00.0", "76:00.0")


@pytest.mark.parametrize(
    ("name", "rc", "status", "message"),
    [
        ("not_loaded.txt", 1, "not_loaded", "ROCk module is NOT loaded, possibly no GPU devices"),
        ("not_live.txt", 1, "not_loaded", "ROCk module is NOT live, possibly no GPU devices"),
        (
            "kfd_permission_denied.txt",
            1,
            "no_access",
            'Unable to open /dev/kfd read-write: Permission denied tux is not member of "render"',
        ),
        (
            "hsa_out_of_resources.txt",
            8,
            "error",
            "hsa api call failure at: /src/rocminfo/rocminfo.cc:1142",
        ),
    ],
)
def test_rocminfo_failures(name, rc, status, message):
    result = agents(name, rc)
    assert result["status"] == status
    assert result["rc"] == rc
    assert result["gpus"] == []
    assert message in result["message"]
    assert "\x1b" not in result["message"]


def test_rocminfo_error_on_nonzero_exit_even_with_agent_listing():
    # e.g. a crash in hsa_shut_down() after printing everything: do not trust the listing
    result = agents("rx7900xtx.txt", 139)
    assert result["status"] == "error"
    assert result["gpus"] == []
    assert "*** Done ***" in result["message"]


def test_rocminfo_timeout_is_reported():
    result = RocmAgents().process(["ROCk module is loaded", "__rc=124"])
    assert result["status"] == "error"
    assert result["message"].startswith("rocminfo timed out after 120s")


def test_rocminfo_absent_is_none_not_a_status():
    assert RocmAgents().process(["__absent"]) is None


def test_rocminfo_output_without_trailer_raises():
    with pytest.raises(FactProcessError):
        RocmAgents().process(["garbage"])


# ---------------------------------------------------------------------------------------
# RocmVersion
# ---------------------------------------------------------------------------------------


def test_rocm_version_parses_info_file():
    assert RocmVersion().process(lines(fixture("rocm", "version-6.4.3"))) == "6.4.3-128"
    assert RocmVersion().process(["", "  "]) is None


# ---------------------------------------------------------------------------------------
# sysfs: PciGpus / KfdNodes (commands run under dash against fixture trees)
# ---------------------------------------------------------------------------------------
