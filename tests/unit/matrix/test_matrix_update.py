"""The matrix generator (rocm_fleet.matrix, run as tools/matrix_update.py) on small samples
written in the upstream formats (AMD's historical CSV, os-support.yaml with its anchors and
merge keys, PyTorch's RELEASE.md table): what it reads from each, that it refuses what it
can't read, and that the committed upstream data is what the matrix uses."""

from __future__ import annotations

import json

import pytest

from rocm_fleet.matrix import amd_tables, generate, inputs, pytorch_tables
from rocm_fleet.matrix import device_tables as records
from rocm_fleet.matrix import upstream as releases
from rocm_fleet.matrix.pytorch_tables import torch_stable_rocm
from rocm_fleet.model import gpu_targets, matrix, streams, torch_builds, upstream_data

# The CSV's shape: a "ROCm Version" header (newest first, "7.0.1/7.0.0" for a shared column),
# sections whose first cell names them, their rows continuing with an empty first cell,
# footnote markers after a target or driver, distros AMD lists that the matrix doesn't know.
CSV = """\
ROCm Version,7.1.0,7.0.1/7.0.0,6.4.1,6.4.0,6.0.0
  :ref:`Operating systems <os>`,Ubuntu 24.04.3,Ubuntu 24.04.3,Ubuntu 24.04.2,Ubuntu 24.04.2,
  ,Ubuntu 22.04.5,Ubuntu 22.04.5,Ubuntu 22.04.5,"Ubuntu 22.04.5, 22.04.4","Ubuntu 22.04.4, 22.04.3"
      ,"RHEL 10.0, 9.6","RHEL 9.6, 9.4","RHEL 9.6, 9.4","RHEL 9.5, 9.4","RHEL 9.3, 9.2"
      ,"Debian 13, 12",Debian 12,Debian 12,Debian 12 [#single-node-past-60]_,
      ,.. _architecture-support-compatibility-matrix-past-60:,,,,
      :doc:`GPU / LLVM target <rocm-install-on-linux:reference/sysreq>`,gfx950,gfx950,,,
      ,gfx1201,gfx1201,gfx1201,,
      ,gfx942,gfx942 [#mi300-past-60]_,gfx942,gfx942,gfx942 [#mi300_600-past-60]_
,,,,,
      FRAMEWORK SUPPORT,.. _framework-support-compatibility-matrix-past-60:,,,,
      :doc:`PyTorch <../pytorch-compatibility>`,"2.8, 2.7","2.7, 2.6",2.6,2.6,2.1
,,,,,
     DRIVER & USER SPACE [#kfd_support-past-60]_,.. _kfd-userspace-support-past-60:,,,,
""" + ",".join(
    [
        "      :doc:`AMD GPU Driver <rocm-install-on-linux:reference/compat>`",
        '"30.20.0 [#kvm-past-60]_, 30.10.1, 30.10, 6.4.x"',
        '"30.10.1 [#driver_patch-past-60]_, 30.10, 6.4.x, 6.3.x"',
        '"6.4.x, 6.3.x"',
        '"6.4.x, 6.3.x"',
        '"6.2.x, 6.1.x"\n',
    ]
)

YAML = """\
_versions:
  - &ubuntu_24_04 { version: "24.04.4", kernel: "GA 6.8", graphics: true }
  - &ubuntu_24_04_oem { version: "24.04.4", kernel: "OEM 6.17", graphics: true }
  - &debian_13 { version: "13", kernel: "6.12" }
  - &debian_12 { version: "12", kernel: "6.1.0" }
  - &rhel_9_8 { version: "9.8", kernel: "5.14.0-687", graphics: true }
_os:
  - &rhel { abbr: RHEL }

AMD Instinct:
  AMD Instinct MI300X:
    Ubuntu:
      versions: [*ubuntu_24_04]
    Debian:
      versions: [*debian_13, *debian_12]
  AMD Instinct MI250:
    Debian:
      versions: [*debian_12]
    Red Hat Enterprise Linux:
      <<: *rhel
      versions: [*rhel_9_8]
AMD Radeon:
  AMD Radeon RX 7900 XTX:
    Ubuntu:
      versions: [*ubuntu_24_04]
    WSL2:
      versions: ["24.04"]
AMD Ryzen:
  AMD Ryzen AI Max+ 395:
    Ubuntu:
      versions: [*ubuntu_24_04_oem]
"""

RELEASE_MD = """\
## Release Compatibility Matrix

Following is the Release Compatibility Matrix for PyTorch releases:

| PyTorch version | Python | C++ | Stable CUDA | Experimental CUDA | Stable ROCm |
| --- | --- | --- | --- | --- | --- |
| 2.14 | >=3.10 | C++20 | CUDA 12.6 | -- | ROCm 7.14 |
| 2.10 | >=3.10 | C++17 | CUDA 12.6, CUDA 12.8 | CUDA 13.0 | ROCm 7.1 |
| 2.8 | >=3.9, <=3.13 | C++17 | CUDA 12.6, CUDA 12.8 | CUDA 12.9 | ROCm 6.4 |
| 2.6 | >=3.9, <=3.13 | C++17 | CUDA 11.8, CUDA 12.4 (CUDNN 9.1.0.70) | CUDA 12.6 | ROCm 6.2.4 |

### PyTorch CUDA Support Matrix

| CUDA | architectures |
| --- | --- |
| 12.6.3 | Maxwell(5.0) |
"""


def test_the_first_release_listing_each_target_comes_from_the_gpu_rows_only():
    assert amd_tables.gpu_listed_from(CSV) == {"gfx1201": "6.4.1", "gfx942": "6.0.0",
                                         "gfx950": "7.0.0"}  # fmt: skip


def test_os_support_gives_families_per_distro_and_debian_per_instinct_model():
    support = amd_tables.os_support(YAML)
    assert support["families"] == {
        "debian 12": ["AMD Instinct"],
        "debian 13": ["AMD Instinct"],
        "ubuntu 24.04": ["AMD Instinct", "AMD Radeon", "AMD Ryzen"],
    }
    assert support["per_model"] == {
        "debian 12": {"models": ["AMD Instinct MI300X", "AMD Instinct MI250"],
                      "gfx": ["gfx942", "gfx90a"]},
        "debian 13": {"models": ["AMD Instinct MI300X"], "gfx": ["gfx942"]},
    }  # fmt: skip


def test_a_debian_model_the_tool_cannot_map_is_refused_by_name():
    text = YAML.replace("AMD Instinct MI250:", "AMD Instinct MI450X:")
    with pytest.raises(inputs.MatrixDataError, match=r"AMD Instinct MI450X.*MODEL_GFX"):
        amd_tables.os_support(text)


def test_the_stable_rocm_of_each_torch_minor_comes_from_release_md():
    assert torch_stable_rocm(RELEASE_MD) == {"2.14": "7.14", "2.10": "7.1", "2.8": "6.4",
                                                  "2.6": "6.2.4"}  # fmt: skip
    with pytest.raises(inputs.MatrixDataError, match="Release Compatibility Matrix"):
        torch_stable_rocm("# Releasing PyTorch\n")


def test_each_column_of_the_table_gives_its_releases_distros_targets_and_driver():
    table = amd_tables.classic_releases(CSV)
    assert list(table) == ["7.1.0", "7.0.1", "7.0.0", "6.4.1", "6.4.0", "6.0.0"]
    assert table["7.1.0"] == {
        "distros": ["ubuntu 22.04", "ubuntu 24.04", "debian 12", "debian 13"],
        "gfx": ["gfx950", "gfx1201", "gfx942"],
        "amdgpu_driver": "30.20",  # "30.20.0": AMD's folder drops the trailing .0
    }
    # a shared column: its releases' own drivers come first, in the header's order
    assert table["7.0.1"]["amdgpu_driver"] == "30.10.1"
    assert table["7.0.0"]["amdgpu_driver"] == "30.10"
    assert table["7.0.0"]["distros"] == ["ubuntu 22.04", "ubuntu 24.04", "debian 12"]
    # a footnoted distro cell ("Debian 12 [#single-node-past-60]_", AMD's 6.3.x columns)
    assert table["6.4.0"]["distros"] == ["ubuntu 22.04", "ubuntu 24.04", "debian 12"]
    # before 7.0 the driver is versioned with ROCm: the table's families are no folder
    assert table["6.4.1"]["amdgpu_driver"] is None
    # RHEL and Ubuntu 20.04-era versions are not the matrix's distros
    assert table["6.0.0"] == {"distros": ["ubuntu 22.04"], "gfx": ["gfx942"],
                              "amdgpu_driver": None}  # fmt: skip


def test_a_record_of_each_input_reads_to_the_same_facts_as_the_input():
    """What can be read but not committed is stored as a record (the cells read, verbatim):
    rendered back, the same parsers read the same facts from it."""
    make, render = records.RECORD_KINDS["historical-csv"]
    rendered = render(make(CSV))
    assert amd_tables.classic_releases(rendered) == amd_tables.classic_releases(CSV)
    assert amd_tables.gpu_listed_from(rendered) == amd_tables.gpu_listed_from(CSV)
    assert "PyTorch" not in rendered  # only the sections the tool reads are recorded
    make, render = records.RECORD_KINDS["pytorch-release"]
    assert torch_stable_rocm(render(make(RELEASE_MD))) == torch_stable_rocm(RELEASE_MD)


def test_a_record_that_is_not_one_is_refused():
    with pytest.raises(inputs.MatrixDataError, match="historical CSV record"):
        records.historical_from_record('columns = ["7.2.0"]\n')
    with pytest.raises(inputs.MatrixDataError, match=r"RELEASE\.md record"):
        records.release_md_from_record("rows = [")


OVERRIDES = """\
[[release]]
version = "6.4.2"
source = "a point release the table copy doesn't list (cited here)"

[[release]]
version = "7.0.0"
torch_index = "rocm7.0"
source = "torch built for 7.0 though RELEASE.md names no minor for it (cited here)"

[[release]]
version = "7.14.0"
stream = "core-sdk"
repository = "repo.amd.com"
amdgpu_driver = "31.40"
source = "the Core SDK release and its driver (cited here)"
"""


def _rows(csv_text=CSV, overrides=OVERRIDES):
    table = amd_tables.classic_releases(csv_text)
    support = amd_tables.os_support(YAML)
    rows, notes = releases.release_rows(table, support, torch_stable_rocm(RELEASE_MD),
                                    releases.load_overrides(overrides))  # fmt: skip
    return {row["version"]: row for row in rows}, notes


def test_release_rows_name_where_each_value_comes_from():
    rows, notes = _rows()
    assert notes == []
    assert list(rows) == ["6.0.0", "6.4.0", "6.4.1", "6.4.2", "7.0.0", "7.0.1", "7.1.0",
                          "7.14.0"]  # fmt: skip
    assert rows["7.1.0"]["torch_index"] == "rocm7.1"
    assert rows["7.1.0"]["from"] == {"row": inputs.FROM_TABLE, "amdgpu_driver": inputs.FROM_TABLE,
                                     "torch_index": inputs.FROM_PYTORCH}  # fmt: skip
    assert rows["6.4.1"]["torch_index"] == "rocm6.4"
    # RELEASE.md names no 7.0 and no 6.0: the override fills one, the other stays empty
    assert rows["7.0.0"]["torch_index"] == "rocm7.0"
    assert rows["7.0.0"]["from"]["torch_index"] == inputs.FROM_OVERRIDE
    assert "cited here" in rows["7.0.0"]["source"]
    assert rows["7.0.1"]["torch_index"] is None
    assert rows["6.0.0"]["torch_index"] is None
    # a release the table doesn't list: no listing from it, the override's citation
    assert rows["6.4.2"]["distros"] is None and rows["6.4.2"]["from"]["row"] == "override"
    # the Core SDK: its distros are os-support.yaml's, its torch index RELEASE.md's
    core = rows["7.14.0"]
    assert core["distros"] == ["ubuntu 24.04", "debian 12", "debian 13"]
    assert core["from"]["distros"] == inputs.FROM_OS_SUPPORT
    assert (core["repository"], core["amdgpu_driver"], core["torch_index"]) == (
        "repo.amd.com", "31.40", "rocm7.14")  # fmt: skip


def test_an_override_may_only_fill_what_upstream_is_silent_on():
    contradiction = OVERRIDES + '[[release]]\nversion = "7.1.0"\namdgpu_driver = "30.21"\n' \
        'source = "x"\n'  # fmt: skip
    with pytest.raises(inputs.MatrixDataError, match=r"7.1.0 amdgpu_driver.*contradicts"):
        _rows(overrides=contradiction)
    redundant = OVERRIDES + '[[release]]\nversion = "7.1.0"\namdgpu_driver = "30.20"\n' \
        'source = "x"\n'  # fmt: skip
    assert any("7.1.0 amdgpu_driver is redundant" in n for n in _rows(overrides=redundant)[1])
    # a release the override adds that AMD's table now lists: noted, the table's row kept
    listed = OVERRIDES + '[[release]]\nversion = "6.4.1"\nsource = "x"\n'
    rows, notes = _rows(overrides=listed)
    assert notes == [f"override of 6.4.1 is redundant: {inputs.FROM_TABLE} now lists it; drop "
                     "it from matrix_overrides.toml"]  # fmt: skip
    assert rows["6.4.1"]["source"] is None and rows["6.4.1"]["from"]["row"] == inputs.FROM_TABLE
    with pytest.raises(inputs.MatrixDataError, match=r"6\.4\.2 has no source"):
        _rows(overrides='[[release]]\nversion = "6.4.2"\n')
    with pytest.raises(inputs.MatrixDataError, match=r"unknown field.*torch_indx"):
        _rows(overrides='[[release]]\nversion = "6.4.2"\ntorch_indx = "x"\nsource = "y"\n')


def _inputs(tmp_path, csv_text=CSV):
    inputs = {"historical-csv": csv_text, "os-support": YAML, "pytorch-release": RELEASE_MD,
              "overrides": OVERRIDES}  # fmt: skip
    args = []
    for name, text in inputs.items():
        (tmp_path / name).write_text(text)
        args += [f"--{name}", str(tmp_path / name)]
    return args


def test_check_reports_the_difference_and_writing_makes_it_go_away(tmp_path, capsys):
    args = _inputs(tmp_path)
    out = tmp_path / "upstream_data.json"
    out.write_text("{}\n")
    assert generate.main([*args, "--output", str(out), "--check"]) == 1
    assert "releases 7.1.0: null -> {" in capsys.readouterr().out
    assert generate.main([*args, "--output", str(out)]) == 0
    assert generate.main([*args, "--output", str(out), "--check"]) == 0
    assert "upstream data unchanged" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["torch_stable_rocm"]["2.6"] == "6.2.4"
    assert [r["version"] for r in data["releases"]][-1] == "7.14.0"
    bad = tmp_path / "bad.csv"
    bad.write_text("Version,1\n")
    assert generate.main([*args, "--historical-csv", str(bad), "--output", str(out)]) == 2


def test_a_changed_upstream_row_is_reported_by_name_with_its_source(tmp_path, capsys):
    out = tmp_path / "upstream_data.json"
    assert generate.main([*_inputs(tmp_path), "--output", str(out)]) == 0
    capsys.readouterr()
    # AMD corrects 7.1.0's driver and adds Debian 13 to 7.0.1/7.0.0 in its table
    changed = CSV.replace('"30.20.0 [#kvm-past-60]_,', '"30.20.1,').replace(
        '"Debian 13, 12",Debian 12,', '"Debian 13, 12","Debian 13, 12",'
    )
    assert generate.main([*_inputs(tmp_path, changed), "--output", str(out), "--check"]) == 1
    report = capsys.readouterr().out.splitlines()
    assert report == [
        'releases 7.0.0 distros: ["ubuntu 22.04", "ubuntu 24.04", "debian 12"] -> '
        f'["ubuntu 22.04", "ubuntu 24.04", "debian 12", "debian 13"]  [{inputs.FROM_TABLE}]',
        'releases 7.0.1 distros: ["ubuntu 22.04", "ubuntu 24.04", "debian 12"] -> '
        f'["ubuntu 22.04", "ubuntu 24.04", "debian 12", "debian 13"]  [{inputs.FROM_TABLE}]',
        f'releases 7.1.0 amdgpu_driver: "30.20" -> "30.20.1"  [{inputs.FROM_TABLE}]',
    ]


def test_the_matrix_reads_the_committed_upstream_data():
    for target in gpu_targets.GPU_TARGETS:
        assert target.supported_from == upstream_data.GPU_LISTED_FROM.get(target.gfx)
    for pub in streams.CORE_SDK.publications:
        if pub.distro.startswith("debian"):
            listed = upstream_data.CORE_SDK_DEBIAN[pub.distro]
            assert list(pub.listed_gfx) == listed["gfx"]
    # the release rows: one matrix release per data row, with its values
    assert [r.version for r in matrix.RELEASES] == [r["version"] for r in upstream_data.RELEASES]
    for rel, row in zip(matrix.RELEASES, upstream_data.RELEASES, strict=True):
        assert (rel.stream.name, rel.repository.name, rel.torch_index, rel.amdgpu_driver) == (
            row["stream"], row["repository"], row["torch_index"], row["amdgpu_driver"])  # fmt: skip
        assert rel.torch_index is None or rel.torch_index in torch_builds.TORCH_INDEXES
        # where AMD's table lists the release, the matrix lists what it lists
        for distro in matrix.DISTROS:
            if row["distros"] is not None and row["stream"] == "classic":
                listed = rel.support(distro) in (
                    matrix.Support.OFFICIAL,
                    matrix.Support.INSTINCT_ONLY,
                )
                assert listed == (distro.key in row["distros"]), (rel.version, distro.key)
        for gfx in row["gfx"] or ():
            assert rel.lists_gpu(gfx), (rel.version, gfx)
    # classic: the first release AMD's table lists each distro in
    first = {p.distro: p.listed_from for p in streams.CLASSIC.publications}
    assert first == {"ubuntu 22.04": "6.0.0", "ubuntu 24.04": "6.2.0", "debian 12": "6.3.1",
                     "debian 13": "7.0.2"}  # fmt: skip
    # torch: every torch the matrix pins is built for the stable ROCm RELEASE.md names, or
    # for another index PyTorch also builds it for (cited per index in torch_builds.TORCH_INDEXES).
    for minor, rocm in upstream_data.TORCH_STABLE_ROCM.items():
        index = f"rocm{rocm}"
        if index in torch_builds.TORCH_INDEXES:
            builds = {".".join(b.torch.split(".")[:2]) for b in torch_builds.TORCH_INDEXES[index]}
            assert minor in builds, (minor, index)


def test_every_override_is_cited_and_in_the_committed_data():
    overrides = releases.load_overrides(generate.OVERRIDES.read_text())
    rows = {row["version"]: row for row in upstream_data.RELEASES}
    for entry in overrides:
        row = rows[entry["version"]]
        assert row["source"] == " ".join(entry["source"].split())
        assert inputs.FROM_OVERRIDE in row["from"].values()


BUILD_MATRIX = """\
[stable."2.10.0"]
rocm = ["7.0", "7.1"]
commit = "e8208cf27137d9e5f8f5c48e8c01749f32b6f261"
"""


def test_the_build_matrix_gives_an_index_release_md_names_none_for():
    """PyTorch's build matrix (pytorch/test-infra) built torch 2.10 for ROCm 7.0, a ROCm no
    RELEASE.md row names as stable: 7.0.x gets rocm7.0 from it, and an override saying the
    same is noted as redundant (issue 38, item 6)."""
    table = amd_tables.classic_releases(CSV)
    support = amd_tables.os_support(YAML)
    built = pytorch_tables.built_rocm(BUILD_MATRIX)
    assert built == {"7.0", "7.1"}
    overrides = releases.load_overrides(OVERRIDES)
    rows, notes = releases.release_rows(
        table, support, torch_stable_rocm(RELEASE_MD), overrides, None, built
    )
    rows = {row["version"]: row for row in rows}
    assert rows["7.0.1"]["torch_index"] == "rocm7.0"
    assert rows["7.0.1"]["from"]["torch_index"] == inputs.FROM_BUILD_MATRIX
    assert rows["7.1.0"]["from"]["torch_index"] == inputs.FROM_PYTORCH  # RELEASE.md first
    assert rows["6.0.0"]["torch_index"] is None
    assert notes == ["override of 7.0.0 torch_index is redundant: PyTorch build matrix now "
                     "gives 'rocm7.0'"]  # fmt: skip
    with pytest.raises(inputs.MatrixDataError, match=r"pytorch-rocm-builds\.toml"):
        pytorch_tables.built_rocm('[stable."2.10.0"]\ncommit = "x"\n')
