"""Ryzen APUs are hosts preflight can name: their integrated GPUs' PCI IDs map to their gfx
targets (pci_ids.py, recorded with sources in tests/fixtures/upstream/gpus.toml) and
preflight says what the APU is and how its memory works."""

from __future__ import annotations

import pytest

from rocm_fleet.model import matrix, pci_ids
from rocm_fleet.model.config import load_config
from rocm_fleet.model.findings import findings, gpus_found
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
        target = matrix.gpu_target(gfx)
        assert target.family == "ryzen" and target.supported_from is None
        assert gfx in matrix.CORE_SDK_GFX_PACKAGES
        assert matrix.release("10.1.0").lists_gpu(gfx)
        assert not matrix.release("7.2.4").lists_gpu(gfx)
