"""The suite's tiers, by what a test needs; the folder under tests/ says it and a marker of the
same name selects it (``pytest -m integration``):

- ``tests/unit``: pure, no process, no socket, no file outside tmp (tests/unit/conftest.py
  fails a test there that starts a process or connects a socket);
- ``tests/integration``: the CLI in-process and as a process, loopback sshd and HTTP, gpg,
  the docs build, shell scripts under dash;
- ``tests/e2e`` (and the lab's own tests, ``tests/lab``, marked ``lab`` where they need it):
  the lab, as root.

With ``CI=true``, a run given a whole tier's folder (or a folder above it) fails when the
tier's tests took longer than its budget (the sum of their setup, call and teardown times),
naming the tier's slowest tests (a run within budget says how much of it the tier took).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

import pytest

TIERS = ("unit", "integration", "e2e")
BUDGETS = {"unit": 60.0, "integration": 360.0}
SLOWEST = 10


class Budgets:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.tests = config.rootpath / "tests"
        self.tier_of: dict[str, str] = {}
        self.seconds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.checked: list[str] = []
        self.over: list[str] = []

    def tier(self, path: Path) -> str | None:
        """The tier of a test file: the first folder under tests/, when it is a tier's."""
        parts = path.relative_to(self.tests).parts if self.tests in path.parents else ()
        return parts[0] if parts and parts[0] in TIERS else None

    def covered(self) -> list[str]:
        """The budgeted tiers whose whole folder this run was given (or a folder above it)."""
        here = self.config.invocation_params.dir
        given = [(here / arg.split("::")[0]).resolve() for arg in self.config.args]
        return [
            tier
            for tier in BUDGETS
            if any(arg == self.tests / tier or arg in (self.tests / tier).parents for arg in given)
        ]

    def pytest_collection_modifyitems(self, items):
        for item in items:
            tier = self.tier(item.path)
            if tier:
                item.add_marker(tier)
                self.tier_of[item.nodeid] = tier

    def pytest_runtest_logreport(self, report):
        tier = self.tier_of.get(report.nodeid)
        if tier in BUDGETS:
            self.seconds[tier][report.nodeid] += report.duration

    def pytest_sessionfinish(self, session):
        if os.environ.get("CI") != "true":
            return
        self.checked = self.covered()
        self.over = [t for t in self.checked if sum(self.seconds[t].values()) > BUDGETS[t]]
        if self.over and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        for tier in self.checked:
            times = self.seconds[tier]
            terminalreporter.write_line(
                f"tests/{tier}: {sum(times.values()):.1f} s of its {BUDGETS[tier]:.0f} s budget "
                f"({len(times)} tests)"
            )
        for tier in self.over:
            times = self.seconds[tier]
            terminalreporter.section(f"tests/{tier} is over its budget", sep="=", red=True)
            terminalreporter.write_line(
                f"tests/{tier}: {sum(times.values()):.1f} s for {len(times)} tests, budget "
                f"{BUDGETS[tier]:.0f} s; its {SLOWEST} slowest (make them cheaper, or move "
                "one that needs more than this tier allows to the next tier):"
            )
            for nodeid, seconds in sorted(times.items(), key=lambda kv: -kv[1])[:SLOWEST]:
                terminalreporter.write_line(f"  {seconds:7.2f} s  {nodeid}")


def pytest_configure(config):
    config.pluginmanager.register(Budgets(config), "tiers-budgets")
