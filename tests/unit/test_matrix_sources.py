"""The parsers of tools/matrix_update.py for AMD's and PyTorch's other published files, each
on a sample written in the file's own format: AMD's release history (rocm-docs
docs/release/versions.rst), driver list (docs/data/driver-firmware-support.yaml) and GPU list
(docs/data/gpus.yaml), the PCI ID database (pci.ids, vendor 1002), and a PEP 503 project page
as download.pytorch.org serves it. Each refuses what it can't read, naming the file."""

from __future__ import annotations

import pytest

from tests.unit.test_matrix_update import tool

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
    assert tool.release_history(VERSIONS_RST) == {
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
    with pytest.raises(tool.UpstreamFormatError, match=message):
        tool.release_history(VERSIONS_RST.replace(*change))


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
    drivers = tool.amd_drivers(DRIVERS_YAML)
    assert list(drivers) == ["31.50.0", "31.40.1", "30.10.0"]
    assert drivers["31.50.0"].endswith("/docs-31.50.0/documentation/release-notes.html")
    with pytest.raises(tool.UpstreamFormatError, match="no '_amdgpu_drivers' list"):
        tool.amd_drivers(DRIVERS_YAML.replace("_amdgpu_drivers:", "_drivers:"))
    with pytest.raises(tool.UpstreamFormatError, match=r"has no 'version' X\.Y\.Z"):
        tool.amd_drivers(DRIVERS_YAML.replace('version: "31.40.1"', 'version: "31.40"'))


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
"""


def test_the_gpu_list_gives_each_target_its_products_by_family():
    assert tool.gpu_products(GPUS_YAML) == {
        "gfx1150": {"AMD Ryzen": ["AMD Ryzen AI 9 HX PRO 475"]},
        "gfx1201": {"AMD Radeon": ["AMD Radeon RX 9070 XT"]},
        "gfx942": {"AMD Instinct": ["AMD Instinct MI300X", "AMD Instinct MI300A"]},
    }
    mistyped = GPUS_YAML.replace("MI300A:\n    gfx: gfx942", "MI300A:\n    gfx: MI300")
    with pytest.raises(tool.UpstreamFormatError, match="MI300A: gfx 'MI300' is not"):
        tool.gpu_products(mistyped)


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
    devices = tool.pci_amd_devices(PCI_IDS)
    assert devices == {
        "0x744c": "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]",
        "0x7448": "Navi 31 [Radeon Pro W7900]",
        "0x7449": "Navi 31 [Radeon Pro W7800 48GB]",
        "0x7550": "Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]",
        "0x1114": "Krackan [Radeon 840M / 860M Graphics]",
    }
    known = {"0x744c": ("gfx1100", devices["0x744c"]), "0x7448": ("gfx1100", devices["0x7448"])}
    # 0x7449 shares Navi 31 with known gfx1100 devices; Navi 48 and Krackan: no known chip
    assert tool.unknown_pci_devices(devices, known) == [
        "pci.ids lists 0x7449 'Navi 31 [Radeon Pro W7800 48GB]', a gfx1100 chip the data lacks"
    ]
    with pytest.raises(tool.UpstreamFormatError, match="no vendor 1002 section"):
        tool.pci_amd_devices(PCI_IDS.replace("1002  Advanced", "1012  Advanced"))
    with pytest.raises(tool.UpstreamFormatError, match="unreadable"):
        tool.pci_amd_devices(PCI_IDS.replace("\t7550  Navi", "\t7550 Navi"))


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
    assert tool.listed_versions(LISTING, url) == {"": ["2.7.1"], "rocm6.3": ["2.7.0", "2.7.1"]}
    saved = tmp_path / "torch.html"
    saved.write_text(LISTING)
    page, where = tool.read_listing(str(saved))
    assert page == LISTING and where.startswith("file://")
    with pytest.raises(tool.UpstreamFormatError, match="over https only"):
        tool.read_listing("http://download.pytorch.org/whl/rocm6.3/torch/")
    bad = LISTING.replace("torch-2.7.0", "torch-two")  # href and text: not a version
    with pytest.raises(tool.UpstreamFormatError, match=r"download\.pytorch\.org"):
        tool.listed_versions(bad, url)
