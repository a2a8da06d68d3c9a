"""The tests of tests/unit/audit/test_audit.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import subprocess
import sys

from unit.audit.test_audit import SELECT


def test_a_limit_selects_by_glob_or_group_and_one_that_matches_nothing_is_a_usage_error(tmp_path):
    (tmp_path / "lab.py").write_text('gpus = (["ws01", "ws02"], {"rocm_version": "6.4.3"})\n')
    result = subprocess.run(
        [sys.executable, "-c", SELECT, "ws0*", "gpus", "mi300x"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert result.stdout.splitlines() == [
        "ws0* ['ws01', 'ws02']",
        "gpus ['ws01', 'ws02']",
        "mi300x UsageError: --limit mi300x matches no host or group of lab.py",
    ]
