"""``rocm-fleet audit INVENTORY``: a read-only drift report (exit status: ``EXIT_STATUS``)."""

import logging
import sys
import time
from pathlib import Path
from typing import Any

import click

from rocm_fleet.atomic import write_atomically
from rocm_fleet.audit.metrics import FORMATS
from rocm_fleet.cli.exits import Command, epilog, option, print_problems, problem_lines
from rocm_fleet.cli.inventory import UsageError, host_options, parse_data
from rocm_fleet.cli.tables import COLOR_CHOICES, is_terminal
from rocm_fleet.model.untrusted import visible_lines

EXIT_STATUS = epilog(
    "Here: 0 every host is as the inventory says; 1 a host drifted or would be refused; "
    "2 a host was unreachable or failed to answer; 4 a host's inventory data is invalid, or "
    "the inventory or an option can't be used"
)


def run(args: Any) -> int:
    from rocm_fleet.audit import metrics, screens
    from rocm_fleet.audit.rows import exit_status, gather

    data = parse_data(args.data)
    fmt = "json" if args.json else args.format
    output = Path(args.output) if args.output else None
    if output is not None and not output.parent.is_dir():
        raise UsageError(f"--output {args.output}: {output.parent} is not a directory")
    if args.quiet:
        # -q: pyinfra's logger repeats each refusal the report gives.
        logging.getLogger("pyinfra").setLevel(logging.CRITICAL)
    progress = None if args.quiet else screens.Progress()
    started = time.time()
    try:
        rows = gather(args.inventory, args.limit, data or None, progress, detail=fmt == "json")
    except Exception:
        if fmt in metrics.FORMATS:
            # The failure's metrics replace the last good report (its time carried over).
            last = metrics.last_success(output) if output is not None else None
            _emit(metrics.render_failure(fmt, started, last, time.time() - started), output)
        raise
    finally:
        if progress is not None:
            progress.close()
    status = exit_status(rows)
    # Bad inventory data as every command gives it: a line per bad key on stderr.
    invalid = [row.error or "" for row in rows if row.status == "invalid"]
    print_problems("rocm-fleet audit", [line for e in invalid for line in problem_lines(e)])
    screen = screens.screen_for(sys.stdout, args.color)
    colour = screen.colour and output is None
    if fmt == "json":
        text = screens.render_json(rows, status)
    elif fmt in metrics.FORMATS:
        text = metrics.render(rows, fmt, now=started, duration=time.time() - started)
        if output is None:
            text = for_terminal(text, sys.stdout)
    elif args.wide:
        text = screens.render_table(rows, colour=colour) + "\n"
    else:
        text = screens.render_summary(rows, colour, args.verbose, width=screen.width) + "\n"
    _emit(text, output)
    return status


def for_terminal(text: str, stream) -> str:
    """Metrics with a node's controls written out (``visible_lines``) on a terminal."""
    return visible_lines(text) if is_terminal(stream) else text


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        write_atomically(output, text)


command = Command(
    "audit",
    run,
    gevent=True,  # the hosts' connections in parallel
    help="Plan the deploy for every host (reading the hosts, changing nothing) and report "
    "what would change: what --dry would show, by concern, with what the hosts report "
    "(kernel, Secure Boot, ROCm, torch, GPUs, driver, pending reboot).",
    epilog=EXIT_STATUS,
    params=[
        click.Argument(["inventory"], help="pyinfra inventory (file, host list or module)"),
        *host_options(),
        option("--format", type=click.Choice(("table", "json", *FORMATS)), default="table",
               help="table (default); json; openmetrics (Prometheus/OpenMetrics text); "
               "prometheus (text format 0.0.4, for node_exporter's textfile collector)"),
        option("--json", is_flag=True, help="the same as --format json"),
        option("--wide", is_flag=True, help="table: every column side by side, however wide"),
        option("-v", "--verbose", is_flag=True,
               help="table: every cell of every host, and long reasons in full"),
        option("--color", type=click.Choice(COLOR_CHOICES), default="auto",
               help="table: colour the drift; auto (default): on a terminal unless NO_COLOR is "
               "set"),
        option("-q", "--quiet", is_flag=True,
               help="nothing on stderr but errors: no progress, no refusal lines while planning "
               "(the report says why a host is refused)"),
        option("-o", "--output", metavar="FILE",
               help="write the report to FILE instead of stdout, atomically (e.g. --format "
               "prometheus into node_exporter's textfile directory; an audit that fails "
               "replaces it with rocm_fleet_audit_success 0, keeping the time of the last "
               "success)"),
    ],
)  # fmt: skip
