"""The stored upstream copies (tests/fixtures/upstream/stored/): each has its provenance in
SOURCES.toml, tools/matrix_update.py reads them as it reads AMD's originals, and what it reads
is what the recorded facts (rocm-docs.toml) and the committed data (upstream_data.json) say."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from unit.test_matrix_update import tool

REPO = Path(__file__).resolve().parents[2]
STORED = REPO / "tests" / "fixtures" / "upstream" / "stored"
RECORDED = tomllib.loads((STORED.parent / "rocm-docs.toml").read_text())
SOURCES = tomllib.loads((STORED / "SOURCES.toml").read_text())["files"]


def _stored(name: str) -> str:
    return (STORED / name).read_text()


@pytest.mark.parametrize(
    "name", sorted(p.name for p in STORED.iterdir() if p.name != "SOURCES.toml")
)
def test_every_stored_file_names_its_repository_path_and_commit(name):
    entry = SOURCES.get(name)
    assert entry is not None, f"{name} is not listed in stored/SOURCES.toml"
    assert re.fullmatch(r"[\w.-]+/[\w.-]+", entry["repo"]), (name, entry["repo"])
    assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), (name, entry["commit"])
    assert entry["upstream"].startswith(
        f"https://github.com/{entry['repo']}/blob/{entry['commit']}/"
    )
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["read"])
    assert entry["form"]


def test_sources_lists_no_file_that_is_not_stored():
    assert set(SOURCES) <= {p.name for p in STORED.iterdir()}


def test_release_list_copy_gives_the_recorded_release_dates():
    history = tool.release_history(_stored("versions.rst"))
    recorded = {k: v for k, v in RECORDED["release_history"].items() if k != "source"}
    from_600 = {v: d for v, d in history.items() if tool._version_key(v) >= (6, 0, 0)}
    assert from_600 == recorded
    assert SOURCES["versions.rst"]["commit"].startswith(RECORDED["release_history"]["source"][-8:])


def test_driver_list_copy_gives_the_recorded_drivers():
    drivers = tool.amd_drivers(_stored("driver-firmware-support.yaml"))
    assert list(drivers) == RECORDED["amdgpu_drivers"]["versions"]
    assert SOURCES["driver-firmware-support.yaml"]["commit"].startswith(
        RECORDED["amdgpu_drivers"]["source"][-8:]
    )


def test_gpu_list_excerpt_gives_the_recorded_targets():
    products = tool.gpu_products(_stored("gpus.yaml"))
    assert set(products) == set(RECORDED["gpu_list"]["gfx"])
    assert products["gfx950"]["AMD Instinct"] == [
        "AMD Instinct MI355X", "AMD Instinct MI350X", "AMD Instinct MI350P"
    ]  # fmt: skip


def test_os_support_excerpt_gives_the_committed_core_sdk_listing():
    data = json.loads((REPO / "tasks" / "rocm_fleet" / "model" / "upstream_data.json").read_text())
    listing = tool.os_support(_stored("os-support.yaml"))
    assert listing["families"] == data["os_families"]
    assert listing["per_model"] == data["core_sdk_debian"]
    assert SOURCES["os-support.yaml"]["commit"].startswith(data["sources"]["os_support"][-8:])


def test_pci_record_gfx_rows_are_in_preflights_table():
    from rocm_fleet.model import pci_ids

    record = tomllib.loads(_stored("pci-ids-amd.toml"))
    for device, row in record["apu"].items():
        if not isinstance(row, dict):
            continue
        known = pci_ids.lookup(device)
        if row["gfx"]:
            assert known is not None and known.gfx == row["gfx"], device
            assert known.name == row["name"], device
        else:
            assert known is None, f"{device} has no gfx from AMD's table, yet preflight maps it"
    assert pci_ids.lookup("0x75a8").gfx == "gfx950"
