"""Discovery end to end (issue 38): a release added only to the stored copy of AMD's release
history goes through ``tools/matrix_update.py --stored``, and the data it writes prints in
``rocm-fleet matrix`` and ``matrix --json`` (each origin the tool writes has its text in the
data); a site file's rows show there too, marked as the site's; without a driver entry the
release stays refused for dkms, naming AMD's driver list."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rocm_fleet.cli import main
from rocm_fleet.matrix import generate, inputs
from rocm_fleet.model import matrix, site_data, upstream_data

ROOT = Path(__file__).resolve().parents[3]
STORED = ROOT / "tests" / "fixtures" / "upstream" / "stored"
# A Core SDK release AMD has not published (synthetic), as versions.rst would list it.
NEW = "   * - `10.2.0 <https://rocm.docs.amd.com/en/docs-10.2.0>`__\n     - December 1, 2026\n\n"


def discovered(tmp_path: Path) -> dict:
    """upstream_data.json as the tool writes it from the stored copies plus 10.2.0."""
    stored = Path(shutil.copytree(STORED, tmp_path / "stored"))
    history = stored / "versions.rst"
    text = history.read_text()
    first = text.index("   * - `10.1.0")
    history.write_text(text[:first] + NEW + text[first:])
    out = tmp_path / "upstream_data.json"
    assert generate.main(["--stored", str(stored), "--output", str(out)]) == 0
    return json.loads(out.read_text())


@pytest.fixture
def with_discovered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The product reading the discovered data instead of the committed one."""
    data = discovered(tmp_path)
    rows = tuple(matrix._release_row(row) for row in data["releases"])
    monkeypatch.setattr(upstream_data, "RELEASES", data["releases"])
    monkeypatch.setattr(upstream_data, "ORIGINS", data["origins"])
    monkeypatch.setattr(matrix, "RELEASES", rows)
    monkeypatch.setattr(matrix, "_BY_VERSION", {r.version: r for r in rows})
    return data


def test_the_tool_writes_the_discovered_row_and_a_text_for_every_origin(tmp_path: Path):
    data = discovered(tmp_path)
    (row,) = [r for r in data["releases"] if r["version"] == "10.2.0"]
    assert row["from"]["row"] == inputs.FROM_HISTORY
    assert (row["stream"], row["repository"], row["amdgpu_driver"]) == (
        "core-sdk", "stable.repo.amd.com", None)  # fmt: skip
    # every origin a row names is one the data itself gives a text for (or "as <release>")
    for rel in data["releases"]:
        for origin in rel["from"].values():
            assert origin in data["origins"] or origin.startswith("as "), (rel, origin)


def test_a_discovered_release_prints_in_matrix_and_matrix_json(with_discovered, capsys):
    assert main(["matrix"]) == 0
    table = capsys.readouterr().out
    assert any(line.startswith("10.2.0 ") for line in table.splitlines()), table
    assert "AMD's release history; distros: AMD's os-support.yaml" in table
    assert main(["matrix", "--json"]) == 0
    releases = {r["version"]: r for r in json.loads(capsys.readouterr().out)["releases"]}
    new = releases["10.2.0"]
    assert new["source"]["from"]["row"] == inputs.FROM_HISTORY
    assert new["source"]["text"].startswith("AMD's release history")
    assert new["amdgpu_driver"] is None
    # no driver entry in AMD's driver list: named, for the dkms refusal
    assert matrix.missing_driver(matrix.release("10.2.0")) == (
        "AMD's driver list, ROCm/rocm-docs docs/data/driver-firmware-support.yaml @ 9bcf25db, "
        "has no entry for it: its newest is 31.60.0 (ROCm 10.1.0's)"
    )


def test_an_origin_the_data_does_not_name_prints_as_itself(monkeypatch, capsys):
    monkeypatch.setattr(upstream_data, "ORIGINS", {})
    assert main(["matrix"]) == 0
    assert "[1] AMD compatibility table; torch: PyTorch RELEASE.md" in capsys.readouterr().out


SITE_ROW = {
    "version": "10.9.0", "stream": "core-sdk", "repository": "stable.repo.amd.com",
    "torch_index": None, "amdgpu_driver": None,
    "amd_wheels": {"builds": [["2.15.0", "0.30.0", None]], "targets": ["gfx942"],
                   "target_builds": {}},
}  # fmt: skip


def test_a_site_files_rows_show_in_matrix_and_json_marked_as_the_sites(
    tmp_path: Path, monkeypatch, capsys
):
    path = tmp_path / "site-matrix.json"
    path.write_text(json.dumps({"format": site_data.FORMAT, "releases": [SITE_ROW]}))
    site = site_data.load(path)
    assert main(["matrix", "--json", "--site-data", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["site_data"] == site.provenance
    last = data["releases"][-1]
    assert last["version"] == "10.9.0"
    assert last["source"]["from"] == "site" and last["source"]["site"] == str(path)
    assert last["source"]["citation"] == site.provenance
    assert [b["torch"] for b in last["torch_builds"]] == ["2.15.0"]
    assert all(r["source"]["from"] != "site" for r in data["releases"][:-1])
    # the environment names it as the deploy's does; the table's footnote names the file
    monkeypatch.setenv(site_data.ENVIRONMENT, str(path))
    monkeypatch.setenv("COLUMNS", "1000")  # the path's footnote on one line
    assert main(["matrix"]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("10.9.0 "))
    note = re.search(r"\[\d+\]", row).group(0)
    assert f"  {note} site matrix data {path}" in table
    # without one, no site row
    monkeypatch.delenv(site_data.ENVIRONMENT)
    assert main(["matrix", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["site_data"] is None


def test_a_site_file_that_is_not_one_is_a_usage_error(tmp_path: Path, capsys):
    path = tmp_path / "bad.json"
    path.write_text("{}")
    assert main(["matrix", "--site-data", str(path)]) == 4
    assert f"--site-data: site matrix data {path}" in capsys.readouterr().err
