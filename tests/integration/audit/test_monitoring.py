"""files/monitoring (the wheel's, written by ``rocm-fleet monitoring``): the alert rules and the
Grafana dashboard read the metrics the audit writes, checked with the Prometheus project's own
promtool (Debian's ``prometheus`` package, in the Makefile's LAB_PACKAGES): the rules load
and fire as their tests say, every dashboard query is valid PromQL over families the audit
writes, and the audit's output, successful or failed, passes ``promtool check metrics``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.audit import metrics
from rocm_fleet.model.health import HEALTH_COUNTERS
from unit.surveys import ROOT

MONITORING = ROOT / "files/monitoring"
RULES = MONITORING / "rocm-fleet-alerts.yml"
DASHBOARD = MONITORING / "grafana-dashboard.json"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool (Debian's prometheus package: `make deps`) is missing"
)
METRIC = re.compile(r"\brocm_fleet_[a-z_]+\b")


def promtool(*args: str, stdin: str | None = None, cwd: Path = MONITORING) -> str:
    result = subprocess.run(
        [PROMTOOL or "promtool", *args], input=stdin, capture_output=True, text=True,
        cwd=cwd, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def check_metrics(text: str, fmt: str) -> None:
    """``text`` passes ``promtool check metrics`` (Prometheus text) or prometheus_client's
    strict OpenMetrics parser (promtool lints only the Prometheus text format: an OpenMetrics
    counter's ``_total`` samples read to it as families without help)."""
    if fmt == "prometheus":
        assert promtool("check", "metrics", stdin=text) == ""
    else:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families

        assert list(text_string_to_metric_families(text))


def written_families() -> set[str]:
    """Every series name the audit can write (a counter's as ``NAME_total``)."""
    names = {name for name, *_ in metrics.families([], now=0)}
    return {f"{name}_total" if name in HEALTH_COUNTERS else name for name in names}


def dashboard_queries() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for panel in board["panels"] for t in panel["targets"]]
    variables = board["templating"]["list"]
    queries += [v["definition"] for v in variables if v["type"] == "query"]
    return queries


@needs_promtool
def test_the_alert_rules_load_and_fire_as_their_tests_say():
    assert "SUCCESS: 11 rules found" in promtool("check", "rules", RULES.name)
    promtool("test", "rules", "rocm-fleet-alerts.test.yml")


def rule_queries() -> list[str]:
    import yaml

    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["expr"] for group in groups for rule in group["rules"]]


def test_the_rules_and_the_dashboard_read_only_what_the_audit_writes():
    used: set[str] = set()
    for query in rule_queries() + dashboard_queries():
        used |= set(METRIC.findall(query))
    assert used and used <= written_families(), used - written_families()
    # the audit's own health is watched by both
    assert {"rocm_fleet_audit_success", "rocm_fleet_audit_last_success_timestamp_seconds"} <= used


def test_the_dashboard_shows_every_metric_an_alert_reads():
    shown: set[str] = set()
    for query in dashboard_queries():
        shown |= set(METRIC.findall(query))
    for query in rule_queries():
        assert set(METRIC.findall(query)) <= shown, query


def test_ecc_counts_are_counters_and_speeds_in_base_units(group_rows):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    text = metrics.render(group_rows, "openmetrics", now=0, duration=12.5)
    found = {family.name: family for family in text_string_to_metric_families(text)}
    ecc = found["rocm_fleet_gpu_ecc_uncorrectable_errors"]
    assert ecc.type == "counter" and {s.name for s in ecc.samples} == {ecc.name + "_total"}
    speeds = {
        s.value for s in found["rocm_fleet_gpu_pcie_link_max_speed_transfers_per_second"].samples
    }
    assert speeds and all(value >= 2.5e9 for value in speeds), speeds  # PCIe 1.0's 2.5 GT/s up
    assert [s.value for s in found["rocm_fleet_audit_duration_seconds"].samples] == [12.5]
    assert not any("_gts" in name for name in found)


def test_the_dashboard_is_one_grafana_can_import():
    board = json.loads(DASHBOARD.read_text())
    assert board["uid"] == "rocm-fleet-audit" and board["schemaVersion"] >= 36
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        # the Prometheus it reads is the importer's choice, never a uid of ours
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel
        assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel


@needs_promtool
def test_every_dashboard_query_is_valid_promql(tmp_path):
    # promtool parses PromQL where rules are checked: each query as a recording rule
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": query.replace("$host", ".*")}
        for i, query in enumerate(q for q in dashboard_queries() if "label_values" not in q)
    ]}]}  # fmt: skip
    (tmp_path / "dashboard.yml").write_text(json.dumps(rules))  # JSON is YAML
    promtool("check", "rules", "dashboard.yml", cwd=tmp_path)


@needs_promtool
@pytest.mark.parametrize("fmt", metrics.FORMATS)
def test_the_audits_output_passes_promtool_check_metrics(fleet_rows, fmt):
    check_metrics(metrics.render(fleet_rows, fmt, now=1764460800, duration=3.25), fmt)
    failed = metrics.render_failure(fmt, now=1764460800, last_success=1764457200, duration=1.5)
    check_metrics(failed, fmt)


@needs_promtool
@pytest.mark.parametrize("fmt", metrics.FORMATS)
def test_gpu_health_and_outliers_pass_promtool_check_metrics(group_rows, fmt):
    text = metrics.render(group_rows, fmt, now=1764460800)
    check_metrics(text, fmt)
    (group,) = {o.group for row in group_rows for o in row.outliers or ()}  # mi-c's peers
    labels = f'{{field="kernel",group="{group}",host="mi-c"}}'
    assert f"rocm_fleet_outlier{labels} 1.0" in text.splitlines()
    assert sum(line.startswith("rocm_fleet_outlier{") for line in text.splitlines()) == 1
    # the deploy would not change a running kernel: reported, not drift
    assert f"rocm_fleet_outlier_drift{labels} 0.0" in text.splitlines()


def test_gpu_health_families_per_host_and_gpu(group_rows):
    samples = {name: found for name, _, found, _ in metrics.families(group_rows, now=0) if found}
    healthy = {labels["host"]: value for labels, value in samples["rocm_fleet_gpu_healthy"]}
    assert set(healthy) == {"mi-a", "mi-b", "mi-c", "mi-d"}
    assert len(samples["rocm_fleet_gpu_healthy"]) == 4 * 8  # every GPU of every host
    sick = [labels for labels, value in samples["rocm_fleet_gpu_healthy"] if value == 0]
    assert [labels["host"] for labels in sick] == ["mi-d"]
    errors = {
        labels["gpu"]: value
        for labels, value in samples["rocm_fleet_gpu_ecc_uncorrectable_errors"]
        if labels["host"] == "mi-d" and value
    }
    assert errors == {sick[0]["gpu"]: errors[sick[0]["gpu"]]} and errors[sick[0]["gpu"]] > 0


def test_no_health_read_writes_no_gpu_samples(fleet_rows):
    # the harness's hosts answer "no amd-smi": unknown is absent, never a healthy 0
    text = metrics.render(fleet_rows, "openmetrics", now=0)
    assert "rocm_fleet_gpu_" not in text.replace("rocm_fleet_gpu_undriven", "")


def test_the_docs_list_every_concern_by_its_id():
    """docs/audit-and-metrics.md's table of concern ids has every deploy of the package
    (but the node's own and preflight, which are no concern)."""
    from rocm_fleet.audit.rows import ROOT_DEPLOY, concern_id

    source = ROOT / "tasks/rocm_fleet/deploy"
    names = {n for path in source.glob("*.py")
             for n in re.findall(r'@deploy\("([^"]+)"\)', path.read_text())}  # fmt: skip
    names -= {ROOT_DEPLOY, "Preflight"}
    docs = (ROOT / "docs/audit-and-metrics.md").read_text().split("### Concern ids")[1]
    docs = docs.split("\n## ")[0]
    documented = dict(re.findall(r"^\| `([a-z0-9_]+)` \| ([^|]+?) \|$", docs, re.M))
    assert documented == {concern_id(name): name for name in names}


def test_the_monitoring_command_writes_the_shipped_files_and_keeps_edits(tmp_path, capsys):
    from rocm_fleet.cli import main

    names = sorted(p.name for p in MONITORING.iterdir())
    assert main(["monitoring", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    for name in names:
        assert (tmp_path / name).read_bytes() == (MONITORING / name).read_bytes()
    # a second run changes nothing; an edited file is named and kept unless --force
    assert main(["monitoring", str(tmp_path)]) == 0
    assert capsys.readouterr().out.count(": unchanged") == len(names)
    edited = tmp_path / RULES.name
    edited.write_text("# mine\n")
    assert main(["monitoring", str(tmp_path)]) == 1
    assert f"{edited}: differs from rocm-fleet's, left alone" in capsys.readouterr().out
    assert edited.read_text() == "# mine\n"
    assert main(["monitoring", "--force", str(tmp_path)]) == 0
    assert edited.read_bytes() == RULES.read_bytes()


def test_the_monitoring_command_replaces_a_link_and_never_writes_through_it(tmp_path):
    from rocm_fleet.cli import main

    target = tmp_path / "elsewhere"
    target.write_text("not yours\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / DASHBOARD.name).symlink_to(target)
    assert main(["monitoring", "--force", str(out)]) == 0
    assert target.read_text() == "not yours\n"
    assert not (out / DASHBOARD.name).is_symlink()


def test_the_monitoring_command_refuses_a_missing_directory(tmp_path, capsys):
    from rocm_fleet.cli import main

    assert main(["monitoring", str(tmp_path / "none")]) == 4
    assert (
        capsys.readouterr().err
        == f"rocm-fleet monitoring: {tmp_path / 'none'}: not a directory (make it first)\n"
    )
