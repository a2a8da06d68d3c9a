"""What ``rocm-fleet audit`` knows about each host: its row, gathered read-only.

The audit plans the deploy itself (``rocm_node``) for every host, with pyinfra's planning,
which reads the hosts and runs nothing on them: a resource drifts exactly when the operation
that enforces it would change something, which is what ``--dry`` reports, so every resource
a task manages shows up here with no list of its own. The plan's operations are grouped by
concern (the deploy they belong to: "ROCm apt repository", "PyTorch", ...), each known by a
stable snake_case id (``rocm_apt_repository``, ``pytorch``: ``concern_id``) in the JSON and
the metrics, by its name in the table. Beside them, the cells of what the preflight survey
saw that no operation enforces: the running kernel, Secure Boot and the MOK, the installed
ROCm and torch, the GPUs, whether the GPU is driven and whether a reboot is pending. A host
preflight would refuse is reported with the same reason. Connections and planning run in
parallel with pyinfra's own machinery.

A row (JSON-ready, the screens in ``cli.audit_screens`` and ``cli.metrics`` read it):
``host``, ``status`` (one of ``STATUSES``), ``error`` (the reason when not ok/drift),
``drift`` (observed keys and ``"<concern id>: <operation>"``), ``cells`` (observed key ->
cell), ``concerns`` (concern id -> cell with its ``name`` and ``operations``), and when
known ``warnings``, ``details``, ``verified_at`` and ``matrix_data`` (where the host's
release row comes from: rocm-fleet's committed matrix, or a site file's path and SHA-256).
A host that was surveyed also has ``health`` (what amd-smi said: a
``model.health.HostHealth`` as a dict, its ``HostHealth.from_dict`` reads it back; None when
it couldn't be read) and ``outliers``
(``model.outliers.Outlier`` as dicts with their ``sentence``: where it differs from the
majority of an inventory group it is in).

GPU health is read by the audit alone (a second round trip after the plan: amd-smi is slow
and not what a deploy needs). An uncorrectable ECC error, a narrowed PCIe link or an XGMI
link down is drift of the ``health`` cell; so is being an outlier of a group (the
``outlier`` cell): both are what the inventory's fleet should not have.
"""

from __future__ import annotations

import re
from dataclasses import asdict
from typing import Any

from rocm_fleet.cli.exits import Exit, worst
from rocm_fleet.cli.inventory import load_inventory
from rocm_fleet.model.health import HostHealth
from rocm_fleet.model.outliers import HostVersions, Outlier, outliers, versions_from_survey

#: every status a row can have, the good ones first
STATUSES = ("ok", "drift", "refused", "unreachable", "failed", "invalid")

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
    "health": "GPU HEALTH",
    "outlier": "OUTLIER",
}
# The deploy every operation of rocm-fleet belongs to (rocm_fleet/deploy/node.py), left out of the
# concern names.
ROOT_DEPLOY = "rocm-fleet"


def cell(text: str, drift: bool = False, **data: Any) -> dict[str, Any]:
    return {"text": text, "drift": drift, **data}


def concern_id(name: str) -> str:
    """A concern's stable id from its deploy's name: ``"ROCm apt repository"`` ->
    ``rocm_apt_repository`` (lower case, every run of other characters one ``_``); what the
    JSON and the metrics' ``concern`` label carry, whatever the table shows."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "other"


def concern_cells(concerns: dict[str, list[str]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(concern id -> cell, the drift entries ``"<id>: <operation>"``) of a plan's drift."""
    cells: dict[str, dict[str, Any]] = {}
    drift: list[str] = []
    for name, operations in concerns.items():
        key = concern_id(name)
        text = "! " + "; ".join(operations) if operations else "ok"
        cells[key] = cell(text, bool(operations), name=name, operations=operations)
        drift += [f"{key}: {operation}" for operation in operations]
    return cells, drift


def observed_cells(config: Any, survey: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The cells of what the survey saw; only a GPU the kernel doesn't drive and a pending
    reboot count as drift (everything else an operation enforces is in the plan)."""
    from rocm_fleet.deploy.reboot import wanted_driver
    from rocm_fleet.facts.apt import kernel_releases
    from rocm_fleet.model.boot import survey_boot
    from rocm_fleet.model.conflicts import venv_torch
    from rocm_fleet.model.gpus import amd_pci, describe_gpus, gpus_found
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
    # A kernel it would boot that isn't ready is drift, pending reboot or not (an unattended
    # upgrade's kernel); a host whose next kernel can't be told at all (a VM booted by its
    # hypervisor's kernel, no /boot: seen on a real Ubuntu cloud host) only says so, since
    # rocm-fleet refuses to reboot it and nothing on it can be repaired.
    unsafe = bool(boot["refused"]) and (pending or boot["next"] is not None)
    if boot["refused"]:
        text += (" | NOT SAFE: " if unsafe else " | ") + "; ".join(boot["refused"])
    cells["reboot"] = cell(
        text, pending or unsafe, pending=pending, unsafe=unsafe, reasons=reasons, boot=boot
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
    versions: dict[str, HostVersions] = {}  # what each surveyed host runs, for the outliers

    def audit(host) -> dict[str, Any]:
        row: dict[str, Any] = {
            "host": host.name, "error": None, "drift": [], "cells": {}, "concerns": {}
        }  # fmt: skip
        try:
            config = host_config(host)  # the mirror resolved too: a wrong one is invalid
        except ConfigError as exc:
            return {**row, "status": "invalid", "error": str(exc)}
        # Which matrix data the plan comes from: rocm-fleet's, or a site file and its SHA-256.
        row["matrix_data"] = config.matrix_source
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
        health = read_health(host)
        cells["health"] = health_cell(health)
        versions[host.name] = versions_from_survey(found.survey, health)
        row = {**row, "health": asdict(health) if health else None, "outliers": []}
        drift = [key for key, c in cells.items() if c["drift"]]
        if found.refused:
            details = found.findings.details if found.findings else {}
            return {**row, "status": "refused", "error": found.refused, "cells": cells,
                    **({"details": details} if details else {})}  # fmt: skip
        concerns, planned = concern_cells(plan_drift(state, host))
        drift += planned
        status = "drift" if drift else "ok"
        # What preflight warns of (a plain-HTTP mirror, an unofficial distro): said, not drift.
        warnings = found.findings.warnings if found.findings else []
        said = {"warnings": warnings} if warnings else {}
        return {**row, "status": status, "drift": drift, "cells": cells,
                "concerns": concerns, **said, **verified(found.survey)}  # fmt: skip

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
                {"host": host.name, "status": "failed", "error": error, "drift": [],
                 "cells": {}, "concerns": {}}
            )  # fmt: skip
        else:
            rows.append(result)
    for host in hosts:
        if host.connected:
            host.disconnect()
    groups: dict[str, list[str]] = {}
    for host in hosts:
        for group in host.groups:
            groups.setdefault(group, []).append(host.name)
    return flag_outliers(rows, outliers(groups, versions))


def read_health(host: Any) -> HostHealth | None:
    """The host's GPUs' health as amd-smi reports it; None when the read couldn't run."""
    from rocm_fleet.engine.survey import read_apart
    from rocm_fleet.facts.health import GpuHealthFact
    from rocm_fleet.facts.survey import Read

    answer = read_apart(host, [Read("health", GpuHealthFact)])
    return answer.get("health") if answer else None


def health_cell(health: HostHealth | None) -> dict[str, Any]:
    """The ``health`` cell: ``ok (N GPUs)``, what is wrong (drift), or why it is unknown."""
    if health is None:
        return cell("unknown (the read failed)", status="unread", problems=[])
    if health.status != "ok":
        why = {"no_tool": "no amd-smi", "unsupported": "only rocm-smi"}.get(
            health.status, health.message
        )
        return cell(f"unknown ({why})", status=health.status, problems=[])
    problems = health.problems()
    if problems:
        return cell("! " + "; ".join(problems), True, status="ok", problems=problems)
    if not health.gpus:
        return cell("no GPU reported", status="ok", problems=[])
    warnings = [w for gpu in health.gpus for w in gpu.warnings()]
    count = len(health.gpus)
    text = f"ok ({count} GPU{'s' if count != 1 else ''})" + (
        f", {len(warnings)} with correctable ECC errors" if warnings else ""
    )
    return cell(text, status="ok", problems=[], warnings=warnings)


def flag_outliers(rows: list[dict[str, Any]], found: list[Outlier]) -> list[dict[str, Any]]:
    """Each surveyed row with its ``outliers`` and ``outlier`` cell; a host that is one
    drifts (an ``ok`` row becomes ``drift``)."""
    by_host: dict[str, list[Outlier]] = {}
    for outlier in found:
        by_host.setdefault(outlier.host, []).append(outlier)
    for row in rows:
        if "outliers" not in row:
            continue  # not surveyed: nothing to compare
        mine = by_host.get(row["host"], [])
        row["outliers"] = [{**asdict(o), "sentence": o.sentence()} for o in mine]
        if not mine:
            row["cells"]["outlier"] = cell("no")
            continue
        said = [
            f"{o.property} {o.value} ({o.hosts_with_majority} of {o.hosts_reporting} in "
            f"group {o.group} have {o.majority})"
            for o in mine
        ]
        row["cells"]["outlier"] = cell("! " + "; ".join(said), True)
        if row["status"] in ("ok", "drift"):
            row["drift"] = [*row["drift"], *(f"outlier: {o.property}" for o in mine)]
            row["status"] = "drift"
    return rows


def _absent_row(row: dict[str, Any], concerns: dict[str, list[str]]) -> dict[str, Any]:
    """The row of a host whose inventory says ``rocm_state: absent``."""
    cells, drift = concern_cells(concerns)
    status = "drift" if drift else "ok"
    return {**row, "status": status, "drift": drift,
            "cells": {"rocm": cell("absent (rocm_state)")}, "concerns": cells}  # fmt: skip


def verified(survey: dict[str, Any]) -> dict[str, Any]:
    """When the deploy's GPU check last passed on the host in this boot (the record it
    keeps, read while planning the Verify concern), as ``verified_at`` (seconds)."""
    from rocm_fleet.model.paths import VERIFIED

    record = survey.get(f"file {VERIFIED}")  # surveyed: operations.gpu declares the read
    return {"verified_at": record["mtime"]} if record else {}


#: each host status's exit status (``cli.exits``: a bad setting is bad input, a host that
#: did not answer could not be checked)
EXITS = {
    "ok": Exit.OK, "drift": Exit.FINDINGS, "refused": Exit.FINDINGS,
    "unreachable": Exit.NOT_CHECKED, "failed": Exit.NOT_CHECKED, "invalid": Exit.USAGE,
}  # fmt: skip


def exit_status(rows: list[dict[str, Any]]) -> int:
    """The worst of the hosts' statuses, in the order of ``cli.exits``."""
    return worst(EXITS[r["status"]] for r in rows)
