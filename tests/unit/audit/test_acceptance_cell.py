"""The audit's acceptance column and metrics: the node's last acceptance record
(``facts.acceptance``), its cell (a failed run is drift) and its families."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from rocm_fleet.audit import metrics
from rocm_fleet.audit.cells import AuditRow, ObservedCells
from rocm_fleet.audit.rows import acceptance_cell
from rocm_fleet.facts.acceptance import AcceptanceRecordFact
from rocm_fleet.model.acceptance import AcceptanceRead, AcceptanceRecord, StepResult

NOW = 1_765_000_000.0
FAILED = AcceptanceRecord(
    "quick", NOW - 3 * 3600,
    (StepResult("counters", "pass"),
     StepResult("rvs:gst_single", "fail", "gpustress-4096-hgemm-false GPU 1 41234 GFLOPS < 65000")),
    {"rocm": "6.4.3-128"},
)  # fmt: skip
PASSED = AcceptanceRecord("full", NOW - 9 * 86400, (StepResult("counters", "pass"),), {})


def test_the_fact_reads_none_a_record_or_why_not():
    fact = AcceptanceRecordFact()
    assert fact.process(["__absent"]) == AcceptanceRead()
    assert fact.process(FAILED.to_json().splitlines()) == AcceptanceRead(FAILED)
    tampered = FAILED.to_json().replace('"passed": false', '"passed": true')
    assert "disagrees" in (fact.process([tampered]).error or "")


def test_the_cell_shows_level_result_and_age_and_marks_a_failure_not_as_drift():
    failed = acceptance_cell(AcceptanceRead(FAILED), NOW)
    # no deploy repairs it: the roll runs it again, the alert says so
    assert not failed.drift and failed.passed is False and failed.level == "quick"
    assert failed.text == (
        "! quick failed 3h ago: rvs:gst_single gpustress-4096-hgemm-false GPU 1 41234 GFLOPS "
        "< 65000"
    )
    passed = acceptance_cell(AcceptanceRead(PASSED), NOW)
    assert (passed.text, passed.drift) == ("full passed 9d ago", False)
    assert acceptance_cell(AcceptanceRead(), NOW).text == "never run"
    assert acceptance_cell(None, NOW).text == "unknown (the read failed)"
    assert not acceptance_cell(AcceptanceRead(error="not JSON"), NOW).drift


def test_the_metrics_say_passed_and_when_per_host():
    rows = [
        AuditRow("gpu1", "drift", cells=ObservedCells(), acceptance=FAILED),
        AuditRow("gpu2", "ok", cells=ObservedCells(), acceptance=PASSED),
        AuditRow("gpu3", "ok", cells=ObservedCells()),  # acceptance off: no series
    ]
    text = metrics.render(rows, "openmetrics", now=NOW)
    found = {
        (s.name, s.labels.get("host"), s.labels.get("step")): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("rocm_fleet_acceptance")
    }
    assert found[("rocm_fleet_acceptance_passed", "gpu1", None)] == 0
    assert found[("rocm_fleet_acceptance_passed", "gpu2", None)] == 1
    assert found[("rocm_fleet_acceptance_last_run_timestamp_seconds", "gpu2", None)] == (
        NOW - 9 * 86400
    )
    assert found[("rocm_fleet_acceptance_step_passed", "gpu1", "rvs:gst_single")] == 0
    assert not any(host == "gpu3" for _, host, _ in found)
