"""The matrix's tables as data files: the updater, run on the stored upstream records and the
cited overrides, reproduces the committed files exactly; a changed record shows as a diff
naming the row and its source; overrides without a citation, or against a record, refused."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from rocm_fleet.matrix import amd_tables, generate, inputs, tables
from rocm_fleet.matrix import upstream as releases
from rocm_fleet.model import gpu_targets, matrix, streams, torch_builds, upstream_data

ROOT = Path(__file__).resolve().parents[3]
RECORDS = ROOT / "tests" / "fixtures" / "upstream"
OVERRIDES = ROOT / "tools" / "matrix_overrides.toml"
DATA = ROOT / "tasks" / "rocm_fleet" / "model"


@pytest.fixture
def records(tmp_path: Path) -> Path:
    """A copy of the stored records, to change a recorded fact in."""
    return Path(shutil.copytree(RECORDS, tmp_path / "upstream"))


def test_the_update_reproduces_the_committed_data_files(tmp_path: Path):
    built = tables.build_tables(RECORDS, OVERRIDES)
    written = tables.write_data(built.tables, tmp_path)
    assert sorted(p.name for p in written) == sorted(tables.TABLE_FILES)
    for path in written:
        assert path.read_text() == (DATA / path.name).read_text(), path.name
    assert tables.table_diff(tables.read_data(DATA), built.tables) == []
    # what PyTorch's own build matrix (pytorch/test-infra) says it built for an index is in
    # that index's row, each build cited; the committed data has all of it: nothing to note
    assert built.notes == ()
    rows = {row["index"]: row for row in upstream_data.TORCH_BUILD_ROWS["indexes"]}
    wanted = {"rocm6.0": ["2.4.0", "2.4.1"], "rocm6.2.4": ["2.7.0", "2.7.1"],
              "rocm6.3": ["2.8.0", "2.9.0", "2.9.1"], "rocm7.1": ["2.12.1"]}  # fmt: skip
    for index, versions in wanted.items():
        row = rows[index]
        assert set(versions) <= {b[0] for b in row["builds"]}, index
        assert row["from"].endswith("+ stored/pytorch-rocm-builds.toml"), row["from"]
        for version in versions:
            assert row["built_for"][version].startswith(
                "pytorch/test-infra generate_binary_build_matrix.py @ "
            ), (index, version)
    # paired as the other indexes record the same torch (2.8.0's: rocm6.4's)
    assert ["2.8.0", "0.23.0", "2.8.0"] in rows["rocm6.3"]["builds"]
    assert rows["rocm6.3"]["built_for"]["2.8.0"] == (
        "pytorch/test-infra generate_binary_build_matrix.py @ 21480431 (release channel: 6.3, 6.4)"
    )
    # AMD's own index for 7.14.x (whl-multi-arch): the builds its install pages name
    amd = {row["release"]: row for row in upstream_data.TORCH_BUILD_ROWS["amd_wheels"]}
    assert amd["7.14.1"]["url"] == "https://repo.amd.com/rocm/whl-multi-arch/"
    assert amd["7.14.1"]["builds"][-1] == ["2.12.0", "0.27.0", "2.11.0"]
    assert [b[0] for b in amd["7.14.0"]["builds"]] == ["2.10.0", "2.11.0", "2.12.0"]
    assert matrix.release("7.14.1").torch_index == "rocm7.14"  # the host's torch: PyTorch's
    # the candidate (built, not yet stable) is cited, and adds nothing
    assert rows["rocm7.14"]["built_for"] == {"2.14.0": (
        "pytorch/test-infra generate_binary_build_matrix.py @ 00fa5780 (test channel, the "
        "candidate: 7.2, 7.14)")}  # fmt: skip


def test_the_tool_checks_the_committed_files(capsys):
    assert generate.main(["tables", "--check"]) == 0  # complete: the check passes
    assert capsys.readouterr().out.splitlines() == ["matrix tables unchanged"]


def test_a_build_the_build_matrix_names_and_the_data_lacks_fails_the_check(records: Path, capsys):
    """The build matrix record names a new stable torch for rocm7.2: the check says which row
    gains it and exits 1; one no index record pairs is noted, also exit 1."""
    stored = records / "stored" / "pytorch-rocm-builds.toml"
    stored.write_text(stored.read_text() + '\n[stable."2.14.0"]\nrocm = ["7.2", "7.14"]\n'
                      'commit = "0123456789abcdef0123456789abcdef01234567"\n'
                      '\n[stable."2.99.0"]\nrocm = ["7.2"]\ncommit = "89abcdef"\n')  # fmt: skip
    assert generate.main(["tables", "--records", str(records), "--check"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("torch_builds.json indexes rocm7.2 built_for:") for line in out)
    assert ("upstream has: pytorch-rocm-builds.toml: torch 2.99.0 built for ROCm 7.2 "
            "(pytorch/test-infra generate_binary_build_matrix.py @ 89abcdef (release channel: "
            "7.2)); no index record pairs a torchvision with it: record the index's listing in "
            'download.pytorch.org.toml [index."rocm7.2"]') in out  # fmt: skip


def test_a_changed_record_names_the_row_and_its_source(records: Path, tmp_path: Path, capsys):
    page = records / "download.pytorch.org.toml"
    text = page.read_text()
    old = 'builds = [["2.3.0", "0.18.0", "2.3.0"], ["2.3.1", "0.18.1", "2.3.1"]]'
    assert old in text
    page.write_text(text.replace(old, old.replace('"2.3.1", "0.18.1"', '"2.3.2", "0.18.2"')))
    shutil.copytree(DATA, tmp_path / "data", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    argv = ["tables", "--records", str(records), "--data-dir", str(tmp_path / "data")]
    assert generate.main([*argv, "--check"]) == 1
    out = [line for line in capsys.readouterr().out.splitlines() if "upstream has" not in line]
    assert out == [
        'torch_builds.json indexes rocm6.0 builds: [["2.3.0", "0.18.0", "2.3.0"], '
        '["2.3.1", "0.18.1", "2.3.1"], ["2.4.0", "0.19.0", "2.4.0"], ["2.4.1", "0.19.1", '
        '"2.4.1"]] -> [["2.3.0", "0.18.0", "2.3.0"], ["2.3.2", "0.18.2", "2.3.1"], '
        '["2.4.0", "0.19.0", "2.4.0"], ["2.4.1", "0.19.1", "2.4.1"]]  '
        '[download.pytorch.org.toml [index."rocm6.0"] + stored/pytorch-rocm-builds.toml: '
        "pytorch.org previous-versions: 2.3.0/2.3.1 with --index-url .../whl/rocm6.0]"
    ]
    # written, the committed copy then matches the record again
    assert generate.main(argv) == 0
    capsys.readouterr()
    generate.main([*argv, "--check"])
    assert capsys.readouterr().out.splitlines()[0] == "matrix tables unchanged"


def test_what_the_records_have_and_the_data_lacks_is_written_with_its_source(records: Path):
    page = records / "repo.amd.com-whl.toml"
    text = page.read_text()
    new = text.replace('[stable.release."10.1.0"]', '[stable.release."10.2.0"]', 1)
    page.write_text(new.replace("rocm10.1.0", "rocm10.2.0", 1))
    pytorch = records / "download.pytorch.org.toml"
    pytorch.write_text(
        pytorch.read_text()
        + '\n[index."rocm7.15"]\nbuilds = [["2.15.0", "0.30.0", ""]]\nsource = "a new index"\n'
    )
    built = tables.build_tables(records, OVERRIDES)
    diff = tables.table_diff(tables.read_data(DATA), built.tables)
    new_index = (
        'torch_builds.json indexes rocm7.15: new row  [download.pytorch.org.toml [index."rocm7.15"]'
        ": a new index]"
    )
    assert new_index in diff
    assert "torch_builds.json amd_wheels 10.1.0: row removed" in "\n".join(diff)
    new_release = (
        "torch_builds.json amd_wheels 10.2.0: new row  "
        '[repo.amd.com-whl.toml [stable.release."10.2.0"] (url: [stable]): docs-10.1'
    )
    assert any(line.startswith(new_release) for line in diff)


def test_a_gpu_the_records_have_and_the_data_lacks_is_reported(records: Path):
    gpus = records / "gpus.toml"
    gpus.write_text(gpus.read_text() + '\n[gfx1250]\nlisted_from = ""\npci = ["0x7600"]\n')
    built = tables.build_tables(records, OVERRIDES)
    assert len(built.notes) == 1
    assert built.notes[0].startswith("gpus.toml records gfx1250 (pci 0x7600; LLVM AMDGPUUsage")
    assert "add a [[gpu_target]]" in built.notes[0]


def test_an_override_without_a_source_is_refused(tmp_path: Path):
    overrides = tmp_path / "overrides.toml"
    overrides.write_text(
        OVERRIDES.read_text()
        + '\n[[inbox_min_kernel]]\ngfx = "gfx1250"\nkernel = "6.18"\nsource = " "\n'
    )
    refused = r"\[\[inbox_min_kernel\]\] gfx1250 has no source"
    with pytest.raises(inputs.MatrixDataError, match=refused):
        tables.build_tables(RECORDS, overrides)


def test_an_override_against_a_record_is_refused(tmp_path: Path):
    overrides = tmp_path / "overrides.toml"
    text = OVERRIDES.read_text()
    entry = 'id = "debian"\nversion = "12"\n'
    assert entry in text
    overrides.write_text(text.replace(entry, entry + 'suite = "noble"\n'))
    with pytest.raises(inputs.MatrixDataError) as err:
        tables.build_tables(RECORDS, overrides)
    assert str(err.value) == (
        f"{overrides}: [[distro]] debian 12: suite 'noble' contradicts repo.radeon.com.toml "
        "[suites] ('jammy'): drop the override"
    )


def test_every_row_names_its_source_and_the_matrix_reads_them():
    for table in tables.read_data(DATA):
        for section, rows in table.sections.items():
            assert rows, (table.name, section)
            for row in rows:
                assert row["from"] and str(row["source"]).strip(), (table.name, row)
    assert [t.gfx for t in gpu_targets.GPU_TARGETS] == [
        r["gfx"] for r in upstream_data.GPU_TARGET_ROWS
    ]
    assert [d.key for d in matrix.DISTROS] == [r["key"] for r in upstream_data.DISTRO_ROWS]
    rows = upstream_data.TORCH_BUILD_ROWS
    assert list(torch_builds.TORCH_INDEXES) == [r["index"] for r in rows["indexes"]]
    assert list(torch_builds.AMD_WHEELS) == [r["release"] for r in rows["amd_wheels"]]


def test_the_docs_show_where_each_row_comes_from():
    from rocm_fleet.matrix.release_table import sources_markdown

    text = (ROOT / "docs" / "supported-releases.md").read_text()
    block = re.search(r"<!-- source-tables -->\n(.*?)\n<!-- /source-tables -->", text, re.S)
    assert block, "docs/supported-releases.md lost its source-tables markers"
    assert block.group(1) == sources_markdown(), (
        "run `python -m rocm_fleet.matrix.command sources` and paste"
    )
    for row in upstream_data.GPU_TARGET_ROWS:
        assert f"| {row['gfx']} | {row['family']} |" in block.group(1)


def test_the_terminal_table_names_each_rows_source():
    from rocm_fleet.matrix.release_table import plain_table, source_text, sources_text

    lines = plain_table().splitlines()
    legend = dict(re.findall(r"^  \[(\d+)\] (.+)$", "\n".join(lines), re.M))
    for rel, line in zip(matrix.RELEASES, lines[1:], strict=False):
        assert line.split()[0] == rel.version
        note = re.search(r"\[(\d+)\]$", line)
        assert note and legend[note.group(1)] == source_text(rel), line
    text = sources_text()
    for row in upstream_data.TORCH_BUILD_ROWS["indexes"]:
        assert f"    from {row['from']}: {row['source']}" in text


def test_rocm_fleet_matrix_update_runs_the_same_update(records: Path, tmp_path: Path, capsys):
    from rocm_fleet.cli import main

    data = Path(shutil.copytree(DATA, tmp_path / "data", ignore=shutil.ignore_patterns("*.py")))
    argv = ["matrix", "update", "--records", str(records), "--overrides", str(OVERRIDES)]
    assert main([*argv, "--check"]) == 0  # the data this rocm-fleet reads
    assert capsys.readouterr().out == "matrix tables unchanged\n"
    page = records / "repo.radeon.com.toml"
    page.write_text(page.read_text().replace('"debian 13" = "noble"', '"debian 13" = "trixie"'))
    assert main(argv) == 4  # never writes the installed data unless told where
    assert "--data-dir: name the directory to write" in capsys.readouterr().err
    argv += ["--data-dir", str(data)]
    assert main([*argv, "--check"]) == 1
    # the one record gives the driver repository's suite (distros) and the classic stream's
    # publication (and, no longer noble, its first release: the first recorded); the row's
    # changed origin and citation follow
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        'distros.json distros debian 13 suite: "noble" -> "trixie"  '
        "[repo.radeon.com.toml [suites]]",
        'repositories.json publications classic debian 13 suite: "noble" -> "trixie"  '
        "[repo.radeon.com.toml [suites]]",
        'repositories.json publications classic debian 13 first_release: "6.2.0" -> "6.0.0"  '
        "[repo.radeon.com.toml [[release]] (the first)]",
    ]
    assert [line.split(":")[0] for line in out[3:]] == [
        "repositories.json publications classic debian 13 from",
        "repositories.json publications classic debian 13 source",
    ]
    assert main(argv) == 0
    written = [f"wrote {data / name}" for name in ("repositories.json", "pci_ids.json")]
    assert capsys.readouterr().out.splitlines()[-2:] == written
    assert json.loads((data / "distros.json").read_text())["distros"][4]["suite"] == "trixie"
    assert (DATA / "distros.json").read_text() != (data / "distros.json").read_text()
    (records / "gpus.toml").unlink()
    assert main([*argv, "--check"]) == 4
    assert "gpus.toml: [Errno 2]" in capsys.readouterr().err


def test_a_gpu_amds_list_has_and_the_data_lacks_is_written_from_it(records: Path):
    gpus = records / "stored" / "gpus.yaml"
    gpus.write_text(
        gpus.read_text().replace(
            "AMD Radeon:\n", "AMD Radeon:\n  AMD Radeon RX 9080 XT:\n    gfx: gfx1250\n", 1
        )
    )
    built = tables.build_tables(records, OVERRIDES)
    diff = tables.table_diff(tables.read_data(DATA), built.tables)
    upstream = (
        "AMD's GPU list, https://github.com/ROCm/rocm-docs/blob/"
        "793e0c2edf9cef63d320ef0e985f52c81e666ecb/docs/data/gpus.yaml (read 2026-12-04)"
    )
    assert diff == [
        f"gpu_targets.json gpu_targets gfx1250: new row  [stored/gpus.yaml: {upstream}]"
    ]
    rows = built.tables[0].sections["gpu_targets"]
    assert rows[-1] == {"gfx": "gfx1250", "family": "radeon", "products": "Radeon RX 9080 XT",
                        "from": "stored/gpus.yaml", "source": upstream}  # fmt: skip
    assert [n for n in built.notes if n.startswith("stored/gpus.yaml")] == [
        "stored/gpus.yaml lists gfx1250 (radeon: Radeon RX 9080 XT), which the matrix lacked: "
        f"written from it ({upstream}); review, and name its products in a [[gpu_target]] "
        "override if AMD's names need more",
    ]


def test_a_family_override_where_amds_list_gives_one_is_refused(tmp_path: Path):
    overrides = tmp_path / "overrides.toml"
    text = OVERRIDES.read_text()
    entry = '[[gpu_target]]\ngfx = "gfx1030"\n'
    assert entry in text
    overrides.write_text(text.replace(entry, entry + 'family = "instinct"\n'))
    with pytest.raises(inputs.MatrixDataError) as err:
        tables.build_tables(RECORDS, overrides)
    assert str(err.value) == (
        f"{overrides}: [[gpu_target]] gfx1030: family 'instinct', but stored/gpus.yaml gives "
        "it ('radeon'): drop the override's family"
    )


def test_a_changed_signing_key_record_is_a_diff_naming_its_source(records: Path):
    keys = records / "keys.toml"
    old = 'fingerprint = "D0F004A0025A1145C7807FCD0701EAC4D5E02107"'
    assert old in keys.read_text()
    keys.write_text(keys.read_text().replace(old, f'fingerprint = "{"A" * 40}"'))
    built = tables.build_tables(records, OVERRIDES)
    diff = tables.table_diff(tables.read_data(DATA), built.tables)
    assert diff == [
        'repositories.json streams core-sdk key_fingerprint: "D0F004A0025A1145C7807FCD0701EAC4D5E'
        f'02107" -> "{"A" * 40}"  [keys.toml [amd]; repo.amd.com.toml [release_file]: '
        "ROCm/TheRock build_tools/packaging/linux/build_repo_package.py EXPECTED_KEY_FINGERPRINT "
        "(PR #7269); Origin: ROCm/TheRock build_tools/packaging/linux/build_package_repo.py @ "
        "0f6cec14 (generate_release_file_with_checksums) (read from AMD's repository builder, "
        "not from a live Release file)]"
    ]
    assert streams.CORE_SDK.key_fingerprint == "D0F004A0025A1145C7807FCD0701EAC4D5E02107"
    assert [r.base_url for r in streams.REPOSITORIES] == [
        r["base_url"] for r in upstream_data.REPOSITORY_ROWS["repositories"]
    ]


def test_what_each_stream_publishes_is_a_cited_row_the_streams_read(records: Path):
    rows = upstream_data.REPOSITORY_ROWS
    for stream in streams.STREAMS:
        published = [r for r in rows["publications"] if r["stream"] == stream.name]
        assert [(p.distro, p.suite, p.directory, p.first_release, p.instinct_only)
                for p in stream.publications] == [
            (r["distro"], r["suite"], r["directory"], r["first_release"], r["instinct_only"])
            for r in published
        ]  # fmt: skip
    assert tuple(r["gfx"] for r in rows["gfx_packages"]) == streams.CORE_SDK_GFX_PACKAGES
    # a record AMD changes shows as the row's diff, naming where the value comes from
    radeon = records / "repo.radeon.com.toml"
    old = 'instinct_only = ["debian 12", "debian 13"]'
    assert old in radeon.read_text()
    radeon.write_text(radeon.read_text().replace(old, 'instinct_only = ["debian 12"]'))
    amd = records / "repo.amd.com.toml"
    assert '"gfx1152", "gfx1153"]' in amd.read_text()
    amd.write_text(amd.read_text().replace('"gfx1152", "gfx1153"]', '"gfx1152"]'))
    built = tables.build_tables(records, OVERRIDES)
    diff = tables.table_diff(tables.read_data(DATA), built.tables)
    assert diff[0] == (
        "repositories.json publications classic debian 13 instinct_only: true -> false  "
        "[repo.radeon.com.toml [listing]]"
    )
    assert diff[1].startswith("repositories.json publications classic debian 13 source: ")
    assert diff[2:] == [
        "repositories.json gfx_packages gfx1153: row removed  [was repo.amd.com.toml "
        f"[packages]: {rows['gfx_packages'][-1]['source']}]"
    ]


def test_the_tables_and_the_tool_read_one_gpu_list_and_one_override_check(tmp_path: Path):
    listed = amd_tables.gpu_products((RECORDS / "stored" / "gpus.yaml").read_text())
    committed = json.loads((DATA / "upstream_data.json").read_text())["gpu_products"]
    assert list(committed.items()) == sorted(listed.items())
    gpus = tmp_path / "upstream" / "stored" / "gpus.yaml"
    shutil.copytree(RECORDS, tmp_path / "upstream")
    gpus.write_text(gpus.read_text().replace("AMD Ryzen:\n", "AMD Alveo:\n", 1))
    with pytest.raises(inputs.MatrixDataError, match="family 'AMD Alveo': expected one of"):
        tables.build_tables(tmp_path / "upstream", OVERRIDES)
    # the tool's release overrides are checked as the tables' are, and name the bad value
    bad = '[[release]]\nversion = "7.2.5"\nstream = "nightly"\nsource = "x"\n'
    with pytest.raises(inputs.MatrixDataError) as err:
        releases.load_overrides(bad)
    assert str(err.value) == (
        "matrix_overrides.toml: [[release]] 7.2.5: stream 'nightly'; valid: classic, core-sdk"
    )
    entries = [{"gfx": "gfx1250", "kernel": "6.18", "source": "x", "kind": "y"}]
    with pytest.raises(inputs.MatrixDataError, match=r"gfx1250: unknown field\(s\) \['kind'\]"):
        inputs.cited(entries, "inbox_min_kernel", {"gfx", "kernel"}, "o.toml")


def test_every_amd_device_amds_tables_map_resolves_with_its_source_vfs_included():
    from rocm_fleet.matrix import device_tables as dt
    from rocm_fleet.matrix.device_tables import pci_amd_devices
    from rocm_fleet.model import pci_ids

    stored = RECORDS / "stored"
    pci = pci_amd_devices(dt.pci_ids_from_record((stored / "pci-ids-devices.toml").read_text()))
    by_id, ambiguous = dt.device_info(
        dt.device_info_from_record((stored / "device-info.toml").read_text())
    )
    gfxip = dt.gfxip_table(dt.gfxip_from_record((stored / "gfxip-table.toml").read_text()))
    mapped = {d: g for d, g in {**gfxip, **by_id}.items() if d in pci}
    assert len(mapped) > 100
    for device, gfx in mapped.items():
        row = pci_ids.lookup(device)
        assert row is not None and row.gfx == gfx, device
        assert row.name == pci[device]
    assert "0x73ff" in ambiguous and pci_ids.lookup("0x73ff") is None  # gfx1031 or gfx1032
    rows = {r["device"]: r for r in upstream_data.PCI_ROWS["devices"]}
    for row in rows.values():
        assert (row["source"] and row["from"] != "override") or row["vendor"] != "0x1002"
    assert rows["0x7590"]["name"] == "Navi 44 [Radeon RX 9050 / 9060 XT]"
    assert rows["0x7590"]["from"] == {
        "name": "stored/pci-ids-devices.toml",
        "gfx": "stored/device-info.toml",
    }
    # MI300X's virtual function: gfx by its product in AMD's GPU list, guests from AMD's
    # virtualization data
    vf = pci_ids.lookup("74B5")
    assert (vf.gfx, vf.name, vf.vf) == ("gfx942", "Aqua Vanjaram [Instinct MI300X VF]", True)
    assert {"Ubuntu 24.04", "Ubuntu 22.04"} <= set(vf.guest_os)
    assert next(row["driver"] for row in vf.sr_iov if row.get("driver")) == "GIM 9.2.0.K"
    assert "virtualization-support.yaml @ bb948277" in rows["0x74b5"]["source"]
    assert pci_ids.describe_device("0000:00:06.0", "0x10de", "0x2335", "0x030200") == (
        "NVIDIA Corporation 10de:2335 GH100 [H200 SXM 141GB] (3D controller) at 0000:00:06.0"
    )


def test_an_amd_pci_override_may_only_add_a_gfx_the_tables_lack(tmp_path: Path):
    overrides = tmp_path / "overrides.toml"
    text = OVERRIDES.read_text()
    entry = 'recorded = ["0x74a2"]\n'
    assert entry in text
    overrides.write_text(text.replace(entry, 'recorded = ["0x74a2", "0x74a1"]\n'))
    with pytest.raises(inputs.MatrixDataError) as err:
        tables.build_tables(RECORDS, overrides)
    assert str(err.value) == (
        f"{overrides}: [[pci_device]] gfx942: AMD's tables map 0x74a1: drop it here"
    )
    block = 'LLVM AMDGPUUsage (as before the tables were read)"""\n'
    assert block in text
    overrides.write_text(text.replace(block, block + '[pci_device.devices]\n"0x74a3" = "x"\n'))
    with pytest.raises(inputs.MatrixDataError, match=r"name comes from pci\.ids"):
        tables.build_tables(RECORDS, overrides)


def test_product_names_in_pci_ids_brackets_are_read_whole():
    from rocm_fleet.matrix import device_tables as dt

    assert dt.products("Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]") == [
        "Radeon RX 7900 XT", "Radeon RX 7900 XTX", "Radeon RX 7900 GRE", "Radeon RX 7900M",
    ]  # fmt: skip
    listed = {"instinct mi300x": "gfx942", "radeon rx 7900 xt": "gfx1100"}
    assert dt.product_gfx("Aqua Vanjaram [Instinct MI300X VF]", listed) == (
        "instinct mi300x",
        "gfx942",
    )
    assert dt.product_gfx("Navi 31 [Radeon RX 7900 XTX]", listed) is None
    assert dt.is_vf("Navi 22-XL SRIOV MxGPU") and not dt.is_vf("Navi 31 [Radeon Pro W7900]")


def test_without_pyyaml_the_update_names_the_extra_it_needs(monkeypatch, capsys):
    from rocm_fleet.cli import main

    monkeypatch.setitem(sys.modules, "yaml", None)  # a plain install: no [matrix] extra
    argv = ["matrix", "update", "--records", str(RECORDS), "--overrides", str(OVERRIDES)]
    assert main([*argv, "--check"]) == 4
    assert capsys.readouterr().err.endswith(
        "gpus.yaml: reading AMD's YAML needs PyYAML: pip install 'rocm-fleet[matrix]'\n"
    )
