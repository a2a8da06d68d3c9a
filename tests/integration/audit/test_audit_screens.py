"""The tests of tests/unit/audit/test_audit_screens.py that start a process or a loopback server
(the integration tier; the pure ones stay there)."""

from __future__ import annotations

from integration.test_cli import INVENTORY, rocm_fleet
from unit.audit.test_audit_screens import ANSI


def test_the_command_colours_on_request_only(tmp_path):
    (tmp_path / "fleet.py").write_text(INVENTORY)
    args = ("audit", "fleet.py", "-q", "--data", "rocm_version=6.4.99")
    plain = rocm_fleet(*args, cwd=tmp_path)
    forced = rocm_fleet(*args, "--color", "always", cwd=tmp_path, NO_COLOR="1")
    never = rocm_fleet(*args, "--color", "never", cwd=tmp_path, FORCE_COLOR="1")
    assert plain.returncode == forced.returncode == never.returncode == 4  # invalid data
    assert "\x1b[" not in plain.stdout and "\x1b[" not in never.stdout
    assert "\x1b[1;31m" in forced.stdout and ANSI.sub("", forced.stdout) == plain.stdout
    # the bad key, as every command gives bad input: one line on stderr, never coloured
    assert plain.stderr == forced.stderr == never.stderr
    assert plain.stderr.startswith("rocm-fleet audit: gpu01.example.invalid: inventory key")
    narrow = rocm_fleet(*args, cwd=tmp_path, COLUMNS="60")
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60, narrow.stdout


def samples(text: str) -> dict[str, dict[tuple, float]]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        family.name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
        for family in text_string_to_metric_families(text)
    }


def test_a_failed_audit_replaces_the_last_report_and_keeps_the_last_success(tmp_path):
    """The inventory fails to load: the textfile says the audit failed now (success 0, no
    host's families left from the last good report) and when it last succeeded."""
    (tmp_path / "fleet.py").write_text(INVENTORY)
    target = tmp_path / "rocm_fleet.prom"
    args = ("--format", "prometheus", "--output", str(target))
    good = rocm_fleet("audit", "fleet.py", "-q", "--data", "rocm_version=6.4.3", *args,
                      cwd=tmp_path)  # fmt: skip
    assert good.returncode == 2, good.stderr  # the host is unreachable: reported, a success
    before = samples(target.read_text())
    assert before["rocm_fleet_audit_success"][()] == 1.0
    succeeded = before["rocm_fleet_audit_last_success_timestamp_seconds"][()]
    assert succeeded == before["rocm_fleet_audit_timestamp_seconds"][()]
    assert before["rocm_fleet_audit_status"]

    (tmp_path / "fleet.py").write_text("gpus = [\n")  # a syntax error: the audit can't run
    failed = rocm_fleet("audit", "fleet.py", "-q", *args, cwd=tmp_path)
    assert failed.returncode == 4 and failed.stdout == ""  # bad input (cli.exits)
    assert failed.stderr.startswith("rocm-fleet audit: fleet.py:"), failed.stderr
    after = samples(target.read_text())
    assert set(after) == {
        "rocm_fleet_audit_success",
        "rocm_fleet_audit_last_success_timestamp_seconds",
        "rocm_fleet_audit_timestamp_seconds",
        "rocm_fleet_audit_duration_seconds",
    }
    assert after["rocm_fleet_audit_success"][()] == 0.0
    assert after["rocm_fleet_audit_last_success_timestamp_seconds"][()] == succeeded
    assert after["rocm_fleet_audit_timestamp_seconds"][()] >= succeeded
    again = rocm_fleet("audit", "fleet.py", "-q", *args, cwd=tmp_path)  # still failing
    now = samples(target.read_text())
    moving = ("rocm_fleet_audit_timestamp_seconds", "rocm_fleet_audit_duration_seconds")
    assert now == {**after, **{name: now[name] for name in moving}}
    assert 0 < now["rocm_fleet_audit_duration_seconds"][()] < 60
    assert again.returncode == 4
