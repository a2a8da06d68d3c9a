"""rocm_fleet.model.health and audit.rows' outlier rule: GPU health from amd-smi's JSON (fixtures
from real output, tests/fixtures/amd-smi/README.md) and the audit's majority rule."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from rocm_fleet.audit.outliers import HostVersions, majority, outliers, versions_from_survey
from rocm_fleet.model.health import (
    HEALTH_FAMILIES,
    NOT_AVAILABLE,
    HealthParseError,
    HostHealth,
    gpu_health,
    health_families,
    health_metrics,
)
from rocm_fleet.model.host_survey import HostSurvey
from unit.facts.support import fixture


def amd_smi(name: str) -> str:
    return fixture("amd-smi", name)


def mi300x(metric: str = "metric_mi300x_healthy.json", xgmi: str = "xgmi_mi300x_up.json"):
    return gpu_health(amd_smi(metric), amd_smi("static_mi300x.json"), amd_smi(xgmi))


def test_healthy_mi300x_reports_every_counter_and_no_problem():
    gpus = mi300x()
    assert [g.gpu for g in gpus] == list(range(8))
    first = gpus[0]
    assert first.bdf == "0000:0c:00.0" and first.firmware == "022.040.003.042.000001"
    assert (first.ecc.correctable, first.ecc.uncorrectable) == (0, 0)
    assert (first.pcie.width, first.pcie.max_width) == (16, 16)
    assert (first.pcie.speed_gts, first.pcie.max_speed_gts) == (32.0, 32.0)
    assert first.xgmi == ("X", "U", "U", "U", "U", "U", "U", "U")
    assert [g.problems() for g in gpus] == [[]] * 8
    assert [g.warnings() for g in gpus] == [[]] * 8
    assert first.lines() == [
        "GPU 0: ECC correctable 0, uncorrectable 0",
        "GPU 0: PCIe x16 (card x16), 32.0 GT/s (card 32.0 GT/s)",
        "GPU 0: XGMI links X U U U U U U U",
    ]


def test_ecc_errors_uncorrectable_is_a_problem_correctable_a_warning():
    gpus = mi300x("metric_mi300x_ecc_errors.json")
    assert gpus[3].problems() == ["GPU 3 (0000:5c:00.0): 1 uncorrectable ECC errors"]
    assert gpus[3].warnings() == ["GPU 3: 2 correctable ECC errors"]
    assert [g.gpu for g in gpus if g.problems()] == [3]


def test_radeon_on_a_x8_link_is_degraded_and_has_no_ecc_counter():
    (gpu,) = gpu_health(amd_smi("metric_rx7900xtx_x8.json"), amd_smi("static_rx7900xtx.json"))
    assert gpu.pcie.degraded
    assert gpu.problems() == ["GPU 0 (0000:03:00.0): PCIe link x8, the card has x16"]
    assert gpu.ecc.correctable is None and not gpu.ecc.available
    assert (
        gpu.lines()[0] == f"GPU 0: ECC correctable {NOT_AVAILABLE}, uncorrectable {NOT_AVAILABLE}"
    )
    assert gpu.xgmi is None  # no xgmi output read at all: unknown, not "down"


def test_xgmi_links_down_are_counted_per_gpu():
    gpus = mi300x(xgmi="xgmi_mi300x_link_down.json")
    assert gpus[0].xgmi_down == 2
    assert gpus[0].problems() == ["GPU 0 (0000:0c:00.0): 2 of 8 XGMI links down"]
    assert [g.gpu for g in gpus if g.xgmi_down] == [0, 4, 6]


def test_apu_reports_not_available_everywhere_and_no_problem():
    (gpu,) = gpu_health(
        amd_smi("metric_strixhalo_apu.json"),
        amd_smi("static_strixhalo_apu.json"),
        amd_smi("xgmi_strixhalo_apu.json"),
    )
    assert gpu.problems() == [] and gpu.warnings() == []
    assert gpu.xgmi is None and gpu.firmware is None
    assert gpu.lines() == [
        f"GPU 0: ECC correctable {NOT_AVAILABLE}, uncorrectable {NOT_AVAILABLE}",
        f"GPU 0: PCIe {NOT_AVAILABLE}",
        f"GPU 0: XGMI links {NOT_AVAILABLE}",
    ]
    # nothing measured, nothing claimed: only the health verdict is a sample
    assert health_metrics([gpu]) == [
        ("rocm_fleet_gpu_healthy", {"gpu": "0", "bdf": "0000:03:00.0"}, 1.0)
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (16, 16),
        ("16", 16),
        ({"value": 16, "unit": "x"}, 16),
        ("N/A", None),
        (None, None),
        (-1, None),
        (4294967295, None),  # UINT32_MAX: the library's "unsupported"
        (True, None),
        ("x16", None),
    ],
)
def test_width_values_in_every_form_seen(value, expected):
    metric = json.dumps([{"gpu": 0, "pcie": {"width": value}}])
    assert gpu_health(metric)[0].pcie.width == expected


def test_speed_given_in_mt_per_second_is_read_as_gt_per_second():
    # ROCm/rocm-systems issue 5200: "static = Gen4 16x 16000 GT/s" on an MI250X
    static = json.dumps([{"gpu": 0, "bus": {"max_pcie_speed": {"value": 16000, "unit": "GT/s"}}}])
    assert gpu_health(None, static)[0].pcie.max_speed_gts == 16.0


@pytest.mark.parametrize("text", ["not json", '{"error": "x"}', "42"])
def test_output_that_is_not_amd_smis_json_is_a_clear_error(text):
    with pytest.raises(HealthParseError, match="amd-smi metric"):
        gpu_health(text)


def test_metrics_name_each_counter_with_gpu_labels():
    samples = health_metrics(mi300x("metric_mi300x_ecc_errors.json"))
    by_key = {(name, labels["gpu"]): value for name, labels, value in samples}
    assert by_key["rocm_fleet_gpu_ecc_uncorrectable_errors", "3"] == 1.0
    assert by_key["rocm_fleet_gpu_ecc_correctable_errors", "3"] == 2.0
    assert by_key["rocm_fleet_gpu_healthy", "3"] == 0.0
    assert by_key["rocm_fleet_gpu_healthy", "2"] == 1.0
    assert by_key["rocm_fleet_gpu_pcie_link_width", "0"] == 16.0
    assert by_key["rocm_fleet_gpu_xgmi_links_up", "0"] == 7.0
    assert by_key["rocm_fleet_gpu_xgmi_links_down", "0"] == 0.0


# --- outliers ------------------------------------------------------------------------------


def fleet(**kernels: str | None) -> dict[str, HostVersions]:
    return {
        name: HostVersions(
            driver="6.12.12", firmware="022.040.003.042.000001", kernel=k, rocm="6.4.3-128"
        )
        for name, k in kernels.items()
    }


def test_a_host_with_another_kernel_than_the_majority_is_an_outlier():
    hosts = fleet(a="6.8.0-60", b="6.8.0-60", c="6.8.0-60", d="6.8.0-71")
    (found,) = outliers({"mi300": list(hosts)}, hosts)
    assert (found.host, found.property, found.value, found.majority) == (
        "d", "kernel", "6.8.0-71", "6.8.0-60")  # fmt: skip
    assert found.sentence() == "d: kernel 6.8.0-71, but 3 of 4 hosts in group mi300 have 6.8.0-60"


def test_each_property_is_judged_and_every_differing_host_named():
    hosts = fleet(a="k1", b="k1", c="k1", d="k1", e="k1")
    hosts["b"] = HostVersions("6.10.5", "022.040.003.042.000001", "k1", "6.4.3-128")
    hosts["e"] = HostVersions("6.12.12", "022.040.003.043.000001", "k1", "6.3.0-39")
    found = {(o.host, o.property) for o in outliers({"g": list(hosts)}, hosts)}
    assert found == {("b", "driver"), ("e", "firmware"), ("e", "rocm")}


@pytest.mark.parametrize(
    "kernels",
    [
        {"a": "k1", "b": "k1", "c": "k2", "d": "k2"},  # a tie: mid rolling upgrade
        {"a": "k1", "b": "k2", "c": "k3"},  # no value held by more than half
        {"a": "k1", "b": "k2"},  # too small to have a majority
        {"a": "k1", "b": "k1", "c": "k2", "d": "k3"},  # a plurality is not a majority
    ],
)
def test_no_majority_no_outlier(kernels):
    hosts = fleet(**kernels)
    assert outliers({"g": list(hosts)}, hosts) == []


def test_unknown_values_are_neither_counted_nor_flagged():
    hosts = fleet(a="k1", b="k1", c=None, d="k2", e="k1")
    (found,) = outliers({"g": list(hosts)}, hosts)
    assert (found.host, found.hosts_with_majority, found.hosts_reporting) == ("d", 3, 4)
    assert majority(["k1", "k1", "k2"]) == "k1"


def test_groups_are_judged_apart_and_hosts_without_a_reading_skipped():
    hosts = fleet(a="k1", b="k1", c="k1", x="k2", y="k2", z="k2")
    groups = {"old": ["a", "b", "c"], "new": ["x", "y", "z", "gone"]}
    assert outliers(groups, hosts) == []
    # the same hosts as one group: three against three, a tie
    assert outliers({"all": list(hosts)}, hosts) == []


def test_every_sample_has_a_family_with_help():
    names = {name for name, _, _ in health_metrics(mi300x())}
    assert names == set(HEALTH_FAMILIES)


def test_versions_from_the_survey_and_amd_smi():
    gpus = tuple(mi300x())
    amdgpu = {"loaded": True, "version": "6.12.12", "initstate": "live"}
    survey = HostSurvey(kernel="6.8.0-60-generic", rocm_version="6.4.3-128", amdgpu=amdgpu)
    versions = versions_from_survey(survey, HostHealth(status="ok", gpus=gpus))
    assert versions == HostVersions("6.12.12", "022.040.003.042.000001", "6.8.0-60-generic",
                                    "6.4.3-128")  # fmt: skip
    inbox = replace(survey, amdgpu={"loaded": True, "version": None})
    assert versions_from_survey(inbox, None) == HostVersions(
        None, None, "6.8.0-60-generic", "6.4.3-128"
    )


def test_families_for_the_metrics_page_label_each_host():
    apu = HostHealth(status="ok", gpus=tuple(gpu_health(amd_smi("metric_strixhalo_apu.json"))))
    big = HostHealth(status="ok", gpus=tuple(mi300x("metric_mi300x_ecc_errors.json")))
    families = {
        name: samples for name, _, samples, _ in health_families([("apu", apu), ("mi", big)])
    }
    assert families["rocm_fleet_gpu_healthy"][0] == ({"host": "apu", "gpu": "0"}, 1.0)
    assert [labels["host"] for labels, _ in families["rocm_fleet_gpu_ecc_correctable_errors"]] == [
        "mi"
    ] * 8
    assert ({"host": "mi", "gpu": "3", "bdf": "0000:5c:00.0"}, 1.0) in families[
        "rocm_fleet_gpu_ecc_uncorrectable_errors"
    ]
