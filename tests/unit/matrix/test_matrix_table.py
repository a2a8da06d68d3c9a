"""``rocm-fleet matrix``'s table on screens 60, 100 and 160 columns wide: the columns that
don't fit folded into tables below, each release's GPU targets wrapped, the legend wrapped;
``matrix --json`` carries the GPU targets too (matrix.release_table, cli.tables.folded)."""

from __future__ import annotations

import pytest

from rocm_fleet.cli.tables import folded
from rocm_fleet.matrix.release_table import gpu_targets, matrix_json, plain_table
from rocm_fleet.model import matrix
from rocm_fleet.model.gpu_targets import GPU_TARGETS


def panels(text: str) -> list[list[str]]:
    """The tables of ``text`` (before the legend), each a list of lines, header first."""
    tables = text.split("\n\n")
    return [table.splitlines() for table in tables[:-1]]


def targets_by_release(text: str) -> dict[str, str]:
    """release -> its GPU targets cell, wrapped lines joined."""
    (table,) = [t for t in panels(text) if "GPU targets" in t[0]]
    start = table[0].index("GPU targets")
    found: dict[str, str] = {}
    for line in table[1:]:
        if line[:1].strip():
            release = line.split()[0]
            found[release] = line[start:].strip()
        else:
            found[release] += " " + line[start:].strip()
    return found


@pytest.mark.parametrize(("width", "tables"), [(60, 3), (100, 2), (160, 1)])
def test_the_table_fits_the_width_and_shows_every_releases_gpu_targets(width, tables):
    text = plain_table(width=width)
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines), [ln for ln in lines if len(ln) > width]
    found = panels(text)
    assert len(found) == tables
    versions = [rel.version for rel in matrix.RELEASES]
    for table in found:  # each led by the release, every release in each
        assert table[0].split()[0] == "ROCm"
        assert [line.split()[0] for line in table[1:] if line[:1].strip()] == versions
    targets = targets_by_release(text)
    assert targets == {rel.version: " ".join(gpu_targets(rel)) for rel in matrix.RELEASES}
    # the legend says what the column is, wrapped too
    assert "GPU targets: the gfx targets AMD lists for the release" in text


def test_gpu_targets_are_the_ones_the_matrix_lists_for_the_release():
    for rel in matrix.RELEASES:
        listed = gpu_targets(rel)
        assert listed and all(rel.lists_gpu(gfx) for gfx in listed), rel.version
        others = [t.gfx for t in GPU_TARGETS if t.gfx not in listed]
        assert not any(rel.lists_gpu(gfx) for gfx in others), rel.version
    # the Core SDK lists the Ryzen APUs, ROCm 6.0 doesn't list gfx950 (MI350)
    assert "gfx1151" in gpu_targets(matrix.release("7.14.0"))
    assert "gfx950" not in gpu_targets(matrix.release("6.0.0"))


def test_matrix_json_carries_each_releases_gpu_targets():
    releases = {row["version"]: row for row in matrix_json()["releases"]}
    for rel in matrix.RELEASES:
        assert releases[rel.version]["gpu_targets"] == gpu_targets(rel)


def test_folded_keeps_the_lead_column_and_wraps_only_the_last():
    headers = ["KEY", "ALPHA", "BETA", "NOTES"]
    rows = [["k1", "a" * 20, "b" * 20, "one two three four five six seven"],
            ["k2", "a", "b", "x"]]  # fmt: skip
    wide = folded(headers, rows, 200).splitlines()
    assert len(wide) == 3 and wide[1].endswith("one two three four five six seven")
    narrow = folded(headers, rows, 30)
    tables = narrow.split("\n\n")
    assert [t.split()[:2] for t in tables] == [["KEY", "ALPHA"], ["KEY", "BETA"], ["KEY", "NOTES"]]
    assert all(len(line) <= 30 for line in narrow.splitlines())
    assert "a" * 20 in narrow and "b" * 20 in narrow  # whole, not clipped
    last = tables[-1].splitlines()
    assert " ".join(line[4:].strip() for line in last[1:-1]) == rows[0][3]
