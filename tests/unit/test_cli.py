"""``rocm-fleet``: errors a user can fix are one line and exit status 2, never a traceback or
a report that checked nothing; ``--version`` names the installed version.

The inventories are tiny files in a temporary directory; their hosts are never contacted
(every case stops before connecting).
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

INVENTORY = 'gpus = [("gpu01.example.invalid", {"rocm_version": "6.4.3"})]\n'


def rocm_fleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rocm_fleet.cli", *args],
        capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
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
def test_audit_usage_errors_are_one_line_with_exit_status_2(tmp_path, files, args, message):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = rocm_fleet(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
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
