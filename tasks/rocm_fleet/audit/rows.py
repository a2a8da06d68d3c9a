"""What ``rocm-fleet audit`` knows about each host, gathered read-only (docs/decisions/audit.md):
the survey's cells, the reads beside it (GPU health, containers, acceptance), outliers flagged
(``audit.outliers``)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rocm_fleet.audit import cells
from rocm_fleet.audit.cells import AuditRow, Cell, ObservedCells, Status
from rocm_fleet.audit.outliers import (
    HostVersions,
    flag_outliers,
    outliers,
    peer_key,
    versions_from_survey,
    with_drift,
)
from rocm_fleet.cli.exits import Exit, worst
from rocm_fleet.cli.inventory import load_inventory
from rocm_fleet.model.acceptance import AcceptanceRead
from rocm_fleet.model.gpu_containers import (
    DAEMON_LEDGER,
    SUBID_LEDGER,
    ContainersVerdict,
    judge,
    leftovers,
    set_up,
)
from rocm_fleet.model.health import HostHealth
from rocm_fleet.model.paths import CONTAINER_TOOLKIT_SOURCE, CONTAINERS_STATE_DIR, VERIFIED

if TYPE_CHECKING:
    from rocm_fleet.engine.host_plans import PlannedOperation
    from rocm_fleet.model.observed import Observed

# The deploy every operation belongs to (deploy/node.py), left out of the concern names.
ROOT_DEPLOY = "rocm-fleet"


def concern_id(name: str) -> str:
    """A concern's stable id: ``"ROCm apt repository"`` -> ``rocm_apt_repository``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "other"


def concern_cells(concerns: dict[str, list[str]]) -> tuple[dict[str, cells.ConcernCell], list[str]]:
    """(concern id -> cell, the drift entries ``"<id>: <operation>"``) of a plan's drift."""
    found: dict[str, cells.ConcernCell] = {}
    drift: list[str] = []
    for name, operations in concerns.items():
        key = concern_id(name)
        text = "! " + "; ".join(operations) if operations else "ok"
        found[key] = cells.ConcernCell(
            text, bool(operations), name=name, operations=tuple(operations)
        )
        drift += [f"{key}: {operation}" for operation in operations]
    return found, drift


def seen_cells(config: Any, seen: Observed) -> ObservedCells:
    """The cells of a host's readings (docs/decisions/audit.md says which are drift)."""
    newer = seen.newer[-1] if seen.newer else None
    mok = f", MOK {seen.mok}" if seen.mok else ""
    sb_text = {"absent": "unknown (no mokutil)"}.get(seen.secure_boot, seen.secure_boot) + mok
    torch = seen.torch
    hip = f" (hip {torch.hip})" if torch.hip else ""
    count, gfx = config.expected_gpu_count, "/".join(config.expected_gfx_list) or "any"
    expected = "none" if count == 0 else f"{count if count is not None else '>=1'} x {gfx}"
    version = seen.amdgpu.get("version") or "(inbox)"
    driver = f"amdgpu {version}" if seen.amdgpu.get("loaded") else "none"
    undriven = (
        config.rocm_state == "present"
        and config.expected_gpu_count != 0
        and seen.amd_pci
        and "amdgpu" not in seen.bound
    )
    pending = bool(seen.reboot.get("required"))
    reasons = list(seen.reboot.get("reasons") or []) + list(seen.reboot.get("packages") or [])
    boot = seen.boot  # the next and every installed kernel, ready for the driver or not
    text = (f"pending: {'; '.join(reasons)}" if reasons else "pending") if pending else "no"
    # A next kernel not ready is drift; one that can't be told is, only with a reboot pending.
    unsafe = bool(boot.refused) and (pending or boot.next is not None)
    if boot.refused:
        text += (" | NOT SAFE: " if unsafe else " | ") + "; ".join(boot.refused)
    slurm, slurm_cell = seen.slurm, cells.SlurmCell("off")
    if slurm is not None and slurm.problem is not None:
        view = slurm.view
        slurm_cell = cells.SlurmCell(slurm.problem, slurm.drift, node=view.node, gres=view.gres)
    elif slurm is not None:
        view = slurm.view
        slurm_cell = cells.SlurmCell(
            f"! {slurm.mismatch}" if slurm.mismatch else f"{view.node}: Gres={view.gres}",
            slurm.mismatch is not None, node=view.node, gres=view.gres, needs=slurm.needs,
        )  # fmt: skip
    return ObservedCells(
        distro=Cell(seen.distro),
        kernel=cells.KernelCell(
            seen.kernel + (f" (newer installed: {newer})" if newer else ""),
            running=seen.kernel, newer=newer,
        ),
        secure_boot=cells.SecureBootCell(sb_text, state=seen.secure_boot, mok=seen.mok),
        rocm=cells.RocmCell(seen.rocm or "none", installed=seen.rocm),
        torch=cells.TorchCell(
            f"{torch.torch or 'none'}{hip}",
            torch=torch.torch, hip=torch.hip, cuda=torch.cuda, build=torch.build,
        ),
        gpus=cells.GpusCell(
            f"{expected} / {seen.gpus_text}",
            expected=expected,
            expected_count=config.expected_gpu_count,
            found=tuple(g["gfx"] for g in seen.gpus),
            apus=tuple(
                cells.ApuTotals(g["gfx"], g["slot"], g["vram_total"], g["gtt_total"])
                for g in seen.gpus
                if g.get("apu")
            ),
        ),
        driver=cells.DriverCell(
            driver + (" (GPU not bound to amdgpu)" if undriven else ""), undriven,
            bound=seen.bound,
        ),
        reboot=cells.RebootCell(
            text, pending or unsafe, pending=pending, unsafe=unsafe, reasons=tuple(reasons),
            boot=boot,
        ),
        slurm=slurm_cell,
    )  # fmt: skip


def drift_by_concern(planned: Iterable[PlannedOperation]) -> dict[str, list[str]]:
    """Concern -> its operations that would change the host (``_if``-gated left out)."""
    concerns: dict[str, list[str]] = {}
    for operation_planned in planned:
        names = operation_planned.names
        parts = [p for p in names[0].split(" | ") if p != ROOT_DEPLOY] if names else ["?"]
        concern, operation = (parts[0], parts[-1]) if len(parts) > 1 else ("other", parts[0])
        if concern == "Preflight":
            continue
        concerns.setdefault(concern, [])
        if operation_planned.changes and not operation_planned.conditional:
            concerns[concern].append(operation)
    return concerns


def gather(
    inventory_path: str,
    limits: Sequence[str],
    override_data: dict[str, Any] | None = None,
    progress: Any = None,
    detail: bool = False,
) -> list[AuditRow]:
    """Every (limited) host's row, in parallel; ``progress(row, done, total)`` as each is done."""
    from pyinfra.api.exceptions import ConnectError, PyinfraError

    from rocm_fleet.engine.speedups import importing

    with importing():  # the deploy's modules, as compose imports them (engine.speedups)
        from rocm_fleet.deploy.node import host_config, rocm_node
        from rocm_fleet.engine.diffs import changes_of, record_detail
        from rocm_fleet.engine.host_plans import plan_deploy, plan_in_parallel, planned_operations
        from rocm_fleet.engine.refuse import outcome
        from rocm_fleet.engine.surveying import also_survey, also_surveyed
        from rocm_fleet.facts.acceptance import AcceptanceRecordFact
        from rocm_fleet.facts.containers import GpuContainersFact
        from rocm_fleet.facts.files import DirectoryExists, FileDigest, Ledger
        from rocm_fleet.facts.health import GpuHealthFact
        from rocm_fleet.facts.round_trip import Read
        from rocm_fleet.model.changes import PackageChange
        from rocm_fleet.model.config import ConfigError
        from rocm_fleet.model.node_settings import CONTAINERS
        from rocm_fleet.model.observed import observe

    state, hosts = load_inventory(
        inventory_path, limits, check_for_changes=True, override_data=override_data
    )
    if detail:
        record_detail(state)
    versions: dict[str, HostVersions] = {}  # what each surveyed host runs, for the outliers
    peers: dict[str, str] = {}  # whom each surveyed host is compared with

    def audit_configured(host, config) -> AuditRow:
        try:
            host.connect(show_errors=False, raise_exceptions=True)
        except (ConnectError, PyinfraError, OSError) as exc:
            return AuditRow(host.name, "unreachable", str(exc.args[0] if exc.args else exc))
        # What the deploy doesn't plan, read in its survey's round trip; GPU containers are
        # judged by their cell (the node's facts and the feature's ledgers), not planned.
        engines, users = config.rocm_containers_engines, config.rocm_containers_rootless_users
        ledgers = [Read("ledgers", Ledger, {"path": p}) for p in (DAEMON_LEDGER, SUBID_LEDGER)
                   if engines]  # fmt: skip
        wanted = [*ledgers, Read("health", GpuHealthFact)]
        wanted += [Read("containers", GpuContainersFact)] * bool(engines)
        wanted += [Read("acceptance", AcceptanceRecordFact)] * (config.rocm_acceptance != "off")
        also_survey(host, wanted)
        plan_deploy(state, host, lambda: rocm_node(composed=(CONTAINERS,)))
        answers = also_surveyed(host)  # None: no survey ran (rocm_state absent, or it failed)
        read = dict(zip((r.name for r in wanted), answers, strict=True)) if answers else {}
        recorded = answers[: len(ledgers)] if answers and ledgers else [[], []]
        planned = planned_operations(state, host)  # read as the row needs it
        # No preflight when decommissioning: the removal's plan is the whole drift.
        found = outcome(state, host.name) if config.rocm_state != "absent" else None
        survey = found.survey if found else None
        seen = observe(survey, config) if survey is not None else None
        health, view, accepted = (read.get(k) for k in ("health", "containers", "acceptance"))
        judged = judge(engines, users, view, survey.kfd) if view is not None else None
        absent = config.rocm_state == "absent"
        if absent:  # no survey: the node asked as the containers' deploy asks it
            setup = bool(
                host.get_fact(FileDigest, path=CONTAINER_TOOLKIT_SOURCE)
                or host.get_fact(DirectoryExists, path=CONTAINERS_STATE_DIR)
            )
        else:
            setup = survey is not None and set_up(survey.packages or {}, survey.sources or [])
        # What rocm-fleet set up that the inventory no longer wants (all of it when absent).
        left = leftovers(*(((), ()) if absent else (engines, users)), setup, *recorded)
        if absent:
            concerns, drift = concern_cells(drift_by_concern(planned))
            left_cell = leftover_cell(left)
            drift += ["containers"] * bool(left_cell)
            return AuditRow(host.name, "drift" if drift else "ok", drift=tuple(drift),
                            cells=ObservedCells(rocm=Cell("absent (rocm_state)"),
                                                containers=left_cell),
                            concerns=concerns)  # fmt: skip
        if found is None or survey is None or seen is None:
            reason = found.refused if found else "preflight did not run"
            return AuditRow(host.name, "failed", reason)
        observed = replace(
            seen_cells(config, seen), health=health_cell(health),
            containers=containers_cell(config, judged, left),
            acceptance=acceptance_cell(accepted, time.time(), config),
        )  # fmt: skip
        versions[host.name] = versions_from_survey(survey, health)
        peers[host.name] = peer_key(survey, seen.gpus, config)
        drift = [key for key, c in observed.items() if c.drift]
        if found.refused:
            details = found.findings.details if found.findings else {}
            return AuditRow(host.name, "refused", found.refused, cells=observed, health=health,
                            outliers=(), details=details)  # fmt: skip
        concerns, planned_drift = concern_cells(drift_by_concern(planned))
        drift += planned_drift
        # What preflight warns of (a plain-HTTP mirror, an unofficial distro): said, not drift.
        warnings = found.findings.warnings if found.findings else []
        return AuditRow(
            host.name, "drift" if drift else "ok", drift=tuple(drift), cells=observed,
            concerns=concerns, health=health, outliers=(), warnings=tuple(warnings),
            verified_at=(survey.files.get(VERIFIED) or {}).get("mtime"),
            acceptance=accepted.record if accepted else None,
        )  # fmt: skip

    def audit(host) -> AuditRow:
        try:
            config = host_config(host)  # the mirror resolved too: a wrong one is invalid
        except ConfigError as exc:
            return AuditRow(host.name, "invalid", str(exc))
        row = replace(audit_configured(host, config), matrix_data=config.matrix_source)
        if detail and row.status in ("drift", "ok"):
            found = changes_of(state, host.name)  # as the JSON has them
            packages = [c.to_json() for c in found if isinstance(c, PackageChange)]
            files = [c.to_json() for c in found if not isinstance(c, PackageChange)]
            row = replace(row, changes={"packages": packages, "files": files})
        return row

    done = []

    def audit_and_report(host) -> AuditRow:
        row = AuditRow(host.name, "failed")  # until audit() returns
        try:
            row = audit(host)
            return row
        finally:
            done.append(host)
            if progress is not None:
                progress(row, len(done), len(hosts))

    results = zip(hosts, plan_in_parallel(state, hosts, audit_and_report), strict=True)
    rows = [AuditRow(host.name, "failed", f"{type(r).__name__}: {r}")
            if isinstance(r, BaseException) else r for host, r in results]  # fmt: skip
    groups: dict[str, list[str]] = {}  # peer group -> its hosts, in the inventory's order
    for host in hosts:
        if host.connected:
            host.disconnect()
        if host.name in peers:  # plan_in_parallel filled ``peers`` as hosts answered
            groups.setdefault(peers[host.name], []).append(host.name)
    drifted = {row.host: {k for k, c in row.concerns.items() if c.drift} for row in rows}
    return flag_outliers(rows, with_drift(outliers(groups, versions), drifted))


#: each host status's exit status (``cli.exits``)
EXITS: dict[Status, Exit] = {
    "ok": Exit.OK, "drift": Exit.FINDINGS, "refused": Exit.FINDINGS,
    "unreachable": Exit.NOT_CHECKED, "failed": Exit.NOT_CHECKED, "invalid": Exit.USAGE,
}  # fmt: skip


def exit_status(rows: Iterable[AuditRow]) -> int:
    """The worst of the hosts' statuses, in the order of ``cli.exits``."""
    return worst(EXITS[r.status] for r in rows)


def acceptance_cell(
    read: AcceptanceRead | None, now: float, config: Any = None
) -> cells.AcceptanceCell:
    """The ``acceptance`` cell: the last run's level, result and age ("!" with the failing
    steps when failed, never drift); never run, unreadable or off."""
    if config is not None and config.rocm_acceptance == "off":
        return cells.AcceptanceCell("off")
    if read is None:
        return cells.AcceptanceCell("unknown (the read failed)")
    if read.error is not None:
        return cells.AcceptanceCell(f"unknown ({read.error})")
    record = read.record
    if record is None:
        return cells.AcceptanceCell("never run")
    hours = max(now - record.finished_at, 0) / 3600
    age = f"{hours / 24:.0f}d ago" if hours >= 48 else f"{hours:.0f}h ago"
    said = f"{record.level} {'passed' if record.passed else 'failed'} {age}"
    if not record.passed:
        said = "! " + said + ": " + "; ".join(f"{s.name} {s.detail}" for s in record.failed)
    return cells.AcceptanceCell(
        said, level=record.level, passed=record.passed, finished_at=record.finished_at
    )


def leftover_cell(left: tuple[str, ...]) -> cells.ContainersCell | None:
    """The ``containers`` cell of a host that wants no engine: what rocm-fleet left there
    (drift; ``gpu_containers.leftovers``), or None when nothing is."""
    if not left:
        return None
    return cells.ContainersCell("! " + "; ".join(left), True, engines=(), spec="unknown",
                                leftovers=left)  # fmt: skip


def containers_cell(
    config: Any, verdict: ContainersVerdict | None, left: tuple[str, ...] = ()
) -> cells.ContainersCell | None:
    """The ``containers`` cell of ``judge``'s verdict and of what rocm-fleet left that the
    inventory no longer wants (``left``, ``gpu_containers.leftovers``): ok, or its problems and
    leftovers (drift); None when the inventory wants none and nothing is left."""
    engines = tuple(config.rocm_containers_engines)
    if not engines:
        return leftover_cell(left)
    if verdict is None:
        return cells.ContainersCell("unknown (the read failed)", engines=engines, spec="unknown")
    said = (*verdict.problems, *left)
    text = "! " + "; ".join(said) if said else f"ok ({', '.join(engines)}; CDI spec {verdict.spec})"
    return cells.ContainersCell(
        text, bool(said), engines=engines, spec=verdict.spec, gone=verdict.gone,
        missed=verdict.missed, problems=verdict.problems, leftovers=left,
    )  # fmt: skip


def health_cell(health: HostHealth | None) -> cells.HealthCell:
    """The ``health`` cell: ``ok (N GPUs)``, what is wrong (drift), or why it is unknown."""
    if health is None:
        return cells.HealthCell("unknown (the read failed)", status="unread")
    if health.status != "ok":
        why = {"no_tool": "no amd-smi", "unsupported": "only rocm-smi"}.get(
            health.status, health.message
        )
        return cells.HealthCell(f"unknown ({why})", status=health.status)
    problems = health.problems()
    if problems:
        return cells.HealthCell(
            "! " + "; ".join(problems), True, status="ok", problems=tuple(problems)
        )
    if not health.gpus:
        return cells.HealthCell("no GPU reported", status="ok")
    warnings = [w for gpu in health.gpus for w in gpu.warnings()]
    count = len(health.gpus)
    text = f"ok ({count} GPU{'s' if count != 1 else ''})" + (
        f", {len(warnings)} with correctable ECC errors" if warnings else ""
    )
    return cells.HealthCell(text, status="ok", warnings=tuple(warnings))
