"""``rocm-fleet matrix`` through the CLI in-process and ``rocm-fleet check`` in a child
process (it patches the process for gevent), on screens ``COLUMNS`` wide: no line wider,
nothing cut; ``check``'s outcomes coloured as ``--color``, ``NO_COLOR`` and ``FORCE_COLOR``
say (the audit's rules, cli.tables.screen_for).

``check`` runs on this machine (``--hosts local://``), which is not a ROCm node: the pin
check fails there with its reason, the users check is skipped; what matters is the shape.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocm_fleet.cli import main
from rocm_fleet.model import matrix

LOCAL = ["--hosts", "local://", "--rocm-version", "6.4.3"]
PIN_REASON = "/etc/apt/preferences.d/rocm-pin-600 is missing: the distribution's ROCm packages win"


def rocm_fleet_check(*args: str, cwd: Path, **environment) -> subprocess.CompletedProcess[str]:
    """``rocm-fleet check`` in a child process (it patches the process for gevent, as
    pyinfra's CLI does), writing to no terminal, no colour asked but by ``environment``."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    env.update({"COLUMNS": "100", **{k: str(v) for k, v in environment.items()}})
    return subprocess.run(
        [sys.executable, "-m", "rocm_fleet.cli", "check", *args], capture_output=True,
        text=True, cwd=cwd, timeout=300, check=False, env=env,
    )  # fmt: skip


@pytest.fixture
def screen(monkeypatch):
    """The environment of a screen: no colour asked either way."""
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)

    def columns(width: int) -> None:
        monkeypatch.setenv("COLUMNS", str(width))

    return columns


@pytest.mark.parametrize("width", [60, 100, 160])
def test_check_lines_fit_columns_and_name_checks_by_sentences(tmp_path, width):
    result = rocm_fleet_check(*LOCAL, "--", "-k", "pin or users", cwd=tmp_path, COLUMNS=width)
    assert result.returncode == 1, result.stdout + result.stderr  # the pin is missing here
    lines = result.stdout.splitlines()
    assert all(len(line) <= width for line in lines), [ln for ln in lines if len(ln) > width]
    starts = [n for n, line in enumerate(lines) if not line.startswith(" ")]
    assert [lines[n].split()[0] for n in starts] == ["FAILED", "skipped", "1"], lines
    assert lines[0].startswith("FAILED       local  The apt pin prefers AMD's repository:")
    # each check's line whole: every word of it, in order, over its wrapped lines
    pin, users = (" ".join(" ".join(lines[a:b]).split()) for a, b in itertools.pairwise(starts))
    assert pin.endswith(f"local The apt pin prefers AMD's repository: {PIN_REASON}"), pin
    assert users == (
        "skipped local The rocm_users can reach the GPU (video and render groups): no "
        "rocm_users to check"
    )
    assert lines[-1] == "1 host, 2 checks: 0 passed, 1 failed, 1 skipped"
    assert "\x1b" not in result.stdout and "test_pin_prefers" not in result.stdout


@pytest.mark.parametrize(
    ("argv", "environment", "coloured"),
    [([], {}, False), ([], {"FORCE_COLOR": "1"}, True),
     ([], {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False), (["--color", "always"], {}, True),
     (["--color", "never"], {"FORCE_COLOR": "1"}, False)],
    ids=["not a terminal", "FORCE_COLOR", "NO_COLOR wins", "always", "never"],
)  # fmt: skip
def test_check_colours_as_the_audit_does(tmp_path, argv, environment, coloured):
    result = rocm_fleet_check(*LOCAL, *argv, "--", "-k", "pin", cwd=tmp_path, **environment)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert out.startswith("\x1b[1;31mFAILED\x1b[0m       local  ") == coloured, out
    assert ("\x1b" in out) == coloured


@pytest.mark.parametrize("width", [60, 100, 160])
def test_matrix_fits_columns_and_shows_every_releases_gpu_targets(screen, capsys, width):
    screen(width)
    assert main(["matrix"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert all(len(line) <= width for line in lines), [ln for ln in lines if len(ln) > width]
    assert "GPU targets" in out
    for rel in matrix.RELEASES:  # each release's targets, listed whole (wrapped lines joined)
        rows = [ln for ln in lines if ln.startswith(f"{rel.version} ") and "gfx" in ln]
        assert len(rows) == 1, (rel.version, rows)
    joined = " ".join(out.split())
    assert "gfx1151" in joined and "gfx950" in joined
