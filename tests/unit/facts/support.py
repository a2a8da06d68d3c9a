"""What the fact tests share: fixture outputs as pyinfra hands them to ``process()``, and the
facts' commands run for real.

Outputs are split into lines the way pyinfra hands them to ``process()`` (one string per
line, newline removed). The sysfs facts' commands are also run for real under ``dash``
against the trees in tests/fixtures/sysfs, and the marker/quoting logic of the other
commands is run with fake tools on PATH, so the POSIX sh is exercised, not just read.

A fact's parser cases are data, one file per case in tests/unit/facts/cases/<module.Fact>/
(run by test_fact_cases.py); what needs Python goes in the fact module's
tests/unit/facts/test_<module>.py.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DASH = shutil.which("dash") or shutil.which("sh")
# A path with a space, a quote and a dollar: what quoting must survive.
ODD_PATH = "/opt/my venv/it's $HOME/bin/python"


def lines(text: str) -> list[str]:
    return text.splitlines()


def fixture(*parts: str) -> str:
    """A file under tests/fixtures, as text."""
    return FIXTURES.joinpath(*parts).read_text()


def run_sh(command: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    """A fact's command under dash: its exit status and its output's lines."""
    proc = subprocess.run(
        [DASH, "-c", command], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    return proc.returncode, lines(proc.stdout)


def surveyed(reads: list, env: dict[str, str] | None = None) -> list:
    """The answers of ``reads`` in one survey command run here under dash (asserting that it
    ran, and that every read was answered), in the reads' order."""
    from rocm_fleet.facts.round_trip import Survey

    fact = Survey()
    rc, out = run_sh(fact.command(reads=reads), env)
    assert rc == 0
    answers = fact.process(out)
    assert len(answers) == len(reads)
    return answers


def fake_tool(directory: Path, name: str, script: str) -> None:
    """An executable ``directory/name`` running ``script`` under /bin/sh (put on PATH)."""
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
