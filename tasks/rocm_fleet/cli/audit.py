"""``rocm-fleet audit INVENTORY [--limit PATTERN] [--json]``: a read-only drift report.

The audit plans the deploy itself (``rocm_node``) for every host, with pyinfra's planning,
which reads the hosts and runs nothing on them: a resource drifts exactly when the operation
that enforces it would change something, which is what ``--dry`` reports, so every resource
a task manages shows up here with no list of its own. The plan's operations are grouped by
concern (the deploy they belong to: "ROCm apt repository", "PyTorch", ...), one column each.
Beside them, what the preflight survey saw that no operation enforces: the running kernel,
Secure Boot and the MOK, the installed ROCm and torch, the GPUs, whether the GPU is driven
and whether a reboot is pending. A host preflight would refuse is reported with the same
reason. Connections and planning run in parallel with pyinfra's own machinery.

Exit status: 0 nothing drifted, 1 a host drifted or would be refused, 2 a host was
unreachable, failed, or has invalid inventory data, or the inventory couldn't be used.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rocm_fleet.cli.inventory import load_inventory

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
    from rocm_fleet.facts.apt import kernel_releases
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
        f"{expected} / {describe_gpus(found)}", expected=expected, found=[g["gfx"] for g in found]
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
    cells["reboot"] = cell(
        "pending: " + "; ".join(reasons) if pending and reasons else "pending" if pending else "no",
        pending,
        reasons=reasons,
    )
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
    concerns: dict[str, list[str]] = {}
    for op_hash in state.get_op_order():
        if op_hash not in state.ops[host]:
            continue
        names = sorted(state.op_meta[op_hash].names)
        parts = [p for p in names[0].split(" | ") if p != ROOT_DEPLOY] if names else ["?"]
        concern, operation = (parts[0], parts[-1]) if len(parts) > 1 else ("other", parts[0])
        if concern == "Preflight":
            continue
        data = state.get_op_data_for_host(host, op_hash)
        changes = data.operation_meta._maybe_is_change and not data.global_arguments["_if"]
        concerns.setdefault(concern, [])
        if changes:
            concerns[concern].append(operation)
    return concerns


def gather(inventory_path: str, limits: list[str]) -> list[dict[str, Any]]:
    """Connect to every (limited) host in parallel, plan the deploy for it, build its row."""
    import gevent
    import pyinfra
    from pyinfra.api.exceptions import ConnectError, PyinfraError
    from pyinfra.api.state import StateStage
    from pyinfra.context import ctx_config, ctx_host, ctx_state

    from rocm_fleet.deploy.node import host_config, rocm_node
    from rocm_fleet.engine.refuse import outcome
    from rocm_fleet.model.config import ConfigError

    state, hosts = load_inventory(inventory_path, limits, check_for_changes=True)

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
        state.activate_host(host)
        with ctx_config.use(state.config.copy()), ctx_host.use(host):
            rocm_node()
        found = outcome(state, host.name)
        if found is None or found.survey is None:
            reason = found.refused if found else "preflight did not run"
            return {**row, "status": "failed", "error": reason}
        cells = observed_cells(config, found.survey)
        drift = [key for key, c in cells.items() if c["drift"]]
        if found.refused:
            return {**row, "status": "refused", "error": found.refused, "cells": cells}
        for concern, operations in plan_drift(state, host).items():
            text = "! " + "; ".join(operations) if operations else "ok"
            cells[concern] = cell(text, bool(operations), operations=operations)
            drift += [f"{concern}: {name}" for name in operations]
        return {**row, "status": "drift" if drift else "ok", "drift": drift, "cells": cells}

    # Plan as pyinfra's CLI does: in CLI mode an operation's identity comes from where it is
    # called (file and line), so hosts that take different branches of the deploy (one gets
    # a kernel, another a driver) still share each operation; in API mode it is the
    # operation's position on each host, which mixes different operations up.
    was_cli = pyinfra.is_cli
    pyinfra.is_cli = True
    state.set_stage(StateStage.Prepare)
    try:
        with ctx_state.use(state):
            greenlets = [state.pool.spawn(audit, host) for host in hosts]
            gevent.joinall(greenlets)
    finally:
        pyinfra.is_cli = was_cli
    rows = []
    for host, greenlet in zip(hosts, greenlets, strict=True):
        if greenlet.successful():
            rows.append(greenlet.value)
        else:
            error = f"{type(greenlet.exception).__name__}: {greenlet.exception}"
            rows.append(
                {"host": host.name, "status": "failed", "error": error, "drift": [], "cells": {}}
            )
    for host in hosts:
        if host.connected:
            host.disconnect()
    return rows


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
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "drift", "refused")}
    bad = len(rows) - sum(counts.values())
    out.append(
        f"{len(rows)} hosts: {counts['ok']} as the inventory says, {counts['drift']} drifted, "
        f"{counts['refused']} refused, {bad} unreachable/failed/invalid"
    )
    return "\n".join(out)


def add_parser(commands: Any) -> None:
    audit = commands.add_parser(
        "audit", help="read-only drift report: inventory vs hosts, one row per host"
    )
    audit.add_argument("inventory", help="pyinfra inventory (file, host list or module)")
    audit.add_argument(
        "--limit",
        action="append",
        default=[],
        help="group, host name or glob (repeatable; commas split)",
    )
    audit.add_argument("--json", action="store_true", help="print the rows as JSON")
    audit.set_defaults(run=run)


def run(args: Any) -> int:
    # gevent's monkey-patching, exactly as pyinfra's own CLI gets it on import, so the
    # connections run in parallel.
    import pyinfra_cli  # noqa: F401

    limits = [p.strip() for item in args.limit for p in item.split(",") if p.strip()]
    rows = gather(args.inventory, limits)
    status = exit_status(rows)
    if args.json:
        payload = {"exit_status": status, "columns": columns(rows), "hosts": rows}
        print(json.dumps(payload, indent=2))
    else:
        print(render_table(rows, colour=sys.stdout.isatty()))
    return status
