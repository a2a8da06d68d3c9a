"""The stored upstream copies (tests/fixtures/upstream/stored/): each has its provenance in
SOURCES.toml, tools/matrix_update.py reads them as it reads AMD's originals, and what it reads
is what the recorded facts (rocm-docs.toml) and the committed data (upstream_data.json) say."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from rocm_fleet.matrix import amd_tables, generate, inputs
from rocm_fleet.matrix import device_tables as records

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
    if "commit" in entry:
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), (name, entry["commit"])
        assert entry["upstream"].startswith(
            f"https://github.com/{entry['repo']}/blob/{entry['commit']}/"
        )
    else:  # a record read from a copy that doesn't name its commit: says so, names the copy
        assert entry["commit_unknown"] and entry["copy"], name
        assert entry["upstream"] == f"https://github.com/{entry['repo']}/blob/main/{entry['path']}"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["read"])
    assert entry["form"]


def test_sources_lists_no_file_that_is_not_stored():
    assert set(SOURCES) <= {p.name for p in STORED.iterdir()}


def test_release_list_copy_gives_the_recorded_release_dates():
    history = amd_tables.release_history(_stored("versions.rst"))
    recorded = {k: v for k, v in RECORDED["release_history"].items() if k != "source"}
    from_600 = {v: d for v, d in history.items() if inputs.version_key(v) >= (6, 0, 0)}
    assert from_600 == recorded
    assert SOURCES["versions.rst"]["commit"].startswith(RECORDED["release_history"]["source"][-8:])


def test_driver_list_copy_gives_the_recorded_drivers():
    drivers = amd_tables.amd_drivers(_stored("driver-firmware-support.yaml"))
    assert list(drivers) == RECORDED["amdgpu_drivers"]["versions"]
    assert SOURCES["driver-firmware-support.yaml"]["commit"].startswith(
        RECORDED["amdgpu_drivers"]["source"][-8:]
    )


def test_gpu_list_excerpt_gives_the_recorded_targets():
    products = amd_tables.gpu_products(_stored("gpus.yaml"))
    assert set(products) == set(RECORDED["gpu_list"]["gfx"])
    assert products["gfx950"]["AMD Instinct"] == [
        "AMD Instinct MI355X", "AMD Instinct MI350X", "AMD Instinct MI350P"
    ]  # fmt: skip


def test_os_support_excerpt_gives_the_committed_core_sdk_listing():
    data = json.loads((REPO / "tasks" / "rocm_fleet" / "model" / "upstream_data.json").read_text())
    listing = amd_tables.os_support(_stored("os-support.yaml"))
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


def _check(stored: Path, capsys) -> list[str]:
    """``matrix_update.py --stored DIR --check`` against the committed data: its lines."""
    output = REPO / "tasks" / "rocm_fleet" / "model" / "upstream_data.json"
    status = generate.main(["--stored", str(stored), "--output", str(output), "--check"])
    lines = capsys.readouterr().out.splitlines()
    assert status == (1 if lines != ["upstream data unchanged"] else 0)
    return lines


def test_the_stored_inputs_reproduce_the_committed_upstream_data(capsys):
    lines = _check(STORED, capsys)
    assert lines[0] == "upstream data unchanged"
    # what upstream publishes and the data lacks is reported, not a difference
    assert all(line.startswith("upstream has: ") for line in lines[1:]), lines


@pytest.fixture
def stored_copy(tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(STORED, tmp_path / "stored"))


def test_a_changed_cell_of_amds_table_names_the_release_field_and_source(stored_copy, capsys):
    record = stored_copy / "compatibility-matrix-historical.toml"
    text = record.read_text()
    # the GPU section's first row: gfx950 in the 7.2.0 column, AMD drops it
    record.write_text(text.replace('  ["gfx950", "gfx950",', '  ["", "gfx950",', 1))
    lines = _check(stored_copy, capsys)
    changed = [line for line in lines if line.startswith("releases 7.2.0 gfx:")]
    assert len(changed) == 1, lines
    assert '"gfx950", ' in changed[0].split(" -> ")[0]
    assert "gfx950" not in changed[0].split(" -> ")[1]
    assert changed[0].endswith("[AMD compatibility table]")


def test_a_changed_row_of_pytorchs_matrix_moves_the_index_of_its_releases(stored_copy, capsys):
    record = stored_copy / "pytorch-release-matrix.toml"
    record.write_text(record.read_text().replace('["2.14", "ROCm 7.14"]', '["2.14", "ROCm 7.2"]'))
    lines = _check(stored_copy, capsys)
    assert 'torch_stable_rocm 2.14: "7.14" -> "7.2"' in lines
    assert (
        'releases 7.14.0 torch_index: "rocm7.14" -> null  [PyTorch RELEASE.md (names no '
        "index for it)]" in lines
    )


def test_a_stored_input_without_a_citation_is_refused(stored_copy, capsys):
    sources = stored_copy / "SOURCES.toml"
    sources.write_text(sources.read_text().replace(
        'cite = "ROCm/rocm-docs docs/data/gpus.yaml @ 793e0c2e"\n', "", 1))  # fmt: skip
    status = generate.main(["--stored", str(stored_copy), "--check"])
    assert status == 2
    assert "[files.'gpus.yaml'] input 'gpu-list' needs a cite" in capsys.readouterr().err


def test_the_records_are_what_the_tool_makes_of_the_inputs_they_record():
    """Each record renders back into a file the tool reads to the same facts, and recording
    that rendering gives the record again (the records aren't edited by hand)."""
    for name, kind in (("compatibility-matrix-historical.toml", "historical-csv"),
                       ("pytorch-release-matrix.toml", "pytorch-release")):  # fmt: skip
        make, render = records.RECORD_KINDS[kind]
        body = _stored(name)
        body = body[body.index("columns = ") :]
        assert make(render(body)) == body, name
