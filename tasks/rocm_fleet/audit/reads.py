"""The audit's reads beside the survey (GPU health, containers, acceptance) and their cells."""

from __future__ import annotations

from typing import Any

from rocm_fleet.audit.cells import AcceptanceCell, ContainersCell, HealthCell
from rocm_fleet.model.acceptance import AcceptanceRead
from rocm_fleet.model.gpu_containers import ContainersVerdict, ContainerView
from rocm_fleet.model.health import HostHealth


def _read(host: Any, key: str, fact: Any) -> Any:
    """``fact`` read apart from the survey; None when the read couldn't run."""
    from rocm_fleet.engine.surveying import read_apart
    from rocm_fleet.facts.round_trip import Read

    answer = read_apart(host, [Read(key, fact)])
    return answer[0] if answer else None


def read_health(host: Any) -> HostHealth | None:
    """The host's GPUs' health as amd-smi reports it; None when the read couldn't run."""
    from rocm_fleet.facts.health import GpuHealthFact

    return _read(host, "health", GpuHealthFact)


def read_acceptance(host: Any) -> AcceptanceRead | None:
    """The node's last acceptance record; None when the read couldn't run."""
    from rocm_fleet.facts.acceptance import AcceptanceRecordFact

    return _read(host, "acceptance", AcceptanceRecordFact)


def acceptance_cell(read: AcceptanceRead | None, now: float, config: Any = None) -> AcceptanceCell:
    """The ``acceptance`` cell: the last run's level, result and age ("!" with the failing
    steps when failed, never drift); never run, unreadable or off."""
    if config is not None and config.rocm_acceptance == "off":
        return AcceptanceCell("off")
    if read is None:
        return AcceptanceCell("unknown (the read failed)")
    if read.error is not None:
        return AcceptanceCell(f"unknown ({read.error})")
    record = read.record
    if record is None:
        return AcceptanceCell("never run")
    hours = max(now - record.finished_at, 0) / 3600
    age = f"{hours / 24:.0f}d ago" if hours >= 48 else f"{hours:.0f}h ago"
    said = f"{record.level} {'passed' if record.passed else 'failed'} {age}"
    if not record.passed:
        said = "! " + said + ": " + "; ".join(f"{s.name} {s.detail}" for s in record.failed)
    return AcceptanceCell(
        said, level=record.level, passed=record.passed, finished_at=record.finished_at
    )


def read_containers(host: Any, config: Any) -> ContainerView | None:
    """The node's container side when the inventory wants GPU containers, else None."""
    if not config.rocm_containers_engines:
        return None
    from rocm_fleet.facts.containers import GpuContainersFact

    return _read(host, "containers", GpuContainersFact)


def containers_cell(config: Any, verdict: ContainersVerdict | None) -> ContainersCell | None:
    """The ``containers`` cell of ``judge``'s verdict: ok, or its problems (drift); None when
    the inventory wants none."""
    engines = tuple(config.rocm_containers_engines)
    if not engines:
        return None
    if verdict is None:
        return ContainersCell("unknown (the read failed)", engines=engines, spec="unknown")
    text = (
        "! " + "; ".join(verdict.problems)
        if verdict.problems
        else f"ok ({', '.join(engines)}; CDI spec {verdict.spec})"
    )
    return ContainersCell(
        text, bool(verdict.problems), engines=engines, spec=verdict.spec, gone=verdict.gone,
        missed=verdict.missed, problems=verdict.problems,
    )  # fmt: skip


def health_cell(health: HostHealth | None) -> HealthCell:
    """The ``health`` cell: ``ok (N GPUs)``, what is wrong (drift), or why it is unknown."""
    if health is None:
        return HealthCell("unknown (the read failed)", status="unread")
    if health.status != "ok":
        why = {"no_tool": "no amd-smi", "unsupported": "only rocm-smi"}.get(
            health.status, health.message
        )
        return HealthCell(f"unknown ({why})", status=health.status)
    problems = health.problems()
    if problems:
        return HealthCell("! " + "; ".join(problems), True, status="ok", problems=tuple(problems))
    if not health.gpus:
        return HealthCell("no GPU reported", status="ok")
    warnings = [w for gpu in health.gpus for w in gpu.warnings()]
    count = len(health.gpus)
    text = f"ok ({count} GPU{'s' if count != 1 else ''})" + (
        f", {len(warnings)} with correctable ECC errors" if warnings else ""
    )
    return HealthCell(text, status="ok", warnings=tuple(warnings))
