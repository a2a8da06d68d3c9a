"""``rocm-fleet``: errors a user can fix are one line and exit status 4, never a traceback or
a report that checked nothing; ``--version`` names the installed version.

The inventories are tiny files in a temporary directory; their hosts are never contacted
(every case stops before connecting).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from rocm_fleet.model import matrix

INVENTORY = 'gpus = [("gpu01.example.invalid", {"rocm_version": "6.4.3"})]\n'


def rocm_fleet(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The command in a child process; its output goes to no terminal, 100 columns wide
    unless ``COLUMNS`` is given (the audit's table fits the width it is given)."""
    return subprocess.run(
        [sys.executable, "-m", "rocm_fleet.cli", *args],
        capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
        env={**os.environ, "COLUMNS": "100", **env},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({}, ["audit", "inventories/fleet.py"],
         "rocm-fleet audit: inventory file inventories/fleet.py does not exist"),
        ({"fleet.py": "gpus = [\n    ('gpu01.example.invalid', {'rocm_version': '6.4.3'}),\n"
                      "    ('gpu02.example.invalid' {}),\n]\n"},
         ["audit", "fleet.py"], "rocm-fleet audit: fleet.py:3: "),
        ({"fleet.py": INVENTORY}, ["audit", "fleet.py", "--limit", "gpu99*"],
         "rocm-fleet audit: --limit gpu99* matches no host or group of fleet.py"),
        ({"fleet.py": INVENTORY}, ["audit", "fleet.py", "--limit", "gpus", "--limit", "cpus"],
         "rocm-fleet audit: --limit cpus matches no host or group of fleet.py"),
    ],
    ids=["missing inventory", "syntax error", "limit matches nothing", "one of two limits"],
)  # fmt: skip
def test_audit_usage_errors_are_one_line_with_exit_status_4(tmp_path, files, args, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = rocm_fleet(*args, cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(message), lines[0]
    assert "Traceback" not in result.stderr


def test_syntax_error_names_the_file_line_and_python_message(tmp_path):
    (tmp_path / "fleet.py").write_text("gpus = [\n    ('gpu01', {'rocm_version': '6.4.3'}\n]\n")
    line = rocm_fleet("audit", "fleet.py", cwd=tmp_path).stderr.strip()
    # Python's own message for the bracket that doesn't match, at the line it stops on.
    assert line.startswith("rocm-fleet audit: fleet.py:3: "), line
    assert "does not match opening parenthesis" in line, line


def test_version_is_the_installed_distributions(tmp_path):
    result = rocm_fleet("--version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"rocm-fleet {version('rocm-fleet')}"


def test_the_top_level_help_imports_no_command():
    """Each subcommand's module is imported when it runs (``COMMANDS``): ``--help`` lists
    them from the table alone."""
    script = (
        "import sys\nfrom rocm_fleet.cli import COMMANDS, main\n"
        "assert main(['--help']) == 0\n"
        "print(sorted(m for m, _, _ in COMMANDS.values() if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.stdout.splitlines()[-1] == "[]", result.stdout + result.stderr
    assert "audit read-only drift report" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("missing", "args", "extra"),
    [("tuf", ["publish", "--repository", "r", "--keys", "k", "--init"], "pull"),
     ("pytest", ["check", "--hosts", "local://", "--rocm-version", "6.4.3"], "check"),
     ("rich", ["audit", "fleet.py"], "audit")],
)  # fmt: skip
def test_a_command_whose_extra_is_missing_names_it_in_one_line(tmp_path, missing, args, extra):
    """A package of an extra that isn't installed (None in sys.modules: its import fails as
    a missing one's does): one line naming the extra, the bad-input status."""
    (tmp_path / "fleet.py").write_text(INVENTORY)
    script = (
        f"import sys\nsys.modules[{missing!r}] = None\n"
        "from rocm_fleet.cli import main\nsys.exit(main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 4, result.stdout + result.stderr
    assert result.stderr == (
        f"rocm-fleet {args[0]} needs the '{extra}' extra: pip install 'rocm-fleet[{extra}]'\n"
    )


# --- beside pyinfra's CLI: pipes, widths, help, progress, --data ----------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def test_output_into_a_closed_pipe_ends_quietly(tmp_path):
    """`rocm-fleet matrix --json | head -1`: the reader goes away after one line; the tool
    stops without a BrokenPipeError traceback (exit 141, as a process killed by SIGPIPE)."""
    for _ in range(3):  # the race between the writer and the closing reader, several times
        process = subprocess.Popen(
            [sys.executable, "-m", "rocm_fleet.cli", "matrix", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
        )  # fmt: skip
        assert process.stdout.readline() == b"{\n"
        process.stdout.close()
        stderr = process.stderr.read().decode()
        assert process.wait(timeout=60) in (0, 141)
        assert stderr == "", stderr


def test_json_outputs_end_with_a_newline(tmp_path):
    for args in (["matrix", "--json"], ["settings", "--json"]):
        result = rocm_fleet(*args, cwd=tmp_path)
        assert result.returncode == 0 and result.stdout.endswith("}\n"), result.stdout[-20:]
        json.loads(result.stdout)


def test_the_matrix_table_fits_100_columns_and_says_what_its_short_forms_mean(tmp_path):
    result = rocm_fleet("matrix", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    header = lines[0].split()
    assert header[:6] == ["ROCm", "Stream", "Repository", "Index", "torch", "dkms"]
    short = [f"{d.id[0].upper()}{d.version.split('.')[0]}" for d in matrix.DISTROS]
    assert header[6:] == short
    first = lines[: lines.index("")]  # the first table; the columns that don't fit follow
    rows = {line.split()[0]: line.split() for line in first[1:] if line[:1].isdigit()}
    assert set(rows) == set(matrix.release_versions())
    for short_name, distro in zip(short, matrix.DISTROS, strict=True):
        assert f"{short_name} {distro.id.capitalize()} {distro.version}" in result.stdout
    newest = matrix.RELEASES[-1]
    assert rows[newest.version][1] == newest.stream.name


def test_settings_lists_every_key_in_100_columns_and_the_readme_table_as_markdown(tmp_path):
    from rocm_fleet.model.config import settings_table
    from rocm_fleet.model.settings import SETTINGS

    plain = rocm_fleet("settings", cwd=tmp_path).stdout
    keys = re.findall(r"^  (\w+) = ", plain, re.M)
    assert keys == list(SETTINGS)
    assert "  rocm_version = (required)" in plain
    assert max(len(line) for line in plain.splitlines()) <= 100
    markdown = rocm_fleet("settings", "--markdown", cwd=tmp_path).stdout
    assert markdown == settings_table() + "\n"


def test_audit_help_names_its_options_and_exit_statuses(tmp_path):
    text = " ".join(rocm_fleet("audit", "--help", cwd=tmp_path).stdout.split())
    for option in ("--data KEY=VALUE", "-v, --verbose", "--format", "--limit", "-q, --quiet"):
        assert option in text, option
    assert "openmetrics" in text and "prometheus" in text
    assert "exit status: 0 clean; 1 findings" in text
    assert "Here: 0 every host is as the inventory says; 1 a host drifted" in text
    assert "2 a host was unreachable" in text and "4 a host's inventory data is invalid" in text


def test_audit_data_overrides_every_host_as_pyinfras_does_with_progress_on_stderr(tmp_path):
    (tmp_path / "fleet.py").write_text(INVENTORY)
    result = rocm_fleet("audit", "fleet.py", "--data", "rocm_version=6.4.99", cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr  # bad input
    said = (
        "rocm-fleet audit: gpu01.example.invalid: inventory key 'rocm_version' has value '6.4.99'"
    )
    lines = result.stderr.splitlines()
    assert lines[0] == "audit [1/1] gpu01.example.invalid: invalid"
    assert len(lines) == 2 and lines[1].startswith(said), lines
    assert "inventory data is not valid (each bad key on stderr)" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("1 host: 0 as the inventory says")
    quiet = rocm_fleet("audit", "fleet.py", "-q", "--data", "rocm_version=6.4.99", cwd=tmp_path)
    assert quiet.stderr.splitlines() == lines[1:] and quiet.returncode == 4


def test_data_values_are_read_as_pyinfra_reads_them():
    from rocm_fleet.cli.inventory import UsageError, parse_data

    assert parse_data(
        [
            "rocm_version=6.4.3",
            "expected_gpu_count=8",
            "pytorch_install=false",
            'rocm_users=["alice"]',
        ]
    ) == {
        "rocm_version": "6.4.3",
        "expected_gpu_count": 8,
        "pytorch_install": False,
        "rocm_users": ["alice"],
    }
    with pytest.raises(UsageError, match="--data 'rocm_version': expected key=value"):
        parse_data(["rocm_version"])
    # The same values as pyinfra's own parser gives (in a child: pyinfra_cli patches gevent).
    values = ["6.4.3", "8", "false", "True", '["alice"]', "6.4", "a=b", "null"]
    pyinfras = subprocess.run(
        [sys.executable, "-c", "import json, sys; from pyinfra_cli.util import parse_cli_arg; "
         "print(json.dumps([parse_cli_arg(v) for v in sys.argv[1:]]))", *values],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert [parse_data([f"k={v}"])["k"] for v in values] == json.loads(pyinfras)


def test_matrix_check_with_upstream_unreachable_says_it_checked_nothing(tmp_path):
    unreachable = "http://127.0.0.1:1"  # loopback, port 1: connection refused
    result = rocm_fleet(
        "matrix", "check", "--release", "6.4.3", "--apt-base", unreachable, "--torch-base",
        unreachable, "--retries", "0", "--timeout", "2", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    last = result.stdout.splitlines()[-1]
    assert last.startswith("checked nothing: upstream unreachable for all "), last
    assert "publishes that the matrix lacks" not in last


# --- the audit's table and metrics, from the rows gather builds (as test_audit does) --------


# ``fleet_rows``: conftest.py (the audit's screens are tested in test_audit_screens.py too).


def test_the_audit_table_fits_100_columns_with_the_drift_under_its_host(fleet_rows):
    from rocm_fleet.audit import screens as audit

    text = audit.render_summary(fleet_rows, colour=True)
    lines = [ANSI.sub("", line) for line in text.splitlines()]
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert lines[0].split()[:2] == ["HOST", "STATUS"]
    hosts = {line.split()[0]: i for i, line in enumerate(lines[1:-1], 1) if line[:1] != " "}
    assert list(hosts) == [row.host for row in fleet_rows]
    drifty = hosts["drifty.lab.example.org"]
    under = lines[drifty + 1 : hosts["refused.lab.example.org"]]
    assert any(line.startswith("  ! ROCM APT REPOSITORY: Pin AMD") for line in under), under
    assert any(line.startswith("  ! REBOOT PENDING: pending: linux-image") for line in under)
    # A clean host gets no lines under it; -v shows every cell of it.
    assert hosts["drifty.lab.example.org"] == hosts["clean.lab.example.org"] + 1
    verbose = audit.render_summary(fleet_rows, verbose=True).splitlines()
    clean = verbose.index(next(line for line in verbose if line.startswith("clean.")))
    assert verbose[clean + 1].startswith("    DISTRO: debian")
    assert lines[hosts["gone"] + 1].startswith("  ! unreachable: Could not connect")
    assert (
        lines[hosts["typo"] + 1]
        == "  ! invalid: its inventory data is not valid (each bad key on stderr)"
    )
    assert lines[-1] == (
        "5 hosts: 1 as the inventory says, 1 drifted, 1 refused, 2 unreachable/failed/invalid"
    )
    assert "\x1b[1;31m" in text and "\x1b[1;31m" not in text.splitlines()[1]


def test_the_audit_summary_says_1_host():
    from rocm_fleet.audit import screens as audit
    from rocm_fleet.audit.cells import AuditRow

    assert audit.summary_line([AuditRow("a", "ok")]).startswith("1 host: 1 as")


def test_the_openmetrics_audit_parses_with_prometheus_clients_own_parser(fleet_rows):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from rocm_fleet.audit import metrics

    text = metrics.render(fleet_rows, "openmetrics", now=1764460800)
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {
        name: {tuple(sorted(s.labels.items())): s.value for s in family.samples}
        for name, family in families.items()
    }

    def value(name, host, **labels):
        return samples[name][tuple(sorted({"host": host, **labels}.items()))]

    for row in fleet_rows:
        for status in metrics.STATUSES:
            expected = 1.0 if status == row.status else 0.0
            assert value("rocm_fleet_audit_status", row.host, status=status) == expected
    assert value("rocm_fleet_gpus_expected", "clean.lab.example.org") == 1.0
    assert value("rocm_fleet_gpus_found", "clean.lab.example.org") == 1.0
    assert value("rocm_fleet_drifted_concerns", "clean.lab.example.org") == 0.0
    # the plan's concerns (the pin); the pending reboot the survey saw is a family of its own
    assert value("rocm_fleet_drifted_concerns", "drifty.lab.example.org") == 1.0
    assert value("rocm_fleet_reboot_pending", "drifty.lab.example.org") == 1.0
    assert value("rocm_fleet_reboot_pending", "clean.lab.example.org") == 0.0
    assert value("rocm_fleet_gpu_undriven", "clean.lab.example.org") == 0.0
    assert value("rocm_fleet_concern_drifted", "drifty.lab.example.org",
                 concern="rocm_apt_repository") == 1.0  # fmt: skip
    # concern labels are the stable snake_case ids, never the table's display names
    concerns = {dict(k)["concern"] for k in samples["rocm_fleet_concern_drifted"]}
    assert concerns == {"rocm_apt_repository", "rocm_packages", "gpu_groups", "pytorch",
                        "reboot", "verify"}  # fmt: skip
    for host in ("clean.lab.example.org", "drifty.lab.example.org"):
        per_concern = [v for k, v in samples["rocm_fleet_concern_drifted"].items()
                       if ("host", host) in k]  # fmt: skip
        assert sum(per_concern) == value("rocm_fleet_drifted_concerns", host)
    assert samples["rocm_fleet_audit_success"][()] == 1.0
    assert samples["rocm_fleet_audit_last_success_timestamp_seconds"][()] == 1764460800.0
    (info,) = [labels for labels in samples["rocm_fleet_host_info"]
               if ("host", "clean.lab.example.org") in labels]  # fmt: skip
    assert dict(info)["rocm_release"] == fleet_rows[0].cells.rocm.installed
    assert dict(info)["torch"] == fleet_rows[0].cells.torch.torch
    # Hosts without data have their status and nothing else.
    assert not [k for k in samples["rocm_fleet_gpus_found"] if ("host", "gone") in k]
    assert families["rocm_fleet_audit_timestamp_seconds"].unit == "seconds"
    assert samples["rocm_fleet_audit_timestamp_seconds"][()] == 1764460800.0


def test_the_prometheus_text_for_node_exporters_textfile_parses_too(fleet_rows):
    from prometheus_client.parser import text_string_to_metric_families

    from rocm_fleet.audit import metrics

    text = metrics.render(fleet_rows, "prometheus", now=1764460800)
    assert "# EOF" not in text and "# UNIT" not in text and text.endswith("\n")
    names = {family.name for family in text_string_to_metric_families(text)}
    assert {"rocm_fleet_audit_status", "rocm_fleet_host_info", "rocm_fleet_reboot_pending"} <= names


def test_label_values_are_escaped():
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    from rocm_fleet.audit import metrics
    from rocm_fleet.audit.cells import AuditRow

    rows = [AuditRow('odd"host\\name\n', "failed")]
    text = metrics.render(rows, now=0)
    (family,) = [f for f in text_string_to_metric_families(text)
                 if f.name == "rocm_fleet_audit_status"]  # fmt: skip
    assert {s.labels["host"] for s in family.samples} == {'odd"host\\name\n'}


def test_audit_output_writes_the_textfile_atomically(tmp_path):
    """--output FILE: node_exporter's textfile collector reads the directory on every
    scrape, so the file is replaced whole (no temporary file left beside it)."""
    from prometheus_client.parser import text_string_to_metric_families

    (tmp_path / "fleet.py").write_text(INVENTORY)
    (tmp_path / "textfile").mkdir()
    target = tmp_path / "textfile" / "rocm_fleet.prom"
    target.write_text("# the previous scrape's\n")
    result = rocm_fleet(
        "audit", "fleet.py", "-q", "--data", "rocm_version=6.4.99", "--format", "prometheus",
        "--output", str(target), cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 4 and result.stdout == ""
    assert result.stderr.startswith("rocm-fleet audit: gpu01.example.invalid: inventory key")
    assert len(result.stderr.splitlines()) == 1  # the one bad key
    assert [p.name for p in target.parent.iterdir()] == ["rocm_fleet.prom"]
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    samples = {
        (s.labels["host"], s.labels["status"]): s.value
        for family in text_string_to_metric_families(target.read_text())
        if family.name == "rocm_fleet_audit_status"
        for s in family.samples
    }
    assert samples[("gpu01.example.invalid", "invalid")] == 1
    missing = rocm_fleet("audit", "fleet.py", "--output", "nowhere/x.prom", cwd=tmp_path)
    assert missing.returncode == 4
    assert (
        missing.stderr.strip()
        == "rocm-fleet audit: --output nowhere/x.prom: nowhere is not a directory"
    )


# --- one shape for bad inventory data, in every command that reads an inventory -------------

BAD_FLEET = (
    "gpus = [\n"
    '    ("gpu01.example.invalid", {"rocm_version": "6.4.3", "rocm_users": "alice",\n'
    '                               "expected_gpu_count": -1}),\n'
    '    ("gpu02.example.invalid", {"rocm_version": "6.4.3", "rocm_state": "gone"}),\n'
    "]\n"
)
BAD_KEYS = [
    "gpu01.example.invalid: inventory key 'rocm_users' has value 'alice' (set in fleet.py); "
    "expected a list of user names, written as a list even for one, e.g. ['alice']",
    "gpu01.example.invalid: inventory key 'expected_gpu_count' has value -1 (set in fleet.py); "
    "expected a whole number >= 0; or leave it unset",
    "gpu02.example.invalid: inventory key 'rocm_state' has value 'gone' (set in fleet.py); "
    "expected one of 'present', 'absent'",
]


@pytest.mark.parametrize(
    "args",
    [["audit", "fleet.py", "-q"], ["audit", "fleet.py", "--json", "-q"], ["check", "fleet.py"],
     ["roll", "fleet.py"], ["bundle", "fleet.py", "--output", "out"],
     ["publish", "fleet.py", "--repository", "repo", "--keys", "keys"]],
    ids=lambda args: " ".join(args[:1] + args[2:3]),
)  # fmt: skip
def test_every_command_gives_bad_inventory_data_one_line_per_key_on_stderr(tmp_path, args):
    """Every host's bad keys, each on its own line of stderr as ``rocm-fleet CMD: PROBLEM``,
    exit status 4, and nothing made (the audit's report still has its rows on stdout)."""
    (tmp_path / "fleet.py").write_text(BAD_FLEET)
    if args[0] == "publish":
        made = rocm_fleet(
            "publish", "--init", "--repository", "repo", "--keys", "keys", cwd=tmp_path
        )
        assert made.returncode == 0, made.stderr
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = rocm_fleet(*args, cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    said = [line for line in result.stderr.splitlines() if line.startswith("rocm-fleet ")]
    assert said == [f"rocm-fleet {args[0]}: {line}" for line in BAD_KEYS], result.stderr
    assert "Traceback" not in result.stderr
    if args[0] != "audit":
        assert result.stdout == ""
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
