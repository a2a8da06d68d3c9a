"""``rocm-fleet check``'s lines on screens 60, 100 and 160 columns wide, coloured or not, and
the checks named by sentences (checks.report, checks.test_node)."""

from __future__ import annotations

import inspect
import io
import os
from pathlib import Path

import pytest

from rocm_fleet.checks import test_node
from rocm_fleet.checks.report import Outcome, Report, check_line, check_name
from rocm_fleet.cli.tables import Screen

REASON = (
    "/etc/apt/preferences.d/rocm-pin-600 is missing: the distribution's ROCm packages win "
    "over AMD's, and apt would install Debian's rocm-hip-runtime 5.7.1 instead of the release's"
)
FAILED = Outcome("gpu-node-017.example.org", "The apt pin prefers AMD's repository", "failed",
                 REASON)  # fmt: skip
CHECKS = [obj for name, obj in inspect.getmembers(test_node) if name.startswith("test_")]


def report_of(checks: Path, screen: Screen) -> str:
    """What check's report prints for ``checks`` (a file of checks, or their folder) run by
    pytest with ``--tb=short`` and ``-v``'s explanations, on ``screen``."""
    out = io.StringIO()
    root = checks if checks.is_dir() else checks.parent
    args = [str(checks), "-p", "no:cacheprovider", "-p", "no:randomly", "--tb=short",
            "--rootdir", str(root), "-c", os.devnull]  # fmt: skip
    pytest.main(args, plugins=[Report(out, details=True, screen=screen)])
    return out.getvalue()


class Item:
    """What ``check_name`` reads of a pytest item."""

    def __init__(self, function):
        self.function, self.originalname, self.name = function, function.__name__, "x"


@pytest.mark.parametrize("width", [60, 100, 160])
def test_a_check_line_fits_the_width_and_keeps_every_word(width):
    lines = check_line(FAILED, len(FAILED.host), Screen(width)).splitlines()
    assert all(len(line) <= width for line in lines), lines
    assert lines[0].startswith("FAILED       gpu-node-017.example.org  The apt pin ")
    # wrapped under the check; on a narrow screen under the line, indented 4
    start = 4 if width == 60 else len("FAILED       gpu-node-017.example.org  ")
    assert all(line[:start].strip() == "" for line in lines[1:]), lines
    said = f"{FAILED.check}: {REASON}"
    assert " ".join([lines[0][39:], *(line[start:] for line in lines[1:])]) == said
    assert len(lines) == {60: 5, 100: 5, 160: 2}[width], lines
    short = Outcome("n1", "rocminfo reports the expected GPUs", "passed")
    assert check_line(short, 2, Screen(width)) == f"ok           n1  {short.check}"


def test_a_host_name_too_long_for_the_screen_is_folded_not_cut():
    long = Outcome("node-" + "x" * 60, "torch is the ROCm build and sees the GPUs", "passed")
    lines = check_line(long, len(long.host), Screen(60)).splitlines()
    assert all(len(line) <= 60 for line in lines), lines
    assert "".join(line[13:38] for line in lines).strip() == long.host
    assert " ".join(line[40:] for line in lines).split() == long.check.split()


def test_outcomes_are_coloured_only_on_a_coloured_screen():
    coloured = check_line(FAILED, 24, Screen(100, colour=True))
    assert coloured.startswith("\x1b[1;31mFAILED\x1b[0m       gpu-node-017")
    ok = Outcome("n1", "rocminfo reports the expected GPUs", "passed")
    assert check_line(ok, 2, Screen(100, colour=True)).startswith("\x1b[32mok\x1b[0m ")
    plain = check_line(FAILED, 24, Screen(100, colour=False))
    assert "\x1b" not in plain and plain.startswith("FAILED       gpu-node-017")


def test_every_check_is_named_by_a_sentence_of_its_own():
    names = [check_name(Item(check)) for check in CHECKS]
    assert len(names) == 10 and len(set(names)) == len(names)
    for check, name in zip(CHECKS, names, strict=True):
        assert name == check.__doc__.splitlines()[0].removesuffix("."), check.__name__
        assert "test_" not in name and "_" not in name.replace("rocm_users", "").replace(
            "rocm_apu_gtt_gib", ""
        )
        assert 15 <= len(name) <= 60 and name[0] != " ", name
    assert "The apt pin prefers AMD's repository" in names


def test_a_check_without_a_docstring_is_named_by_its_function():
    def test_pin_prefers_amds_repository():
        pass

    assert check_name(Item(test_pin_prefers_amds_repository)) == "pin prefers amds repository"


@pytest.mark.parametrize("width", [60, 100, 160])
def test_the_whole_report_fits_the_width(tmp_path, width):
    """Lines, pytest's explanation (-v) and the summary, on a screen ``width`` wide."""
    (tmp_path / f"test_checks_{width}.py").write_text(  # a module name of its own per run
        "import pytest\n"
        "HOSTS = ['gpu-node-017.example.org', 'n2']\n"
        "@pytest.mark.parametrize('host', HOSTS, ids=HOSTS)\n"
        "def test_pin(host):\n"
        "    '''The apt pin prefers AMD's repository.'''\n"
        f"    assert host == 'n2', {REASON!r}\n"
        "@pytest.mark.parametrize('host', HOSTS, ids=HOSTS)\n"
        "def test_users(host):\n"
        "    '''The rocm_users can reach the GPU (video and render groups).'''\n"
        "    pytest.skip('no rocm_users to check: ' + 'the inventory names none ' * 5)\n"
    )
    lines = report_of(tmp_path, Screen(width)).splitlines()
    assert all(len(line) <= width for line in lines), [ln for ln in lines if len(ln) > width]
    starts = [line.split()[0] for line in lines if not line.startswith(" ")]
    assert starts[:4] == ["FAILED", "ok", "skipped", "skipped"], lines
    assert lines[-1] == "2 hosts, 4 checks: 1 passed, 1 failed, 2 skipped"
    assert any(f"test_checks_{width}.py" in line for line in lines)  # the explanation under -v
