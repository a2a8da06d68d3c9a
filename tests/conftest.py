"""The suite's tiers, by what a test needs; the folder says it and a marker of the same name
selects it (``pytest -m integration``):

- ``tests/unit``: pure, no process, no socket, no file outside tmp (tests/unit/conftest.py
  fails a test that starts a process or connects a socket);
- ``tests/integration``: the CLI in-process and as a process, loopback sshd and HTTP, gpg,
  the docs build, shell scripts under dash;
- ``tests/e2e`` (and the lab's own tests, ``tests/lab``): the lab, as root.

With ``CI=true``, a run that covers a whole tier's folder fails when that tier's tests took
longer than its budget (the sum of their setup, call and teardown), naming its slowest tests.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "e2e")
BUDGETS = {"unit": 60.0, "integration": 360.0}
SLOWEST = 10

_tier_of_test: dict[str, str] = {}
_durations: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
_over: list[str] = []


def tier_of(path: Path) -> str | None:
    """The tier of a test file: the first folder under tests/ when it is a tier's."""
    try:
        top = path.resolve().relative_to(TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return top if top in TIERS else None


def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = tier_of(item.path)
        if tier:
            item.add_marker(tier)
            _tier_of_test[item.nodeid] = tier


def pytest_runtest_logreport(report):
    tier = _tier_of_test.get(report.nodeid)
    if tier in BUDGETS:
        _durations[tier][report.nodeid] += report.duration


def covered_tiers(config) -> list[str]:
    """The budgeted tiers whose whole folder this run was given (or a folder above it)."""
    here = config.invocation_params.dir
    given = [(here / arg.split("::")[0]).resolve() for arg in config.args]
    return [
        tier
        for tier in BUDGETS
        if any(arg == TESTS / tier or arg in (TESTS / tier).parents for arg in given)
    ]


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI") != "true":
        return
    for tier in covered_tiers(session.config):
        total = sum(_durations[tier].values())
        if total > BUDGETS[tier]:
            _over.append(tier)
    if _over and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    for tier in _over:
        times = _durations[tier]
        terminalreporter.section(f"the {tier} tier is over its budget", sep="=", red=True)
        terminalreporter.write_line(
            f"tests/{tier}: {sum(times.values()):.1f} s for {len(times)} tests, budget "
            f"{BUDGETS[tier]:.0f} s; the {SLOWEST} slowest (make them cheaper, or move a "
            "test that needs more than its tier allows to the next tier):"
        )
        for nodeid, seconds in sorted(times.items(), key=lambda kv: -kv[1])[:SLOWEST]:
            terminalreporter.write_line(f"  {seconds:7.2f} s  {nodeid}")
