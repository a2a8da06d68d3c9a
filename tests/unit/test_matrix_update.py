"""tools/matrix_update.py on small samples written in the upstream formats (AMD's historical
CSV, os-support.yaml with its anchors and merge keys, PyTorch's RELEASE.md table): what it
reads from each, that it refuses what it can't read, and that the committed upstream data is
what the matrix uses."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from rocm_fleet.model import matrix, upstream_data

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("matrix_update", ROOT / "tools/matrix_update.py")
tool = importlib.util.module_from_spec(_spec)
sys.modules["matrix_update"] = tool
_spec.loader.exec_module(tool)

# The CSV's shape: a "ROCm Version" header (newest first, "7.0.1/7.0.0" for a shared column),
# sections whose first cell names them, the GPU rows continuing with an empty first cell,
# footnote markers after a target.
CSV = """\
ROCm Version,7.1.0,7.0.1/7.0.0,6.4.1,6.4.0,6.0.0
      :ref:`Operating systems & kernels <os>`,Ubuntu 24.04.3,Ubuntu 24.04.3,Ubuntu 24.04.2,,
      ,Debian 12,Debian 12,Debian 12,Debian 12,
      :doc:`GPU / LLVM target <rocm-install-on-linux:reference/sysreq>`,gfx950,gfx950,,,
      ,gfx1201,gfx1201,gfx1201,,
      ,gfx942,gfx942 [#mi300-past-60]_,gfx942,gfx942,gfx942 [#mi300_600-past-60]_
,,,,,
      FRAMEWORK SUPPORT,.. _framework-support-compatibility-matrix-past-60:,,,,
      :doc:`PyTorch <../pytorch-compatibility>`,"2.8, 2.7","2.7, 2.6",2.6,2.6,2.1
"""

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
| 2.6 | >=3.9, <=3.13 | C++17 | CUDA 11.8, CUDA 12.4 (CUDNN 9.1.0.70) | CUDA 12.6 | ROCm 6.2.4 |

### PyTorch CUDA Support Matrix

| CUDA | architectures |
| --- | --- |
| 12.6.3 | Maxwell(5.0) |
"""


def test_the_first_release_listing_each_target_comes_from_the_gpu_rows_only():
    assert tool.gpu_listed_from(CSV) == {"gfx1201": "6.4.1", "gfx942": "6.0.0",
                                         "gfx950": "7.0.0"}  # fmt: skip


def test_os_support_gives_families_per_distro_and_debian_per_instinct_model():
    support = tool.os_support(YAML)
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
    with pytest.raises(tool.UpstreamFormatError, match=r"AMD Instinct MI450X.*MODEL_GFX"):
        tool.os_support(text)


def test_the_stable_rocm_of_each_torch_minor_comes_from_release_md():
    assert tool.torch_stable_rocm(RELEASE_MD) == {"2.14": "7.14", "2.6": "6.2.4"}
    with pytest.raises(tool.UpstreamFormatError, match="Release Compatibility Matrix"):
        tool.torch_stable_rocm("# Releasing PyTorch\n")


def test_check_reports_the_difference_and_writing_makes_it_go_away(tmp_path, capsys):
    inputs = {"historical-csv": CSV, "os-support": YAML, "pytorch-release": RELEASE_MD}
    args = []
    for name, text in inputs.items():
        (tmp_path / name).write_text(text)
        args += [f"--{name}", str(tmp_path / name)]
    out = tmp_path / "upstream_data.py"
    out.write_text("GPU_LISTED_FROM = {}\n")
    assert tool.main([*args, "--output", str(out), "--check"]) == 1
    assert "+GPU_LISTED_FROM = {" in capsys.readouterr().out
    assert tool.main([*args, "--output", str(out)]) == 0
    assert tool.main([*args, "--output", str(out), "--check"]) == 0
    namespace: dict = {}
    exec(out.read_text(), namespace)
    assert namespace["TORCH_STABLE_ROCM"] == {"2.14": "7.14", "2.6": "6.2.4"}
    bad = tmp_path / "bad.csv"
    bad.write_text("Version,1\n")
    assert tool.main([*args, "--historical-csv", str(bad), "--output", str(out)]) == 2


def test_the_matrix_reads_the_committed_upstream_data():
    for target in matrix.GPU_TARGETS:
        assert target.supported_from == upstream_data.GPU_LISTED_FROM.get(target.gfx)
    for pub in matrix.CORE_SDK.publications:
        if pub.distro.startswith("debian"):
            listed = upstream_data.CORE_SDK_DEBIAN[pub.distro]
            assert list(pub.listed_gfx) == listed["gfx"]
    # torch: every torch the matrix pins is built for the stable ROCm RELEASE.md names, or
    # for another index PyTorch also builds it for (cited per index in matrix.TORCH_INDEXES).
    for minor, rocm in upstream_data.TORCH_STABLE_ROCM.items():
        index = f"rocm{rocm}"
        if index in matrix.TORCH_INDEXES:
            builds = {".".join(b.torch.split(".")[:2]) for b in matrix.TORCH_INDEXES[index]}
            assert minor in builds, (minor, index)
