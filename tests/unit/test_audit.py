"""The audit's rows, table and exit status from survey data (tasks/audit.py)."""

from __future__ import annotations

import pytest

from rocm_fleet.audit import exit_status, host_row, render_table
from rocm_fleet.config import load_config
from unit.surveys import fresh_survey

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
CONVERGED = {
    "rocm_version": "6.4.3-128",
    "pin": True,
    "amdgpu": {"loaded": True, "version": None, "initstate": "live"},
    "pci": [{"slot": "0000:03:00.0", "device": "0x744c", "class": "0x030000",
             "driver": "amdgpu"}],
    "groups": {"alice": ["alice", "video", "render"]},
    "torch": {"torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+rocm6.4", "torchaudio": None,
              "hip": "6.4.43482", "cuda": None, "error": None},
}  # fmt: skip


def row(data=None, **survey):
    return host_row(
        load_config({**DATA, **(data or {})}, "n"), fresh_survey(**{**CONVERGED, **survey})
    )


def test_converged_host_has_no_drift():
    result = row()
    assert result["status"] == "ok" and result["drift"] == []
    assert result["cells"]["torch"]["text"] == "2.9.1+rocm6.4 / 2.9.1+rocm6.4 (hip 6.4.43482)"
    assert result["cells"]["gpus"]["text"] == "1 x gfx1100 / 1 x gfx1100"


@pytest.mark.parametrize(
    ("survey", "drifted"),
    [
        ({"pin": False}, ["pin"]),
        ({"rocm_version": "7.2.1-81"}, ["rocm"]),
        ({"rocm_version": None}, ["rocm"]),
        ({"torch": {"torch": "2.9.1+cu128", "hip": None, "cuda": "12.8"}}, ["torch"]),
        ({"groups": {"alice": ["alice", "video"]}}, ["groups"]),
        ({"groups": {"alice": None}}, ["groups"]),
        ({"pci": [], "amdgpu": {"loaded": False}}, ["gpus"]),
        ({"reboot_required": True}, ["reboot"]),
        ({"pci": [{"slot": "0000:03:00.0", "device": "0x744c", "class": "0x030000",
                   "driver": None}]}, ["driver"]),
        ({"secure_boot": {"state": "enabled"}, "packages": {"amdgpu-dkms": "1:6.12"},
          "mok": {"dkms": {"state": "pending"}, "shim": {"state": "missing"}}},
         ["secure_boot"]),
    ],
)  # fmt: skip
def test_each_kind_of_drift_marks_its_cell(survey, drifted):
    assert row(**survey)["drift"] == drifted


def test_newer_installed_kernel_is_shown_not_drift():
    result = row(kernel="6.1.0-28-amd64", kernels=["6.1.0-28-amd64", "6.1.0-31-amd64"])
    assert result["cells"]["kernel"]["text"] == "6.1.0-28-amd64 (newer installed: 6.1.0-31-amd64)"
    assert result["drift"] == []


def test_exit_status_and_table_marks():
    ok = {"host": "a", **row()}
    drifted = {"host": "b", **row(pin=False)}
    gone = {"host": "c", "status": "unreachable", "error": "refused", "drift": [], "cells": {}}
    assert exit_status([ok]) == 0
    assert exit_status([ok, drifted]) == 1
    assert exit_status([ok, drifted, gone]) == 2
    table = render_table([ok, drifted, gone]).splitlines()
    assert table[0].startswith("HOST") and "! missing" in table[2] and "!" not in table[1]
    assert table[3] == "c  ! UNREACHABLE: refused"
    assert table[-1] == "3 hosts: 1 as the inventory says, 1 drifted, 1 unreachable/failed"
    assert "\x1b[1;31m" in render_table([drifted], colour=True)
