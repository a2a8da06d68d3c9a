"""The tiers' markers and budgets (tests/tiers.py), on a suite of two tiers run in-process."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest
import tiers

SLOW = "import time\n\ndef test_slow():\n    time.sleep(0.05)\n\ndef test_quick():\n    pass\n"


# Only the plugin under test: no other plugin installed here slows the runs down.
RUN = ("-p", "tiers", "--disable-plugin-autoload")


@pytest.fixture
def suite(pytester, monkeypatch):
    pytester.makeini("[pytest]\n")
    for tier in ("unit", "integration"):
        (pytester.path / "tests" / tier).mkdir(parents=True)
        (pytester.path / "tests" / tier / f"test_{tier}.py").write_text(SLOW)
    monkeypatch.setattr(tiers, "BUDGETS", {"unit": 0.01, "integration": 60.0})
    monkeypatch.delenv("CI", raising=False)
    return pytester


def test_each_test_is_marked_with_its_folders_tier(suite):
    result = suite.inline_run(*RUN, "tests", "-m", "integration")
    result.assertoutcome(passed=2)
    assert all(
        "tests/integration/" in r.nodeid for r in result.getreports("pytest_runtest_logreport")
    )


def test_a_tier_over_its_budget_fails_a_ci_run_naming_its_slowest_tests(suite, monkeypatch):
    monkeypatch.setenv("CI", "true")
    result = suite.runpytest_inprocess(*RUN, "tests")
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*tests/unit is over its budget*",
            "tests/unit: * s for 2 tests, budget 0 s; its 10 slowest*",
            "  * s  tests/unit/test_unit.py::test_slow",
            "  * s  tests/unit/test_unit.py::test_quick",
        ]
    )
    assert "tests/integration is over" not in result.stdout.str()
    result.stdout.fnmatch_lines(["tests/integration: * s of its 60 s budget (2 tests)"])


def test_the_budget_holds_in_ci_only_and_for_a_whole_tier_only(suite, monkeypatch):
    assert suite.runpytest_inprocess(*RUN, "tests").ret == pytest.ExitCode.OK
    monkeypatch.setenv("CI", "true")
    one_file = suite.runpytest_inprocess(*RUN, "tests/unit/test_unit.py")
    assert one_file.ret == pytest.ExitCode.OK
    assert suite.runpytest_inprocess(*RUN, "tests/unit").ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    "needs",
    [
        lambda: subprocess.run(["true"], check=False),
        lambda: os.system("true"),
        lambda: socket.create_connection(("127.0.0.1", 9), timeout=1),
    ],
    ids=["subprocess", "os.system", "socket"],
)
def test_a_process_or_a_socket_fails_a_pure_test_naming_the_tier_it_belongs_in(needs):
    with pytest.raises(pytest.fail.Exception, match="belongs in tests/integration"):
        needs()
