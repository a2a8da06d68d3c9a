"""The parsers of tools/matrix_update.py for AMD's and PyTorch's other published files, each
on a sample written in the file's own format: AMD's release history (rocm-docs
docs/release/versions.rst), driver list (docs/data/driver-firmware-support.yaml) and GPU list
(docs/data/gpus.yaml), the PCI ID database (pci.ids, vendor 1002), and a PEP 503 project page
as download.pytorch.org serves it. Each refuses what it can't read, naming the file."""

from __future__ import annotations

import json

import pytest

from rocm_fleet.matrix import amd_tables, generate, inputs, upstream
from rocm_fleet.matrix import device_tables as pci_table
from rocm_fleet.matrix.pytorch_tables import listed_versions, read_listing
from unit.matrix import test_matrix_update as t
from unit.matrix.test_matrix_update import _inputs

# versions.rst: a list-table, newest first; Core SDK rows link without a trailing slash,
# older rows abbreviate the month.
VERSIONS_RST = """\
:orphan:

.. meta::
   :description: ROCm release history

********************
ROCm release history
********************

.. list-table::
   :header-rows: 1

   * - Version
     - Release date

   * - `10.1.0 <https://rocm.docs.amd.com/en/docs-10.1.0>`__
     - October 5, 2026

   * - `7.14.1 <https://rocm.docs.amd.com/en/docs-7.14.1>`__
     - September 2, 2026

   * - `7.2.4 <https://rocm.docs.amd.com/en/docs-7.2.4/>`__
     - May 29, 2026

   * - `6.1.0 <https://rocm.docs.amd.com/en/docs-6.1.0/>`__
     - Apr 16, 2024
"""


def test_the_release_history_gives_every_release_with_its_date():
    assert amd_tables.release_history(VERSIONS_RST) == {
        "10.1.0": "2026-10-05",
        "7.14.1": "2026-09-02",
        "7.2.4": "2026-05-29",
        "6.1.0": "2024-04-16",
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("     - May 29, 2026", "     - 29 May 2026"), "read 3 of its 4 release rows"),
        (("     - May 29, 2026", "     - Mai 29, 2026"), "'Mai 29, 2026' is not a date"),
        (("Release date", "Date"), "no 'Release date' column"),
    ],
)
def test_a_release_history_row_it_cannot_read_is_refused(change, message):
    with pytest.raises(inputs.MatrixDataError, match=message):
        amd_tables.release_history(VERSIONS_RST.replace(*change))


DRIVERS_YAML = """\
# yaml-language-server: $schema=schemas/driver-firmware-support.schema.yaml
# vim: set foldmethod=marker:

# Anchors {{{
_amdgpu_drivers:
  - &amdgpu_31_50_0
    version: "31.50.0"
    url: https://instinct.docs.amd.com/projects/amdgpu-docs/en/docs-31.50.0/documentation/release-notes.html
  - &amdgpu_31_40_1
    version: "31.40.1"
    url: https://instinct.docs.amd.com/projects/amdgpu-docs/en/docs-31.40.1/documentation/release-notes.html
  - &amdgpu_30_10_0
    version: "30.10.0"
    url: https://instinct.docs.amd.com/projects/amdgpu-docs/en/docs-30.10/documentation/release-notes.html

_windows_drivers:
  - &adrenalin_26_8_1
    name: "AMD Software: Adrenalin Edition"
    version: "26.8.1"
# }}}

AMD Instinct:
  AMD Instinct MI300X:
    firmware:
      - "01.26.00.04 (or later)"
    linux:
      amdgpu: [*amdgpu_31_50_0, *amdgpu_31_40_1, *amdgpu_30_10_0]

AMD Radeon:
  linux:
    amdgpu: [*amdgpu_31_50_0, *amdgpu_31_40_1]
  windows: [*adrenalin_26_8_1]

AMD Ryzen:
  linux:
    - {os: "Ubuntu 26.04", driver: "use inbox kernel driver"}
"""


def test_the_driver_list_gives_every_linux_driver_newest_first():
    drivers = amd_tables.amd_drivers(DRIVERS_YAML)
    assert list(drivers) == ["31.50.0", "31.40.1", "30.10.0"]
    assert drivers["31.50.0"].endswith("/docs-31.50.0/documentation/release-notes.html")
    with pytest.raises(inputs.MatrixDataError, match="no '_amdgpu_drivers' list"):
        amd_tables.amd_drivers(DRIVERS_YAML.replace("_amdgpu_drivers:", "_drivers:"))
    with pytest.raises(inputs.MatrixDataError, match=r"has no 'version' X\.Y\.Z"):
        amd_tables.amd_drivers(DRIVERS_YAML.replace('version: "31.40.1"', 'version: "31.40"'))


GPUS_YAML = """\
# yaml-language-server: $schema=schemas/gpus.schema.yaml
# Anchors {{{
_mkt_series:
  - &mi300_series
    name: AMD Instinct MI300 Series
  - &radeon_rx_9000_series
    name: AMD Radeon RX 9000 Series
  - &ryzen_ai_400_series
    name: AMD Ryzen AI 400 Series
_architectures:
  - &arch_cdna_3
    name: CDNA 3
  - &arch_rdna_4
    name: RDNA 4
  - &arch_rdna_3_5
    name: RDNA 3.5
# }}}

AMD Instinct:
  AMD Instinct MI300X:
    gfx: gfx942
    series: *mi300_series
    arch: *arch_cdna_3
  AMD Instinct MI300A:
    gfx: gfx942
    series: *mi300_series
    arch: *arch_cdna_3
AMD Radeon:
  AMD Radeon RX 9070 XT:
    gfx: gfx1201
    series: *radeon_rx_9000_series
    arch: *arch_rdna_4
AMD Ryzen:
  AMD Ryzen AI 9 HX PRO 475:
    gfx: gfx1150
    series: *ryzen_ai_400_series
    igpu: Radeon 890M
    arch: *arch_rdna_3_5
    codename: Gorgon Point
  AMD Ryzen AI 5 PRO 435:
    gfx: gfx1153
    series: *ryzen_ai_400_series
    arch: *arch_rdna_3_5
"""


def test_the_gpu_list_gives_each_target_its_products_by_family():
    assert amd_tables.gpu_products(GPUS_YAML) == {
        "gfx1150": {"AMD Ryzen": ["AMD Ryzen AI 9 HX PRO 475"]},
        "gfx1153": {"AMD Ryzen": ["AMD Ryzen AI 5 PRO 435"]},
        "gfx1201": {"AMD Radeon": ["AMD Radeon RX 9070 XT"]},
        "gfx942": {"AMD Instinct": ["AMD Instinct MI300X", "AMD Instinct MI300A"]},
    }
    mistyped = GPUS_YAML.replace("MI300A:\n    gfx: gfx942", "MI300A:\n    gfx: MI300")
    with pytest.raises(inputs.MatrixDataError, match="MI300A: gfx 'MI300' is not"):
        amd_tables.gpu_products(mistyped)


# pci.ids: "vendor  name", then "\tdevice  name", "\t\tsubvendor subdevice  name"; "#"
# comments and blank lines anywhere.
PCI_IDS = """\
#
#\tList of PCI ID's
#
# Version: 2026.08.22
#
1000  Broadcom / LSI
\t0001  53c810
1002  Advanced Micro Devices, Inc. [AMD/ATI]
\t744c  Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]
\t\t1002 0e3b  RX 7900 GRE
\t\t1da2 e471  NITRO+ RX 7900 XTX Vapor-X
\t7448  Navi 31 [Radeon Pro W7900]
# Navi 31 variant
\t7449  Navi 31 [Radeon Pro W7800 48GB]
\t7550  Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]
\t1114  Krackan [Radeon 840M / 860M Graphics]
1003  ULSI Systems
\t0201  US201
"""


def test_pci_ids_gives_amds_devices_and_the_chips_the_data_lacks():
    devices = pci_table.pci_amd_devices(PCI_IDS)
    assert devices == {
        "0x744c": "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]",
        "0x7448": "Navi 31 [Radeon Pro W7900]",
        "0x7449": "Navi 31 [Radeon Pro W7800 48GB]",
        "0x7550": "Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]",
        "0x1114": "Krackan [Radeon 840M / 860M Graphics]",
    }
    known = {"0x744c": ("gfx1100", devices["0x744c"]), "0x7448": ("gfx1100", devices["0x7448"])}
    # 0x7449 shares Navi 31 with known gfx1100 devices; Navi 48 and Krackan: no known chip
    assert pci_table.unknown_pci_devices(devices, known) == [
        "pci.ids lists 0x7449 'Navi 31 [Radeon Pro W7800 48GB]', a gfx1100 chip the data lacks"
    ]
    with pytest.raises(inputs.MatrixDataError, match="no vendor 1002 section"):
        pci_table.pci_amd_devices(PCI_IDS.replace("1002  Advanced", "1012  Advanced"))
    with pytest.raises(inputs.MatrixDataError, match="unreadable"):
        pci_table.pci_amd_devices(PCI_IDS.replace("\t7550  Navi", "\t7550 Navi"))


# download.pytorch.org/whl/rocm6.3/torch/: PEP 503, hrefs rooted at the host, "+" quoted.
LISTING = """\
<!DOCTYPE html>
<html>
  <body>
    <h1>Links for torch</h1>
    <a href="/whl/rocm6.3/torch-2.7.0%2Brocm6.3-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=\
1111111111111111111111111111111111111111111111111111111111111111" \
data-requires-python="&gt;=3.9.0">torch-2.7.0+rocm6.3-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
    <a href="/whl/rocm6.3/torch-2.7.1%2Brocm6.3-cp313-cp313-manylinux_2_28_x86_64.whl#sha256=\
2222222222222222222222222222222222222222222222222222222222222222" \
data-requires-python="&gt;=3.9.0">torch-2.7.1+rocm6.3-cp313-cp313-manylinux_2_28_x86_64.whl</a><br/>
    <a href="/whl/rocm6.3/torch-2.7.1%2Brocm6.3-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=\
3333333333333333333333333333333333333333333333333333333333333333" \
data-requires-python="&gt;=3.9.0">torch-2.7.1+rocm6.3-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
    <a href="/whl/torch-2.7.1-cp312-none-macosx_11_0_arm64.whl#sha256=\
4444444444444444444444444444444444444444444444444444444444444444">\
torch-2.7.1-cp312-none-macosx_11_0_arm64.whl</a><br/>
  </body>
</html>
<!--TIMESTAMP 1764000000-->
"""


def test_a_wheel_listing_gives_the_versions_of_each_local_label(tmp_path):
    url = "https://download.pytorch.org/whl/rocm6.3/torch/"
    assert listed_versions(LISTING, url) == {
        "": ["2.7.1"],
        "rocm6.3": ["2.7.0", "2.7.1"],
    }
    saved = tmp_path / "torch.html"
    saved.write_text(LISTING)
    page, where = read_listing(str(saved))
    assert page == LISTING and where.startswith("file://")
    with pytest.raises(inputs.MatrixDataError, match="over https only"):
        read_listing("http://download.pytorch.org/whl/rocm6.3/torch/")
    bad = LISTING.replace("torch-2.7.0", "torch-two")  # href and text: not a version
    with pytest.raises(inputs.MatrixDataError, match=r"download\.pytorch\.org"):
        listed_versions(bad, url)


# --- discovery: what upstream published that the data lacks -----------------------------

# The build samples of test_matrix_update (releases 6.0.0-7.1.0, Core SDK 7.14.0 by override)
# and a release history that also lists 7.14.1 (with 7.14.0: Core SDK), 7.1.1 (classic), a
# 9.0.0 (in no stream the data knows) and 5.7.1 (older than the data's oldest release).
HISTORY = """\
.. list-table::
   :header-rows: 1

   * - Version
     - Release date

   * - `9.0.0 <https://rocm.docs.amd.com/en/docs-9.0.0>`__
     - December 1, 2026

   * - `7.14.1 <https://rocm.docs.amd.com/en/docs-7.14.1>`__
     - September 2, 2026

   * - `7.14.0 <https://rocm.docs.amd.com/en/docs-7.14.0>`__
     - July 15, 2026

   * - `7.1.1 <https://rocm.docs.amd.com/en/docs-7.1.1/>`__
     - November 26, 2025

   * - `5.7.1 <https://rocm.docs.amd.com/en/docs-5.7.1/>`__
     - Oct 13, 2023
"""


def _build(history=HISTORY, **optional):
    inputs = upstream.Inputs(t.CSV, t.YAML, t.RELEASE_MD, t.OVERRIDES, history, **optional)
    return upstream.build(inputs, {})


def test_a_release_the_history_lists_is_added_in_the_stream_it_belongs_to():
    data, notes = _build()
    rows = {r["version"]: r for r in data["releases"]}
    # 7.14.1 goes with 7.14.0 (Core SDK, repo.amd.com, os-support.yaml's distros), not 7.1.0
    new = rows["7.14.1"]
    assert (new["stream"], new["repository"], new["amdgpu_driver"]) == (
        "core-sdk", "repo.amd.com", None)  # fmt: skip
    assert new["distros"] == ["ubuntu 24.04", "debian 12", "debian 13"]
    assert new["from"] == {"row": inputs.FROM_HISTORY, "stream": "as 7.14.0",
                           "repository": "as 7.14.0", "distros": inputs.FROM_OS_SUPPORT,
                           "torch_index": inputs.FROM_PYTORCH}  # fmt: skip
    assert new["torch_index"] == "rocm7.14"
    assert new["source"] == "AMD versions.rst: 7.14.1 released 2026-09-02"
    # 7.1.1 goes with 7.1.0: classic, repo.radeon.com, no listing of its own
    assert (rows["7.1.1"]["stream"], rows["7.1.1"]["distros"]) == ("classic", None)
    # older than the data's oldest release (6.0.0): not the matrix's; 9.x: no stream known
    assert "5.7.1" not in rows and "9.0.0" not in rows
    assert any("lists 9.0.0 (2026-12-01), in no stream the data knows" in n for n in notes)
    assert any(n.startswith("new release 7.14.1 (2026-09-02)") for n in notes)
    assert data["release_dates"] == {"7.14.1": "2026-09-02", "7.14.0": "2026-07-15",
                                     "7.1.1": "2025-11-26"}  # fmt: skip


def test_an_override_citing_versions_rst_for_a_release_it_lacks_is_noted():
    overrides = t.OVERRIDES.replace(
        '(cited here)"\n\n[[release]]\nversion = "7.0.0"',
        'versions.rst @ abc"\n\n[[release]]\nversion = "7.0.0"',
    )
    inputs = upstream.Inputs(t.CSV, t.YAML, t.RELEASE_MD, overrides, HISTORY)
    _data, notes = upstream.build(inputs, {})
    assert "release 6.4.2: its source cites versions.rst, which doesn't list it; cite what " \
        "does" in notes  # fmt: skip


def test_check_reports_what_upstream_has_and_writing_records_it(tmp_path, capsys, monkeypatch):
    # what the product's matrix knows, as it was before it had gfx1153
    pci, gfx, torch = upstream.matrix_knows()
    monkeypatch.setattr(generate, "matrix_knows", lambda: (pci, gfx - {"gfx1153"}, torch))

    files = {"versions.rst": HISTORY, "drivers.yaml": DRIVERS_YAML, "gpus.yaml": GPUS_YAML,
             "pci.ids": PCI_IDS, "torch.html": LISTING}  # fmt: skip
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    out = tmp_path / "upstream_data.json"
    base = [*_inputs(tmp_path), "--output", str(out)]
    assert generate.main(base) == 0  # the data as it was, without the new inputs
    capsys.readouterr()
    more = ["--release-history", str(tmp_path / "versions.rst"),
            "--driver-list", str(tmp_path / "drivers.yaml"),
            "--gpu-list", str(tmp_path / "gpus.yaml"), "--pci-ids", str(tmp_path / "pci.ids"),
            "--listing", f"rocm6.3={tmp_path / 'torch.html'}"]  # fmt: skip
    assert generate.main([*base, *more, "--check"]) == 1
    report = capsys.readouterr().out.splitlines()
    assert any(line.startswith("releases 7.14.1: null -> {") for line in report)
    assert 'amdgpu_drivers: null -> {"31.50.0": ' in "\n".join(report)
    # what the product's matrix lacks, named with the file that lists it
    assert "upstream has: gpus.yaml lists gfx1153 (AMD Ryzen: AMD Ryzen AI 5 PRO 435), " \
        "not in the matrix's GPU list" in report  # fmt: skip
    assert not any("gfx1150" in line for line in report if line.startswith("upstream has"))
    assert "upstream has: release 7.14.1 has no driver; AMD's driver list's newest is " \
        "31.50.0" in report  # fmt: skip
    # the sample listing's rocm6.3 builds are the matrix's own: nothing to report for it
    assert not any("rocm6.3 lists" in line for line in report)
    assert generate.main([*base, *more]) == 0
    data = json.loads(out.read_text())
    assert data["torch_listed"] == {
        "rocm6.3": {"torch": {"": ["2.7.1"], "rocm6.3": ["2.7.0", "2.7.1"]}}
    }
    assert data["sources"]["listing rocm6.3"] == str(tmp_path / "torch.html")
    # a run without the optional inputs keeps what they gave
    capsys.readouterr()
    assert generate.main([*base, "--check"]) == 1  # only the discoveries remain to report
    assert capsys.readouterr().out.startswith("upstream data unchanged\n")
    assert generate.main([*base, "--listing", "rocm 6.3=torch.html", "--check"]) == 2
    assert "expected INDEX[/PROJECT]=PAGE|URL" in capsys.readouterr().err
    assert generate.main([*base, "--listing", f"rocm6.3={tmp_path / 'absent.html'}"]) == 2
    assert "absent.html" in capsys.readouterr().err


def test_the_matrix_has_every_gpu_target_of_amds_gpu_list_sample():
    _data, _notes = _build()
    data = {**_data, "gpu_products": amd_tables.gpu_products(GPUS_YAML)}
    _pci, gfx, _torch = upstream.matrix_knows()
    assert not any("gpus.yaml" in line for line in upstream.discoveries(data, known_gfx=gfx))


# AMD's whl-next torch page: PEP 503, builds labelled with the release (+rocm10.0.0).
WHL_NEXT = """\
<!DOCTYPE html>
<html>
  <body>
    <h1>Links for torch</h1>
    <a href="torch-2.13.0%2Brocm10.0.0-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=\
5555555555555555555555555555555555555555555555555555555555555555">\
torch-2.13.0+rocm10.0.0-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
    <a href="torch-2.13.0%2Brocm10.1.0-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=\
6666666666666666666666666666666666666666666666666666666666666666">\
torch-2.13.0+rocm10.1.0-cp312-cp312-manylinux_2_28_x86_64.whl</a><br/>
  </body>
</html>
"""


def test_torch_builds_a_listing_has_that_the_matrix_lacks_are_reported_by_label():
    url = "https://stable.repo.amd.com/rocm/whl-next/torch/"
    data = {"releases": [], "torch_listed": {"whl-next": {"torch": listed_versions(
        WHL_NEXT, url)}, "rocm6.3": {"torch": listed_versions(LISTING, url)}}}  # fmt: skip
    known = {"rocm10.0.0": {"2.13.0"}, "rocm6.3": {"2.7.0"}}  # as if the matrix had these
    assert upstream.discoveries(data, torch_builds=known) == [
        "whl-next lists torch 2.13.0 +rocm10.1.0, a build label no release of the matrix uses",
        "rocm6.3 lists torch 2.7.1 +rocm6.3, which the matrix's builds for it lack",
    ]
    # the product's matrix: whl-next's 10.0.0 and 10.1.0 builds and rocm6.3's are its own
    _pci, _gfx, torch = upstream.matrix_knows()
    assert {"2.7.0", "2.7.1"} <= torch["rocm6.3"] and "2.13.0" in torch["rocm10.1.0"]
    assert upstream.discoveries(data, torch_builds=torch) == []


# Rows as GPUOpen-Tools/device_info DeviceInfo.cpp @ a44c00c0 has them (kCardInfo): one ID
# whose revisions are two targets, a codename row (no gfx target: not read).
DEVICE_INFO = """\
static constexpr GDT_GfxCardInfo kCardInfo[] = {
    {GDT_TAHITI_XT, 0x6798, 0x00, GDT_HW_GENERATION_SOUTHERNISLAND, false, "Tahiti", "AMD Radeon R9 200 / HD 7900 Series"},
    {GDT_GFX11_0_0, 0x744C, 0xC8, GDT_HW_GENERATION_GFX11, false, "gfx1100", "AMD Radeon RX 7900 XTX"},
    {GDT_GFX11_0_0_XT, 0x744C, 0xCC, GDT_HW_GENERATION_GFX11, false, "gfx1100", "AMD Radeon RX 7900 XT"},
    {GDT_GFX10_3_2, 0x73FF, 0xC7, GDT_HW_GENERATION_GFX103, false, "gfx1032", "AMD Radeon RX 6600 XT"},
    {GDT_GFX10_3_1, 0x73FF, 0xE0, GDT_HW_GENERATION_GFX103, false, "gfx1031", "73FF:E0"},
};
"""  # noqa: E501
# ROCm/rocm-systems shared/src/utils.cpp @ 8dd7ed86 (kGfxipTable), two of its rows.
GFXIP = """\
static const struct GfxipTable kGfxipTable[] = {
  { 0x1902, 11, 5, 3 },
  { 0x7550, 12, 0, 1 },
};
"""


def test_amds_device_tables_read_alike_from_the_file_and_from_its_record():
    from rocm_fleet.matrix import device_tables as dt

    by_id, ambiguous = dt.device_info(DEVICE_INFO)
    assert by_id == {"0x744c": "gfx1100"} and ambiguous == {"0x73ff": ["gfx1032", "gfx1031"]}
    record = dt.device_info_record(DEVICE_INFO)
    assert dt.device_info(dt.device_info_from_record(record)) == (by_id, ambiguous)
    assert dt.gfxip_table(GFXIP) == {"0x1902": "gfx1153", "0x7550": "gfx1201"}
    assert dt.gfxip_table(dt.gfxip_from_record(dt.gfxip_record(GFXIP))) == dt.gfxip_table(GFXIP)
    devices = pci_table.pci_amd_devices(PCI_IDS)
    back = dt.pci_ids_from_record(dt.pci_ids_record(PCI_IDS))
    assert pci_table.pci_amd_devices(back) == devices
    with pytest.raises(inputs.MatrixDataError, match="no kCardInfo row"):
        dt.device_info("nothing")
