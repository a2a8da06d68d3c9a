"""``rocm-fleet check``'s report, a pytest plugin in place of pytest's terminal reporter
(``--tb`` stays): one line per host and check with the check's own reason, never cut, then
one summary line; the exit status by ``cli.exits``::

    ok           node1  rocm source uses keyring and suite
    FAILED       node2  pin prefers amds repository: /etc/apt/preferences.d/rocm-pin-600 is missing
    UNREACHABLE  node3  rocm source uses keyring and suite: Could not connect (...)
    3 hosts, 18 checks: 5 passed, 1 failed, 6 skipped, 6 not run (unreachable: node3)
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, TextIO

import pytest

from rocm_fleet.cli.exits import Exit, worst
from rocm_fleet.cli.tables import line
from rocm_fleet.model.untrusted import visible

#: the user property of a check whose host was unreachable (``checks.plugin.UNREACHABLE``)
UNREACHABLE = "rocm_fleet_unreachable"
#: how each outcome is shown (the failures in capitals, to be seen in a long list)
SHOWN = {"passed": "ok", "failed": "FAILED", "skipped": "skipped", "unreachable": "UNREACHABLE"}


@dataclasses.dataclass
class Outcome:
    host: str
    check: str
    result: str  # passed, failed, skipped, unreachable
    reason: str = ""
    details: str = ""  # pytest's explanation of a failure (shown with --tb or -v)


def check_name(item: Any) -> str:
    """``test_pin_prefers_amds_repository`` -> ``pin prefers amds repository``."""
    name = getattr(item, "originalname", None) or item.name
    return name.removeprefix("test_").replace("_", " ")


def host_name(item: Any) -> str:
    callspec = getattr(item, "callspec", None)
    return callspec.id if callspec is not None else "-"


def one_line(text: str) -> str:
    return " ".join(text.split())


def reason_of(report: pytest.TestReport, excinfo: pytest.ExceptionInfo | None) -> str:
    """The check's own words: a skip's reason, an assertion's first line, or the exception."""
    if report.skipped and isinstance(report.longrepr, tuple):
        return one_line(str(report.longrepr[2]).removeprefix("Skipped: "))
    if excinfo is None:
        return ""
    exc = excinfo.value
    if isinstance(exc, AssertionError):
        lines = [line for line in str(exc).splitlines() if line.strip()]
        return one_line(lines[0]) if lines else "assertion failed"
    if isinstance(exc, pytest.fail.Exception):
        return one_line(str(exc.msg))
    return one_line(f"{type(exc).__name__}: {exc}")


class Report:
    """The plugin: prints each check's line when done, and the summary at the end."""

    def __init__(self, out: TextIO | None = None, details: bool = False):
        self.out = out or sys.stdout
        self.details = details
        self.outcomes: list[Outcome] = []
        self._pending: dict[str, Outcome] = {}
        self._width = 0
        self.interrupted = False

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        self._width = max((len(host_name(item)) for item in items), default=0)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: pytest.CallInfo) -> Any:
        report = yield
        outcome = self._pending.setdefault(
            item.nodeid, Outcome(host_name(item), check_name(item), "passed")
        )
        if report.failed or report.skipped:
            unreachable = dict(item.user_properties).get(UNREACHABLE)
            if unreachable:
                outcome.result, outcome.reason = "unreachable", unreachable
            elif outcome.result == "passed":  # the first phase that did not pass decides
                outcome.result = "failed" if report.failed else "skipped"
                outcome.reason = reason_of(report, call.excinfo)
                if report.failed:
                    outcome.details = report.longreprtext
        return report

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        outcome = self._pending.pop(nodeid, None)
        if outcome is None:
            return
        self.outcomes.append(outcome)
        # the reason and details quote what the node answered: ``visible``
        check = visible(outcome.check + (f": {outcome.reason}" if outcome.reason else ""))
        shown = [SHOWN[outcome.result], visible(outcome.host), check]
        print(line(shown, [11, self._width]), file=self.out)
        if outcome.details and (self.details or self._tbstyle not in ("no", "auto")):
            for detail in outcome.details.rstrip().splitlines():
                print(f"    {visible(detail)}", file=self.out)
        self.out.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        self._tbstyle = config.getoption("tbstyle", "no")
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            config.pluginmanager.unregister(terminal)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """The checks could not be loaded (pytest's own report is not printed): say why."""
        if report.failed:
            lines = [line for line in report.longreprtext.splitlines() if line.strip()]
            why = one_line(lines[-1]) if lines else "collection failed"
            print(f"rocm-fleet check: could not load {report.nodeid or 'the checks'}: {why}",
                  file=sys.stderr)  # fmt: skip

    def pytest_keyboard_interrupt(self) -> None:
        self.interrupted = True

    def pytest_sessionfinish(self) -> None:
        if self.outcomes:
            print(self.summary(), file=self.out)

    def summary(self) -> str:
        hosts = list(dict.fromkeys(o.host for o in self.outcomes))
        counts = {r: sum(o.result == r for o in self.outcomes) for r in SHOWN}
        said = [f"{counts['passed']} passed"]
        said += [f"{counts[r]} {r}" for r in ("failed", "skipped") if counts[r]]
        if counts["unreachable"]:
            gone = list(dict.fromkeys(o.host for o in self.outcomes if o.result == "unreachable"))
            said.append(f"{counts['unreachable']} not run (unreachable: {', '.join(gone)})")
        checks = f"{len(self.outcomes)} check{'s' if len(self.outcomes) != 1 else ''}"
        return f"{len(hosts)} host{'s' if len(hosts) != 1 else ''}, {checks}: {', '.join(said)}"

    def status(self) -> Exit:
        """The run's exit status by the scheme (findings before could-not-check)."""
        found = {
            "failed": Exit.FINDINGS, "unreachable": Exit.NOT_CHECKED,
            "passed": Exit.OK, "skipped": Exit.OK,
        }  # fmt: skip
        return worst(found[o.result] for o in self.outcomes)
