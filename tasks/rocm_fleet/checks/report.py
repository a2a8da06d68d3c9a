"""``rocm-fleet check``'s report, a pytest plugin in place of pytest's terminal reporter: a line
per host and check, wrapped to the screen (docs/check.md shows it), then the summary."""

import dataclasses
import itertools
import sys
import textwrap
from typing import Any, TextIO

import pytest

from rocm_fleet.cli.exits import Exit, worst
from rocm_fleet.cli.tables import Screen
from rocm_fleet.model.untrusted import visible

#: the user property of a check whose host could not be reached
UNREACHABLE = "rocm_fleet_unreachable"
SHOWN = {"passed": "ok", "failed": "FAILED", "skipped": "skipped", "unreachable": "UNREACHABLE"}
STYLE = {"passed": "green", "failed": "bold red", "skipped": "yellow", "unreachable": "bold red"}


@dataclasses.dataclass
class Outcome:
    host: str
    check: str
    result: str  # passed, failed, skipped, unreachable
    reason: str = ""
    details: str = ""  # pytest's explanation of a failure (shown with --tb or -v)


def check_name(item: Any) -> str:
    """The check's sentence: its docstring's first line without the full stop, else its name
    (``test_pin_prefers_amds_repository`` -> ``pin prefers amds repository``)."""
    doc = (getattr(getattr(item, "function", None), "__doc__", None) or "").strip()
    if doc:
        return doc.splitlines()[0].strip().removesuffix(".")
    name = getattr(item, "originalname", None) or item.name
    return name.removeprefix("test_").replace("_", " ")


def check_line(outcome: Outcome, host_width: int, screen: Screen) -> str:
    """``outcome``'s line (outcome, host, check and reason) wrapped to ``screen``'s width,
    nothing cut: under the check while it keeps 40 columns, else under the line, indented 4."""
    from rich.color import ColorSystem
    from rich.style import Style

    hosts = min(host_width, max(8, screen.width - 11 - 4 - 20))
    room = max(20, screen.width - 11 - 4 - hosts)
    check = visible(outcome.check + (f": {outcome.reason}" if outcome.reason else ""))
    host = pieces(visible(outcome.host), hosts)
    if room >= 40 or len(host) > 1:
        said = textwrap.wrap(check, room, break_on_hyphens=False) or [""]
    else:  # a narrow screen: the first line's room, then the screen's
        said = textwrap.wrap(
            check, max(20, screen.width), initial_indent=" " * (screen.width - room),
            subsequent_indent="    ", break_on_hyphens=False,
        )  # fmt: skip
        said[0] = said[0].lstrip()
        host += [""] * (len(said) - 1)
    shown = SHOWN[outcome.result]
    if screen.colour:
        shown = Style.parse(STYLE[outcome.result]).render(shown, color_system=ColorSystem.STANDARD)
    lines = []
    for n, (name, text) in enumerate(itertools.zip_longest(host, said, fillvalue="")):
        if n and not name and text.startswith("    "):  # under the line
            lines.append(text)
            continue
        first = shown + " " * (11 - len(SHOWN[outcome.result])) if n == 0 else " " * 11
        lines.append(f"{first}  {name:<{hosts}}  {text}".rstrip())
    return "\n".join(lines)


def pieces(text: str, width: int) -> list[str]:
    """``text`` (one line) in pieces ``width`` long, spacing kept."""
    return [text[i : i + width] for i in range(0, max(len(text), 1), max(1, width))]


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

    def __init__(
        self, out: TextIO | None = None, details: bool = False, screen: Screen | None = None
    ):
        self.out, self.details, self.screen = out or sys.stdout, details, screen or Screen()
        self.outcomes: list[Outcome] = []
        self._pending: dict[str, Outcome] = {}
        self._width = 0

    def pytest_collection_modifyitems(self, items: list[Any]) -> None:
        self._width = max((len(visible(host_name(item))) for item in items), default=0)

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
        print(check_line(outcome, self._width, self.screen), file=self.out)
        if outcome.details and (self.details or self._tbstyle not in ("no", "auto")):
            for detail in outcome.details.rstrip().splitlines():  # quoting the node: visible
                for piece in pieces(visible(detail), max(20, self.screen.width - 4)):
                    print(f"    {piece}", file=self.out)
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

    def pytest_sessionfinish(self) -> None:
        if self.outcomes:
            wrapped = textwrap.wrap(self.summary(), max(20, self.screen.width),
                                    break_on_hyphens=False, subsequent_indent="  ")  # fmt: skip
            print("\n".join(wrapped), file=self.out)

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
        found = {"failed": Exit.FINDINGS, "unreachable": Exit.NOT_CHECKED}
        return worst(found.get(o.result, Exit.OK) for o in self.outcomes)
