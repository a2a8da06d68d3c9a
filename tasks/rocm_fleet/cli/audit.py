"""``rocm-fleet audit INVENTORY [--limit PATTERN] [--data KEY=VALUE] [--format FORMAT] [-v]``:
a read-only drift report.

The audit plans the deploy itself (``rocm_node``) for every host, with pyinfra's planning,
which reads the hosts and runs nothing on them: a resource drifts exactly when the operation
that enforces it would change something, which is what ``--dry`` reports, so every resource
a task manages shows up here with no list of its own. The plan's operations are grouped by
concern (the deploy they belong to: "ROCm apt repository", "PyTorch", ...), one column each.
Beside them, what the preflight survey saw that no operation enforces: the running kernel,
Secure Boot and the MOK, the installed ROCm and torch, the GPUs, whether the GPU is driven
and whether a reboot is pending. A host preflight would refuse is reported with the same
reason. Connections and planning run in parallel with pyinfra's own machinery.

Formats: a table that fits 100 columns (one line per host, the drift under it; ``--wide``
every column side by side), JSON, and OpenMetrics / Prometheus text (``cli.metrics``).
Progress goes to stderr. Exit status: 0 nothing drifted, 1 a host drifted or would be
refused, 2 a host was unreachable, failed, or has invalid inventory data, or the inventory
couldn't be used.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rocm_fleet.cli.inventory import UsageError, load_inventory

# Columns of what the survey saw (key -> header), before the concerns' columns.
OBSERVED = {
    "distro": "DISTRO",
    "kernel": "KERNEL",
    "secure_boot": "SECURE BOOT / MOK",
    "rocm": "ROCM",
    "torch": "TORCH (hip)",
    "gpus": "GPUS expected/found",
    "driver": "DRIVER",
    "reboot": "REBOOT PENDING",  # the Reboot concern's column is "REBOOT"
}
# The deploy every operation of rocm-fleet belongs to (rocm_fleet/deploy/node.py), left out of the
# concern names.
ROOT_DEPLOY = "rocm-fleet"


def cell(text: str, drift: bool = False, **data: Any) -> dict[str, Any]:
    return {"text": text, "drift": drift, **data}


def observed_cells(config: Any, survey: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The cells of what the survey saw; only a GPU the kernel doesn't drive and a pending
    reboot count as drift (everything else an operation enforces is in the plan)."""
    from rocm_fleet.deploy.reboot import wanted_driver
    from rocm_fleet.facts.apt import kernel_releases
    from rocm_fleet.model.boot import survey_boot
    from rocm_fleet.model.findings import amd_pci, describe_gpus, gpus_found, venv_torch
    from rocm_fleet.model.paths import MOK_KEYS
    from rocm_fleet.model.versions import newer_kernels

    cells: dict[str, dict[str, Any]] = {}
    distro = survey.get("distro") or {}
    name = f"{distro.get('id', '?')} {distro.get('point_release') or distro.get('version_id')}"
    cells["distro"] = cell(name)

    running = survey.get("kernel") or "?"
    newer = newer_kernels(running, kernel_releases(survey.get("packages") or {}))
    text = running + (f" (newer installed: {newer[-1]})" if newer else "")
    cells["kernel"] = cell(text, running=running, newer=newer[-1] if newer else None)

    sb = (survey.get("secure_boot") or {}).get("state", "unknown")
    states = [(survey.get(f"mok {cert}") or {}).get("state") for cert, _ in MOK_KEYS.values()]
    mok = next((s for s in states if s not in ("missing", "absent", None)), None)
    sb_text = {"absent": "unknown (no mokutil)"}.get(sb, sb) + (f", MOK {mok}" if mok else "")
    cells["secure_boot"] = cell(sb_text, state=sb, mok=mok)

    installed = survey.get("rocm_version")
    cells["rocm"] = cell(installed or "none", installed=installed)

    torch = venv_torch(survey)
    hip = f" (hip {torch['hip']})" if torch["hip"] else ""
    cells["torch"] = cell(f"{torch['torch'] or 'none'}{hip}", **torch)

    found = gpus_found(survey)
    expected = _expected_text(config)
    cells["gpus"] = cell(
        f"{expected} / {describe_gpus(found)}",
        expected=expected,
        expected_count=config.expected_gpu_count,
        found=[g["gfx"] for g in found],
        # an APU's integrated GPU: amdgpu's memory totals (bytes), its VRAM being a carve-out
        apus=[
            {key: g[key] for key in ("gfx", "slot", "vram_total", "gtt_total")}
            for g in found
            if g.get("apu")
        ],
    )

    amdgpu = survey.get("amdgpu") or {}
    bound = sorted({g["driver"] for g in amd_pci(survey) if g.get("driver")})
    driver = "amdgpu " + (amdgpu.get("version") or "(inbox)") if amdgpu.get("loaded") else "none"
    undriven = (
        config.rocm_state == "present"
        and config.expected_gpu_count != 0
        and bool(amd_pci(survey))
        and "amdgpu" not in bound
    )
    cells["driver"] = cell(
        driver + (" (GPU not bound to amdgpu)" if undriven else ""), undriven, bound=bound
    )

    reboot = survey.get("reboot") or {}
    pending = bool(reboot.get("required"))
    reasons = list(reboot.get("reasons") or []) + list(reboot.get("packages") or [])
    # The kernel it boots next and every installed one, ready for the driver or not: a
    # reboot into an unready kernel strands the host (the deploy refuses it).
    boot = survey_boot(
        survey, wanted_driver(config), MOK_KEYS.get(distro.get("id") or "", ("",))[0] or None
    )
    text = (
        "pending: " + "; ".join(reasons) if pending and reasons else "pending" if pending else "no"
    )
    if boot["refused"]:
        text += " | NOT SAFE: " + "; ".join(boot["refused"])
    cells["reboot"] = cell(text, pending or bool(boot["refused"]), reasons=reasons, boot=boot)
    return cells


def _expected_text(config: Any) -> str:
    count = config.expected_gpu_count
    gfx = "/".join(config.expected_gfx_list) or "any"
    if count == 0:
        return "none"
    return f"{count if count is not None else '>=1'} x {gfx}"


def plan_drift(state: Any, host: Any) -> dict[str, list[str]]:
    """Concern -> the names of its operations that would change this host, in plan order;
    every concern planned for the host is a key (empty list: no drift). Operations gated
    with ``_if`` follow another operation's change, which is reported itself."""
    from rocm_fleet.engine.plan import planned_operations

    concerns: dict[str, list[str]] = {}
    for planned in planned_operations(state, host):
        names = planned.names
        parts = [p for p in names[0].split(" | ") if p != ROOT_DEPLOY] if names else ["?"]
        concern, operation = (parts[0], parts[-1]) if len(parts) > 1 else ("other", parts[0])
        if concern == "Preflight":
            continue
        concerns.setdefault(concern, [])
        if planned.changes and not planned.conditional:
            concerns[concern].append(operation)
    return concerns


def gather(
    inventory_path: str,
    limits: list[str],
    override_data: dict[str, Any] | None = None,
    progress: Any = None,
) -> list[dict[str, Any]]:
    """Connect to every (limited) host in parallel, plan the deploy for it, build its row;
    ``progress(row, done, total)`` is called as each host's row is ready."""
    from pyinfra.api.exceptions import ConnectError, PyinfraError

    from rocm_fleet.deploy.node import host_config, rocm_node
    from rocm_fleet.engine.plan import plan_deploy, plan_in_parallel
    from rocm_fleet.engine.refuse import outcome
    from rocm_fleet.model.config import ConfigError

    state, hosts = load_inventory(
        inventory_path, limits, check_for_changes=True, override_data=override_data
    )

    def audit(host) -> dict[str, Any]:
        row: dict[str, Any] = {"host": host.name, "error": None, "drift": [], "cells": {}}
        try:
            config = host_config(host)  # the mirror resolved too: a wrong one is invalid
        except ConfigError as exc:
            return {**row, "status": "invalid", "error": str(exc)}
        try:
            host.connect(show_errors=False, raise_exceptions=True)
        except (ConnectError, PyinfraError, OSError) as exc:
            error = str(exc.args[0] if exc.args else exc)
            return {**row, "status": "unreachable", "error": error}
        plan_deploy(state, host, rocm_node)
        if config.rocm_state == "absent":
            # A decommissioned host has no preflight: what the removal would still take
            # away is its whole drift, and a clean one is as the inventory says.
            return _absent_row(row, plan_drift(state, host))
        found = outcome(state, host.name)
        if found is None or found.survey is None:
            reason = found.refused if found else "preflight did not run"
            return {**row, "status": "failed", "error": reason}
        cells = observed_cells(config, found.survey)
        drift = [key for key, c in cells.items() if c["drift"]]
        if found.refused:
            details = found.findings.details if found.findings else {}
            return {**row, "status": "refused", "error": found.refused, "cells": cells,
                    **({"details": details} if details else {})}  # fmt: skip
        for concern, operations in plan_drift(state, host).items():
            text = "! " + "; ".join(operations) if operations else "ok"
            cells[concern] = cell(text, bool(operations), operations=operations)
            drift += [f"{concern}: {name}" for name in operations]
        status = "drift" if drift else "ok"
        # What preflight warns of (a plain-HTTP mirror, an unofficial distro): said, not drift.
        warnings = found.findings.warnings if found.findings else []
        said = {"warnings": warnings} if warnings else {}
        return {**row, "status": status, "drift": drift, "cells": cells, **said,
                **verified(found.survey)}  # fmt: skip

    done = []

    def audit_and_report(host) -> dict[str, Any]:
        row = {"host": host.name, "status": "failed"}  # until audit() returns
        try:
            row = audit(host)
            return row
        finally:
            done.append(host)
            if progress is not None:
                progress(row, len(done), len(hosts))

    rows = []
    for host, result in zip(hosts, plan_in_parallel(state, hosts, audit_and_report), strict=True):
        if isinstance(result, BaseException):
            error = f"{type(result).__name__}: {result}"
            rows.append(
                {"host": host.name, "status": "failed", "error": error, "drift": [], "cells": {}}
            )
        else:
            rows.append(result)
    for host in hosts:
        if host.connected:
            host.disconnect()
    return rows


def _absent_row(row: dict[str, Any], concerns: dict[str, list[str]]) -> dict[str, Any]:
    """The row of a host whose inventory says ``rocm_state: absent``."""
    cells = {"rocm": cell("absent (rocm_state)")}
    drift = []
    for concern, operations in concerns.items():
        text = "! " + "; ".join(operations) if operations else "ok"
        cells[concern] = cell(text, bool(operations), operations=operations)
        drift += [f"{concern}: {name}" for name in operations]
    return {**row, "status": "drift" if drift else "ok", "drift": drift, "cells": cells}


def verified(survey: dict[str, Any]) -> dict[str, Any]:
    """When the deploy's GPU check last passed on the host in this boot (the record it
    keeps, read while planning the Verify concern), as ``verified_at`` (seconds)."""
    from rocm_fleet.model.paths import VERIFIED

    record = survey.get(f"file {VERIFIED}")  # surveyed: operations.gpu declares the read
    return {"verified_at": record["mtime"]} if record else {}


# --- output -----------------------------------------------------------------------------------


def exit_status(rows: list[dict[str, Any]]) -> int:
    if any(r["status"] in ("unreachable", "failed", "invalid") for r in rows):
        return 2
    return 1 if any(r["status"] in ("drift", "refused") for r in rows) else 0


def columns(rows: list[dict[str, Any]]) -> dict[str, str]:
    """The observed columns, then every concern any host's plan has, in plan order."""
    found = dict(OBSERVED)
    for row in rows:
        for key in row["cells"]:
            found.setdefault(key, key.upper())
    return found


def render_table(rows: list[dict[str, Any]], colour: bool = False) -> str:
    """One line per host; drifted cells get a leading ``!`` (and red when ``colour``)."""
    shown = columns(rows)
    headers = ["HOST", *shown.values()]
    table: list[list[tuple[str, bool]]] = []
    for row in rows:
        line = [(row["host"], row["status"] != "ok")]
        if row["status"] in ("drift", "ok"):
            for key in shown:
                c = row["cells"].get(key) or cell("-")
                line.append(
                    ("! " + c["text"].removeprefix("! ") if c["drift"] else c["text"], c["drift"])
                )
        else:
            line.append((f"! {row['status'].upper()}: {row['error']}", True))
        table.append(line)
    widths = [len(h) for h in headers]
    for line in table:
        if len(line) == len(headers):
            for i, (text, _) in enumerate(line):
                widths[i] = max(widths[i], len(text))
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for line in table:
        parts = []
        for i, (text, drift) in enumerate(line):
            padded = text if len(line) != len(headers) else text.ljust(widths[i])
            parts.append(f"\x1b[1;31m{padded}\x1b[0m" if colour and drift else padded)
        out.append("  ".join(parts).rstrip())
    out.append(summary_line(rows))
    return "\n".join(out)


def summary_line(rows: list[dict[str, Any]]) -> str:
    """``N hosts: ... as the inventory says, ... drifted, ...`` (``1 host``)."""
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "drift", "refused")}
    bad = len(rows) - sum(counts.values())
    hosts = "1 host" if len(rows) == 1 else f"{len(rows)} hosts"
    return (
        f"{hosts}: {counts['ok']} as the inventory says, {counts['drift']} drifted, "
        f"{counts['refused']} refused, {bad} unreachable/failed/invalid"
    )


# The default table: one short line per host that fits 100 columns, then, under each host
# that isn't as the inventory says, one wrapped line per drifted concern or per reason
# (``--wide``: every column side by side, as wide as it takes).
WIDTH = 100
SUMMARY = (  # header, widest (longer values are clipped with "…")
    ("HOST", 24),
    ("STATUS", 11),
    ("DISTRO", 14),  # "ubuntu 24.04.3"
    ("ROCM", 10),
    ("TORCH", 17),  # "2.14.0+rocm10.1.0", AMD's 10.x label
    ("GPUS exp/found", 14),
)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def render_summary(rows: list[dict[str, Any]], colour: bool = False, verbose: bool = False) -> str:
    """Short rows that fit ``WIDTH`` columns; the drift (every cell with ``verbose``) below
    each host, wrapped. Drifted lines start with ``!`` (and are red when ``colour``)."""
    import textwrap

    def values(row: dict[str, Any]) -> list[str]:
        cells = row["cells"]
        if not cells:
            return [row["host"], row["status"], "-", "-", "-", "-"]
        gpus = cells["gpus"]
        want = gpus.get("expected_count")
        found = gpus.get("found") or []
        have = f"{'>=1' if want is None else want}/{len(found)}"
        return [
            row["host"],
            row["status"],
            cells["distro"]["text"],
            cells["rocm"].get("installed") or "none",
            cells["torch"].get("torch") or "none",
            " ".join([have, *sorted(set(found))]),
        ]

    table = [values(row) for row in rows]
    widths = [
        min(limit, max([len(header)] + [len(line[i]) for line in table]))
        for i, (header, limit) in enumerate(SUMMARY)
    ]
    red = ("\x1b[1;31m", "\x1b[0m") if colour else ("", "")

    def line(parts: list[str]) -> str:
        clipped = [_clip(p, w).ljust(w) for p, w in zip(parts, widths, strict=True)]
        return "  ".join(clipped).rstrip()

    out = [line([header for header, _ in SUMMARY])]
    for row, shown in zip(rows, table, strict=True):
        out.append(line(shown))
        details: list[tuple[str, bool]] = []
        if row["status"] in ("drift", "ok"):
            for key, header in columns([row]).items():
                c = row["cells"].get(key)
                if c and (c["drift"] or verbose):
                    details.append((f"{header}: {c['text'].removeprefix('! ')}", c["drift"]))
            if verbose:  # preflight's warnings (a plain-HTTP mirror, an unofficial distro)
                details += [(f"warning: {w}", False) for w in row.get("warnings", [])]
        elif row["status"] == "refused":
            details.append((f"refused: {row['error']}", True))
            if verbose:
                details += [(f"{OBSERVED.get(k, k)}: {c['text']}", c["drift"])
                            for k, c in row["cells"].items()]  # fmt: skip
        else:
            details.append((f"{row['status']}: {row['error']}", True))
        for text, drift in details:
            mark = "! " if drift else "  "
            wrapped = textwrap.wrap(
                text, WIDTH - 4, initial_indent="", subsequent_indent="    ",
                break_on_hyphens=False,
            )  # fmt: skip
            if not verbose and len(wrapped) > 4:  # a reason listing dozens of packages
                wrapped = [*wrapped[:3], "    … (the whole of it: -v or --format json)"]
            for i, piece in enumerate(wrapped):
                prefix = "  " + (mark if i == 0 else "  ")
                out.append(prefix + (f"{red[0]}{piece}{red[1]}" if drift else piece))
    out.append(summary_line(rows))
    return "\n".join(out)


class Progress:
    """How far the audit is, on stderr: rewritten in place on a terminal, one line per host
    otherwise (quiet with ``--quiet``)."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()

    def __call__(self, row: dict[str, Any], done: int, total: int) -> None:
        text = f"audit [{done}/{total}] {row['host']}: {row['status']}"
        if self.tty:
            self.stream.write("\r\x1b[K" + text[:WIDTH] + ("\r\x1b[K" if done == total else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


EXIT_STATUS = (
    "exit status: 0 every host is as the inventory says; 1 a host drifted or would be "
    "refused; 2 a host was unreachable, failed, or has invalid inventory data, or the "
    "inventory or an option couldn't be used"
)


def add_parser(commands: Any) -> None:

    from rocm_fleet.cli.metrics import FORMATS

    audit = commands.add_parser(
        "audit",
        help="read-only drift report: inventory vs hosts, one row per host",
        description=(
            "Plan the deploy for every host (reading the hosts, changing nothing) and report "
            "what would change: what --dry would show, by concern, with what the hosts "
            "report (kernel, Secure Boot, ROCm, torch, GPUs, driver, pending reboot)."
        ),
        epilog=EXIT_STATUS,
    )
    audit.add_argument("inventory", help="pyinfra inventory (file, host list or module)")
    audit.add_argument(
        "--limit",
        action="append",
        default=[],
        help="group, host name or glob (repeatable; commas split)",
    )
    audit.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a data value for every host, as pyinfra's --data does (repeatable)",
    )
    audit.add_argument(
        "--format",
        choices=("table", "json", *FORMATS),
        default="table",
        help="table (default); json; openmetrics (Prometheus/OpenMetrics text); prometheus "
        "(text format 0.0.4, for node_exporter's textfile collector)",
    )
    audit.add_argument("--json", action="store_true", help="the same as --format json")
    audit.add_argument(
        "--wide", action="store_true", help="table: every column side by side, however wide"
    )
    audit.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="table: every cell of every host, and long reasons in full",
    )
    audit.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    audit.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report to FILE instead of stdout, atomically (e.g. --format "
        "prometheus into node_exporter's textfile directory)",
    )
    audit.set_defaults(run=run)


def run(args: Any) -> int:
    # gevent's monkey-patching, exactly as pyinfra's own CLI gets it on import, so the
    # connections run in parallel.
    from rocm_fleet.engine.context import patch_as_cli

    patch_as_cli()

    from rocm_fleet.cli import metrics
    from rocm_fleet.cli.inventory import parse_data

    limits = [p.strip() for item in args.limit for p in item.split(",") if p.strip()]
    data = parse_data(args.data)
    fmt = "json" if args.json else args.format
    output = Path(args.output) if args.output else None
    if output is not None and not output.parent.is_dir():
        raise UsageError(f"--output {args.output}: {output.parent} is not a directory")
    progress = None if args.quiet else Progress()
    rows = gather(args.inventory, limits, data or None, progress)
    status = exit_status(rows)
    colour = output is None and sys.stdout.isatty()
    if fmt == "json":
        payload = {"exit_status": status, "columns": columns(rows), "hosts": rows}
        text = json.dumps(payload, indent=2) + "\n"
    elif fmt in metrics.FORMATS:
        text = metrics.render(rows, fmt)
    elif args.wide:
        text = render_table(rows, colour=colour) + "\n"
    else:
        text = render_summary(rows, colour=colour, verbose=args.verbose) + "\n"
    if output is None:
        sys.stdout.write(text)
    else:
        write_atomically(output, text)
    return status


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` so that a reader (node_exporter's textfile collector, every scrape)
    sees the old file or the new one, never half of one: a temporary file beside it, then
    renamed over it."""
    import os
    import tempfile

    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)  # the collector runs as another user
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
