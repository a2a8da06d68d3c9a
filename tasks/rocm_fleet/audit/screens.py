"""The audit's rows on screen: summary table, wide table, JSON, progress."""

import json
import sys
import textwrap
from collections import namedtuple
from typing import IO, Any

from rich.console import Console
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from rocm_fleet.audit.cells import OBSERVED, OPTIONAL, AuditRow, Cell, ObservedCells
from rocm_fleet.cli import tables
from rocm_fleet.cli.tables import FALLBACK_WIDTH, Screen, grid, measure
from rocm_fleet.cli.tables import screen_for as screen_for
from rocm_fleet.model.untrusted import visible

#: how drifted cells and the reasons of hosts that aren't as the inventory says look
DRIFT_STYLE = "bold red"


def _style(drift: bool) -> str:
    return DRIFT_STYLE if drift else ""


#: a column of the wide table: an ``observed`` cell or a plan's ``concern``, by key
Column = namedtuple("Column", "kind key header")


def _concern_names(rows: list[AuditRow]) -> dict[str, str]:
    """Every concern any host's plan has, in plan order: id -> name."""
    names: dict[str, str] = {}
    for row in rows:
        for key, found in row.concerns.items():
            names.setdefault(key, found.name)
    return names


def _observed(rows: list[AuditRow]) -> dict[str, str]:
    """The observed columns: every one, but an optional one only when a host has its cell."""
    return {
        key: header
        for key, header in OBSERVED.items()
        if key not in OPTIONAL or any(row.cells.get(key) is not None for row in rows)
    }


def columns(rows: list[AuditRow]) -> list[Column]:
    """The observed columns, then every concern any host's plan has, in plan order."""
    shown = [Column("observed", key, header) for key, header in _observed(rows).items()]
    concerns = _concern_names(rows)
    return shown + [Column("concern", key, name.upper()) for key, name in concerns.items()]


def column_ids(rows: list[AuditRow]) -> dict[str, dict[str, str]]:
    """The JSON's ``columns``: observed key -> header, concern id -> its name."""
    return {"observed": _observed(rows), "concerns": _concern_names(rows)}


def _cell(row: AuditRow, column: Column) -> Cell | None:
    return (row.cells if column.kind == "observed" else row.concerns).get(column.key)


def summary_line(rows: list[AuditRow]) -> str:
    """``N hosts: ... as the inventory says, ... drifted, ...`` (``1 host``)."""
    counts = {s: sum(r.status == s for r in rows) for s in ("ok", "drift", "refused")}
    bad = len(rows) - sum(counts.values())
    hosts = "1 host" if len(rows) == 1 else f"{len(rows)} hosts"
    return (
        f"{hosts}: {counts['ok']} as the inventory says, {counts['drift']} drifted, "
        f"{counts['refused']} refused, {bad} unreachable/failed/invalid"
    )


def render_json(rows: list[AuditRow], status: int) -> str:
    hosts = [row.to_json() for row in rows]
    payload = {"exit_status": status, "columns": column_ids(rows), "hosts": hosts}
    return json.dumps(payload, indent=2) + "\n"


def render_table(rows: list[AuditRow], colour: bool = False) -> str:
    """The wide table: a line per host with data, then why for the others, then the summary."""
    shown = columns(rows)
    table = grid(["HOST", *(column.header for column in shown)])
    without = []
    for row in rows:
        if row.status not in ("drift", "ok"):
            without.append(row)
            continue
        line = [Text(visible(row.host), style=_style(row.status != "ok"))]
        for column in shown:
            found = _cell(row, column) or Cell("-")
            text = visible(found.text.removeprefix("! "))
            line.append(Text(f"! {text}" if found.drift else text, _style(found.drift)))
        table.add_row(*line)
    reasons = Table.grid(padding=(0, 2))  # the hosts without data: why, after the table
    for row in without:
        reason = f"! {row.status.upper()}: {visible(_why(row))}"
        reasons.add_row(Text(visible(row.host), DRIFT_STYLE), Text(reason, DRIFT_STYLE))
    console = tables.console(Screen(width=max(measure(table), measure(reasons)), colour=colour))
    console.print(table)
    if without:
        console.print(reasons)
    console.print(summary_line(rows))
    return tables.text_of(console)


SUMMARY = ("HOST", "STATUS", "DISTRO", "ROCM", "TORCH", "GPUS exp/found", "HEALTH")


def _health_summary(cells: ObservedCells) -> str:
    """``ok``, ``! N problems`` (the lines under the host say which), ``unknown``, ``-``."""
    health = cells.health
    if health is None:
        return "-"
    if health.problems:
        count = len(health.problems)
        return f"! {count} problem{'s' if count != 1 else ''}"
    return "ok" if health.status == "ok" else "unknown"


def _summary_values(row: AuditRow) -> list[str]:
    cells = row.cells
    if cells.gpus is None:
        return [visible(row.host), visible(row.status), "-", "-", "-", "-", "-"]
    want = cells.gpus.expected_count
    found = cells.gpus.found
    have = f"{'>=1' if want is None else want}/{len(found)}"
    values = [
        row.host,
        row.status,
        cells.distro.text if cells.distro else "-",
        cells.rocm_release or "none",
        (cells.torch.torch if cells.torch else None) or "none",
        " ".join([have, *sorted(set(found))]),
        _health_summary(cells),
    ]
    return [visible(value) for value in values]


def _details(row: AuditRow, verbose: bool) -> list[tuple[str, bool]]:
    """(text, drifted) lines under a host, ``visible``."""
    details: list[tuple[str, bool]] = []
    if row.status in ("drift", "ok"):
        for column in columns([row]):
            found = _cell(row, column)
            # an outlier is said even when it is no drift (the deploy would not change it)
            said = column.key == "outlier" and bool(row.outliers)
            if found and (found.drift or verbose or said):
                details.append((f"{column.header}: {found.text.removeprefix('! ')}",
                                found.drift))  # fmt: skip
        if verbose:  # preflight's warnings (a plain-HTTP mirror, an unofficial distro)
            details += [(f"warning: {w}", False) for w in row.warnings]
    elif row.status == "refused":
        details.append((f"refused: {row.error}", True))
        if verbose:
            details += [(f"{OBSERVED[k]}: {c.text}", c.drift) for k, c in row.cells.items()]
    else:
        details.append((f"{row.status}: {_why(row)}", True))
    return [(visible(text), drift) for text, drift in details]


def _why(row: AuditRow) -> str:
    if row.status == "invalid":
        return "its inventory data is not valid (each bad key on stderr)"
    return row.error or ""


def render_summary(
    rows: list[AuditRow],
    colour: bool = False,
    verbose: bool = False,
    width: int = FALLBACK_WIDTH,
) -> str:
    """A line per host fitting ``width``, with a wrapped ``!`` line per drift or reason under it."""
    console = tables.console(Screen(width, colour))
    table = grid(list(SUMMARY))
    hosts = max([len(SUMMARY[0])] + [len(visible(row.host)) for row in rows])
    # The whole name, not "…": the other columns give way first.
    table.columns[0].min_width = hosts if hosts + 12 <= width else max(8, width - 12)
    for row in rows:
        values = _summary_values(row)
        bad = row.status not in ("ok", "drift")
        sick = values[6].startswith("!")
        table.add_row(Text(values[0]), Text(values[1], _style(bad)), *values[2:6],
                      Text(values[6], _style(sick)))  # fmt: skip
    lines = console.render_lines(table, console.options, pad=False)
    console.print(Segments([*lines[0], Segment.line()]), end="")
    for row, line in zip(rows, lines[1:], strict=True):
        console.print(Segments([*line, Segment.line()]), end="")
        for text, drift in _details(row, verbose):
            wrapped = textwrap.wrap(
                text, max(20, width - 4), subsequent_indent="    ", break_on_hyphens=False
            )
            if not verbose and len(wrapped) > 4:  # a reason listing dozens of packages
                wrapped = [*wrapped[:3], "    … (the whole of it: -v or --format json)"]
            for i, piece in enumerate(wrapped):
                prefix = "  " + (("! " if drift else "  ") if i == 0 else "  ")
                console.print(Text(prefix) + Text(piece, _style(drift)), no_wrap=True,
                              crop=False, overflow="ignore")  # fmt: skip
    console.print(summary_line(rows))
    return tables.text_of(console)


class Progress:
    """The audit's progress on stderr: rich's status line on a terminal, else a line per host."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream, highlight=False, markup=False, emoji=False)
        self.live = self.console.is_terminal and not self.console.is_dumb_terminal
        self.status: Any = None

    def __call__(self, row: AuditRow, done: int, total: int) -> None:
        text = visible(f"audit [{done}/{total}] {row.host}: {row.status}")
        if not self.live:
            self.stream.write(text + "\n")
            self.stream.flush()
            return
        if self.status is None:
            self.status = self.console.status(text)
            self.status.start()
        self.status.update(text)
        if done == total:
            self.close()

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None
