"""Ryzen APUs are hosts preflight can name: their integrated GPUs' PCI IDs map to their gfx
targets (pci_ids.py, recorded with sources in tests/fixtures/upstream/gpus.toml) and
preflight says what the APU is and how its memory works."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rocm_fleet.model import gpu_targets, matrix, pci_ids, streams
from rocm_fleet.model.config import load_config
from rocm_fleet.model.findings import findings
from rocm_fleet.model.host_survey import describe_gpus, gpus_found
from unit.surveys import fresh_survey


def _igpu(device: str, pci_class: str = "0x038000") -> dict:
    return {"slot": "0000:c5:00.0", "vendor": "0x1002", "device": device, "class": pci_class,
            "driver": None}  # fmt: skip


@pytest.mark.parametrize(
    ("device", "gfx", "model"),
    [("0x1586", "gfx1151", "Strix Halo"), ("0x150e", "gfx1150", "Strix Point"),
     ("0x1114", "gfx1152", "Krackan Point"), ("0x15bf", "gfx1103", "Phoenix")],
)  # fmt: skip
def test_preflight_names_the_apu_by_model_and_gfx_target(device, gfx, model):
    assert pci_ids.lookup(device).gfx == gfx
    survey = fresh_survey("debian-13", kernel="6.12.48+deb13-amd64", pci=[_igpu(device)])
    assert [g["gfx"] for g in gpus_found(survey)] == [gfx]
    config = load_config({"rocm_version": "10.1.0", "expected_gfx": gfx,
                          "pytorch_install": False})  # fmt: skip
    result = findings(config, survey)
    (note,) = [w for w in result.warnings if "integrated GPU of a Ryzen APU" in w]
    assert note.startswith(f"{gfx} at 0000:c5:00.0 is the integrated GPU of a Ryzen APU: ")
    assert model in note and f"[1002:{device[2:]}]" in note
    assert "system memory" in note and "Ubuntu 26.04 and 24.04.4" in note
    # Debian is not listed for Ryzen (os-support.yaml): the Debian warning names the models.
    assert any(f"{gfx} on it is unofficial" in w for w in result.warnings), result.warnings


def test_apus_are_ryzen_targets_the_core_sdk_packages_and_no_classic_release_lists():
    for gfx in ("gfx1151", "gfx1150", "gfx1152", "gfx1103"):
        target = gpu_targets.gpu_target(gfx)
        assert target.family == "ryzen" and target.supported_from is None
        assert gfx in streams.CORE_SDK_GFX_PACKAGES
        assert matrix.release("10.1.0").lists_gpu(gfx)
        assert not matrix.release("7.2.4").lists_gpu(gfx)


def test_preflight_and_the_audit_say_an_apus_carve_out_and_gtt_in_gib():
    # amdgpu's totals as PciGpus reads them from a real Strix Halo (tests/fixtures/sysfs/
    # strixhalo): a 4 GiB VRAM carve-out, 96 GiB of GTT.
    igpu = _igpu("0x1586") | {"driver": "amdgpu", "vram_total": 4294967296,
                              "gtt_total": 103079215104}  # fmt: skip
    survey = fresh_survey("debian-13", kernel="6.12.48+deb13-amd64", pci=[igpu])
    (gpu,) = gpus_found(survey)
    assert gpu["apu"] and (gpu["vram_total"], gpu["gtt_total"]) == (4 * 2**30, 96 * 2**30)
    assert describe_gpus([gpu]) == "1 x gfx1151 (APU: 4.0 GiB VRAM carve-out, 96.0 GiB GTT)"
    config = load_config({"rocm_version": "10.1.0", "expected_gfx": "gfx1151",
                          "pytorch_install": False})  # fmt: skip
    (note,) = [w for w in findings(config, survey).warnings if "Ryzen APU" in w]
    assert "its VRAM is a 4.0 GiB carve-out of system memory and its GTT 96.0 GiB" in note
    # the same KFD node, as when amdgpu is loaded: the memory comes from its PCI device
    kfd = [{"node": 1, "gfx": "gfx1151", "device_id": "0x1586", "slot": "0000:c5:00.0"}]
    assert gpus_found(replace(survey, kfd=kfd)) == [gpu]
    # a discrete card is no APU and gets no memory text
    dgpu = {"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x744c",
            "class": "0x030000", "driver": "amdgpu"}  # fmt: skip
    (card,) = gpus_found(fresh_survey("debian-13", pci=[dgpu]))
    assert not card["apu"] and describe_gpus([card]) == "1 x gfx1100"
    # without amdgpu's files (no driver bound) the APU still says what it is
    bare = gpus_found(fresh_survey("debian-13", pci=[_igpu("0x1586")]))
    assert describe_gpus(bare) == "1 x gfx1151 (APU: memory not read (amdgpu not bound))"
