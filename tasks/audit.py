"""``rocm-fleet audit INVENTORY [--limit PATTERN] [--json]``: a read-only drift report.

For every host of a pyinfra inventory: what the inventory wants next to what the host has,
one row per host, drifted cells marked. It loads the inventory, connects and runs in
parallel with pyinfra's own machinery (``make_inventory``, the hosts' connectors, the
state's gevent pool) and reads one fact per host (``NodeSurvey``, the same read preflight
uses): nothing is written on any host.

Exit status: 0 nothing drifted, 1 at least one host drifted, 2 a host was unreachable,
failed, or has invalid inventory data.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from tasks.config import Config, ConfigError, load_config
from tasks.facts import NodeSurvey
from tasks.groups import GPU_GROUPS
from tasks.matrix import distro as matrix_distro
from tasks.operations import version_matches
from tasks.preflight import describe_gpus, gpu_mismatch, gpus_found, torch_build
from tasks.pytorch import wanted_wheels

# Column key -> header, in table order.
COLUMNS = {
    "distro": "DISTRO",
    "kernel": "KERNEL",
    "secure_boot": "SECURE BOOT / MOK",
    "rocm": "ROCM wanted/installed",
    "pin": "PIN",
    "driver": "DRIVER",
    "torch": "TORCH wanted/installed (hip)",
    "gpus": "GPUS expected/found",
    "groups": "GROUPS",
    "reboot": "REBOOT",
}


def cell(text: str, drift: bool = False, **data: Any) -> dict[str, Any]:
    return {"text": text, "drift": drift, **data}


def host_row(config: Config, survey: dict[str, Any]) -> dict[str, Any]:
    """The audit row of a reachable host: one cell per column, each with ``drift``."""
    present = config.rocm_state == "present"
    cells: dict[str, dict[str, Any]] = {}

    distro = survey.get("distro") or {}
    name = f"{distro.get('id', '?')} {distro.get('point_release') or distro.get('version_id')}"
    row = matrix_distro(distro.get("id") or "", distro.get("version_id") or "")
    supported = row is not None and config.release.support(row) is not None
    cells["distro"] = cell(name, present and not supported and not config.rocm_distro_override)

    running = survey.get("kernel") or "?"
    newer = [k for k in survey.get("kernels") or [] if _kernel_key(k) > _kernel_key(running)]
    text = running + (f" (newer installed: {newer[-1]})" if newer else "")
    cells["kernel"] = cell(text, False, running=running, newer=newer[-1] if newer else None)

    sb = (survey.get("secure_boot") or {}).get("state", "unknown")
    mok = {k: v.get("state") for k, v in (survey.get("mok") or {}).items()}
    mok_state = next((s for s in mok.values() if s not in ("missing", "absent", None)), None)
    dkms = "amdgpu-dkms" in (survey.get("packages") or {})
    sb_drift = sb == "enabled" and dkms and mok_state != "enrolled"
    sb_text = {"absent": "unknown (no mokutil)"}.get(sb, sb)
    cells["secure_boot"] = cell(
        sb_text + (f", MOK {mok_state}" if mok_state else ""), sb_drift, state=sb, mok=mok_state
    )

    installed = survey.get("rocm_version")
    installed_release = installed.split("-")[0] if installed else None
    wanted = config.release.version if present else "absent"
    rocm_drift = installed_release != config.release.version if present else bool(installed)
    cells["rocm"] = cell(
        f"{wanted} / {installed or 'none'}", rocm_drift, wanted=wanted, installed=installed
    )

    pin = bool(survey.get("pin"))
    cells["pin"] = cell(
        "yes" if pin else "missing" if present else "no", pin != present, present=pin
    )

    amdgpu = survey.get("amdgpu") or {}
    bound = sorted({g["driver"] for g in survey.get("pci") or [] if g.get("driver")})
    if amdgpu.get("loaded"):
        driver = "amdgpu " + (amdgpu.get("version") or "(inbox)")
    else:
        driver = "not loaded"
    if dkms:
        driver += f", dkms {survey['packages']['amdgpu-dkms']}"
    expects_gpu = config.expected_gpu_count != 0
    gpu_on_bus = bool(survey.get("pci"))
    driver_drift = present and expects_gpu and gpu_on_bus and "amdgpu" not in bound
    cells["driver"] = cell(driver, driver_drift, loaded=bool(amdgpu.get("loaded")), bound=bound)

    torch = survey.get("torch") or {}
    if config.pytorch_install and config.torch_build and config.release.torch_index:
        wanted_torch = wanted_wheels(config.torch_build, config.release.torch_index)["torch"]
    else:
        wanted_torch = None
    have = torch.get("torch")
    hip = torch.get("hip")
    if wanted_torch and present:
        torch_drift = not version_matches(have, wanted_torch) or torch_build(torch) != "rocm"
    else:
        torch_drift = False
    text = f"{wanted_torch or '-'} / {have or 'none'}" + (f" (hip {hip})" if hip else "")
    cells["torch"] = cell(text, torch_drift, wanted=wanted_torch, installed=have, hip=hip)

    found = gpus_found(survey)
    expected = _expected_text(config)
    mismatch = gpu_mismatch(config, found)
    cells["gpus"] = cell(
        f"{expected} / {describe_gpus(found)}",
        mismatch is not None,
        expected=expected,
        found=[g["gfx"] for g in found],
        problem=mismatch,
    )

    missing = {}
    for user in config.rocm_users:
        groups = (survey.get("groups") or {}).get(user)
        lacks = GPU_GROUPS if groups is None else [g for g in GPU_GROUPS if g not in groups]
        if lacks:
            missing[user] = "no such user" if groups is None else "not in " + ",".join(lacks)
    if not config.rocm_users:
        text = "-"
    elif missing:
        text = "; ".join(f"{u}: {why}" for u, why in missing.items())
    else:
        text = f"{', '.join(config.rocm_users)}: ok"
    cells["groups"] = cell(text, bool(missing) and present, missing=missing)

    reboot = bool(survey.get("reboot_required"))
    cells["reboot"] = cell(
        "pending" if reboot else "no", reboot, packages=survey.get("reboot_packages") or []
    )
    drifted = [key for key, c in cells.items() if c["drift"]]
    return {"status": "drift" if drifted else "ok", "drift": drifted, "cells": cells}


def _expected_text(config: Config) -> str:
    count = config.expected_gpu_count
    gfx = "/".join(config.expected_gfx_list) or "any"
    if count == 0:
        return "none"
    return f"{count if count is not None else '>=1'} x {gfx}"


def _kernel_key(release: str) -> tuple[int, ...]:
    """Every number of a kernel release without its flavour: "6.1.0-28-amd64" -> (6, 1, 0,
    28), so Debian's ABI bumps (6.1.0-31) count as newer; "6.12.12+bpo-amd64" -> (6, 12, 12)."""
    return tuple(int(n) for n in re.findall(r"\d+", re.sub(r"-[a-z][\w-]*$", "", release)))


# --- gathering --------------------------------------------------------------------------------


def gather(inventory_path: str, limits: Sequence[str]) -> list[dict[str, Any]]:
    """Connect to every (limited) host in parallel and build its row."""
    import gevent
    from pyinfra.api import Config as PyinfraConfig
    from pyinfra.api import State
    from pyinfra.api.exceptions import ConnectError, PyinfraError
    from pyinfra.context import ctx_host, ctx_inventory, ctx_state
    from pyinfra_cli.inventory import make_inventory

    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # like pyinfra's CLI: group_data/ and local modules
    # As pyinfra's CLI: the state exists (and is current) while the inventory file runs.
    state = State(check_for_changes=False)
    state.cwd = cwd
    ctx_state.set(state)
    inventory = make_inventory(inventory_path, cwd=cwd)
    ctx_inventory.set(inventory)
    hosts = list(inventory)
    if limits:
        from fnmatch import fnmatch

        chosen = set()
        for pattern in limits:
            try:
                chosen.update(inventory.get_group(pattern))
            except Exception:  # NoGroupError: a host name or glob
                chosen.update(h for h in hosts if fnmatch(h.name, pattern))
        hosts = [h for h in hosts if h in chosen]
    state.init(inventory, PyinfraConfig(), initial_limit=hosts)

    def audit(host) -> dict[str, Any]:
        row: dict[str, Any] = {"host": host.name}
        try:
            config = load_config(host.data.dict(), host.name)
        except ConfigError as exc:
            return {**row, "status": "invalid", "error": str(exc), "drift": [], "cells": {}}
        try:
            host.connect(show_errors=False, raise_exceptions=True)
        except (ConnectError, PyinfraError, OSError) as exc:
            error = str(exc.args[0] if exc.args else exc)
            return {**row, "status": "unreachable", "error": error, "drift": [], "cells": {}}
        state.activate_host(host)
        with ctx_host.use(host):
            survey = host.get_fact(
                NodeSurvey,
                venv=config.pytorch_venv,
                users=list(config.rocm_users),
                _ignore_errors=True,
            )
        if survey is None:
            return {
                **row, "status": "failed", "drift": [], "cells": {},
                "error": "could not read the host (run as root, or set _sudo: True)",
            }  # fmt: skip
        return {**row, "error": None, **host_row(config, survey)}

    with ctx_state.use(state):
        greenlets = [state.pool.spawn(audit, host) for host in hosts]
        gevent.joinall(greenlets)
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
    return 1 if any(r["status"] == "drift" for r in rows) else 0


def render_table(rows: list[dict[str, Any]], colour: bool = False) -> str:
    """One line per host; drifted cells get a leading ``!`` (and red when ``colour``)."""
    headers = ["HOST", *COLUMNS.values()]
    table: list[list[tuple[str, bool]]] = []
    for row in rows:
        line = [(row["host"], row["status"] != "ok")]
        if row["cells"]:
            for key in COLUMNS:
                c = row["cells"][key]
                line.append(("! " + c["text"] if c["drift"] else c["text"], c["drift"]))
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
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "drift")}
    bad = len(rows) - counts["ok"] - counts["drift"]
    out.append(
        f"{len(rows)} hosts: {counts['ok']} as the inventory says, {counts['drift']} drifted, "
        f"{bad} unreachable/failed"
    )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    # gevent's monkey-patching, exactly as pyinfra's own CLI gets it on import, so the
    # connections run in parallel.
    import pyinfra_cli  # noqa: F401

    parser = argparse.ArgumentParser(prog="rocm-fleet", description="rocm-fleet tools")
    commands = parser.add_subparsers(dest="command", required=True)
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
    args = parser.parse_args(argv)
    limits = [p.strip() for item in args.limit for p in item.split(",") if p.strip()]
    rows = gather(args.inventory, limits)
    status = exit_status(rows)
    if args.json:
        print(json.dumps({"exit_status": status, "columns": COLUMNS, "hosts": rows}, indent=2))
    else:
        print(render_table(rows, colour=sys.stdout.isatty()))
    return status


if __name__ == "__main__":
    sys.exit(main())
