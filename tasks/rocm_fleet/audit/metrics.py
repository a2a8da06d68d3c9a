"""The audit as OpenMetrics 1.0 or Prometheus text 0.0.4 (docs/audit-and-metrics.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from rocm_fleet.audit.cells import STATUSES, AuditRow
from rocm_fleet.model.acceptance import ACCEPTANCE_FAMILIES, acceptance_samples
from rocm_fleet.model.health import (
    HEALTH_COUNTERS,
    HEALTH_FAMILIES,
    HostHealth,
    health_families,
)

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

#: the output formats: OpenMetrics 1.0, and Prometheus text 0.0.4 (node_exporter's textfile)
FORMATS = ("openmetrics", "prometheus")

Sample = tuple[dict[str, str], float]


#: the families of the hosts' rows, in order: name -> help
ROW_FAMILIES = {
    "rocm_fleet_audit_status": "The host's audit status (1 for the one it has).",
    "rocm_fleet_host_info": "What the host has installed: distribution, ROCm, torch.",
    "rocm_fleet_gpus_expected": "GPUs the inventory expects.",
    "rocm_fleet_gpus_found": "AMD GPUs the host has.",
    "rocm_fleet_drifted_concerns": "Concerns that differ from the inventory.",
    "rocm_fleet_concern_drifted": "1 when the concern differs from the inventory.",
    "rocm_fleet_reboot_pending": "1 when the host waits for a reboot.",
    "rocm_fleet_reboot_unsafe": "1 when the kernel the host boots next is not ready for its GPU "
    "driver (a reboot would be refused).",
    "rocm_fleet_gpu_undriven": "1 when an AMD GPU of the host has no driver bound.",
    "rocm_fleet_last_verify_timestamp_seconds": "When the deploy's GPU check last passed on the "
    "host (this boot).",
    "rocm_fleet_gpu_containers_ok": "1 when GPU containers work on the host as the inventory "
    "wants (each engine there, the CDI spec current, rootless users in video and render).",
    "rocm_fleet_cdi_spec_stale": "1 when the host's CDI spec names GPUs that are gone or misses "
    "GPUs it has.",
    "rocm_fleet_outlier": "1 when the host's field differs from the majority of its peers (same "
    "distro release, GPU model and settings).",
    "rocm_fleet_outlier_drift": "1 when the host's outlying field is drift: the deploy would "
    "change it.",
}


def _unit(name: str) -> str:
    return "seconds" if name.endswith("_seconds") else ""


def families(
    rows: list[AuditRow], now: float, duration: float | None = None
) -> list[tuple[str, str, list[Sample], str]]:
    """(name, help, samples, unit) per family of the audit's rows."""
    found: dict[str, list[Sample]] = {f: [] for f in (*ROW_FAMILIES, *ACCEPTANCE_FAMILIES)}

    def add(family: str, sample: Sample) -> None:
        found["rocm_fleet_" + family].append(sample)

    health: list[tuple[str, HostHealth]] = []
    for row in rows:
        host = {"host": row.host}
        if row.acceptance is not None:
            for name, labels, value in acceptance_samples(row.host, row.acceptance):
                found[name].append((labels, value))
        if row.health:
            health.append((row.host, row.health))
        for o in row.outliers or ():
            add("outlier", ({**host, "group": o.group, "field": o.property}, 1.0))
            add("outlier_drift", ({**host, "group": o.group, "field": o.property}, float(o.drift)))
        for s in STATUSES:
            add("audit_status", ({**host, "status": s}, float(row.status == s)))
        cells = row.cells
        if not cells:
            continue  # unreachable, failed, invalid: the status says all that is known
        torch = cells.torch
        labels = {
            "distro": cells.distro.text if cells.distro else "",
            "rocm_release": cells.rocm_release or "",
            "torch": (torch.torch if torch else None) or "",
            "hip": (torch.hip if torch else None) or "",
        }
        add("host_info", ({**host, **labels}, 1.0))
        gpus = cells.gpus
        if gpus is not None and gpus.expected_count is not None:
            add("gpus_expected", (host, float(gpus.expected_count)))
        add("gpus_found", (host, float(len(gpus.found) if gpus else 0)))
        if row.status in ("ok", "drift"):
            flags = {key: c.drift for key, c in row.concerns.items()}
            add("drifted_concerns", (host, float(sum(flags.values()))))
            for key, flag in flags.items():
                add("concern_drifted", ({**host, "concern": key}, float(flag)))
        add("reboot_pending", (host, float(bool(cells.reboot and cells.reboot.pending))))
        add("reboot_unsafe", (host, float(bool(cells.reboot and cells.reboot.unsafe))))
        if cells.driver is not None:
            add("gpu_undriven", (host, float(cells.driver.drift)))
        if row.verified_at:
            add("last_verify_timestamp_seconds", (host, float(row.verified_at)))
        if cells.containers is not None and cells.containers.spec != "unknown":
            add("gpu_containers_ok", (host, float(cells.containers.works)))
            add("cdi_spec_stale", (host, float(cells.containers.spec == "stale")))
    gpus_found = {name: samples for name, _, samples, _ in health_families(health)}
    return [
        *audit_families(now, now, duration=duration),
        *((name, text, found[name], _unit(name)) for name, text in ROW_FAMILIES.items()),
        # every health family named, even when empty
        *((name, text, gpus_found.get(name, []), "") for name, text in HEALTH_FAMILIES.items()),
        *((name, text, found[name], _unit(name)) for name, text in ACCEPTANCE_FAMILIES.items()),
    ]


def audit_families(
    now: float, last_success: float | None, success: bool = True, duration: float | None = None
) -> list[tuple[str, str, list[Sample], str]]:
    """The audit's own families: success, last success, when it ran, how long it took."""
    last = [({}, float(last_success))] if last_success is not None else []
    took = [({}, float(duration))] if duration is not None else []
    return [
        ("rocm_fleet_audit_success", "1 when the audit reported every host, 0 when it failed.",
         [({}, 1.0 if success else 0.0)], ""),
        ("rocm_fleet_audit_last_success_timestamp_seconds", "When the audit last succeeded.",
         last, "seconds"),
        ("rocm_fleet_audit_timestamp_seconds", "When the audit ran.", [({}, float(now))],
         "seconds"),
        ("rocm_fleet_audit_duration_seconds", "How long the audit took.", took, "seconds"),
    ]  # fmt: skip


def render(rows: list[AuditRow], fmt: str = "openmetrics", *, now: float,
           duration: float | None = None) -> str:  # fmt: skip
    """The audit's rows in ``fmt`` (one of FORMATS) at ``now``, ending with a newline."""
    return _text(families(rows, now, duration), fmt)


def render_failure(
    fmt: str, now: float, last_success: float | None, duration: float | None = None
) -> str:
    """The metrics of a failed audit: success 0, the last success's time carried over."""
    return _text(audit_families(now, last_success, success=False, duration=duration), fmt)


def _metrics(found: Iterable[tuple[str, str, list[Sample], str]]) -> Iterator[Metric]:
    """prometheus_client's families: ``HEALTH_COUNTERS`` as counters, the rest gauges."""
    from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily

    for name, help_text, samples, unit in found:
        counter = name in HEALTH_COUNTERS
        family = (CounterMetricFamily if counter else GaugeMetricFamily)(name, help_text, unit=unit)
        for labels, value in samples:
            family.add_sample(f"{name}_total" if counter else name,
                              {key: str(val) for key, val in labels.items()}, value)  # fmt: skip
        if samples:
            yield family


def _text(found: list[tuple[str, str, list[Sample], str]], fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    from prometheus_client import generate_latest
    from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

    write = generate_openmetrics if fmt == "openmetrics" else generate_latest
    return write(SimpleNamespace(collect=lambda: _metrics(found))).decode()  # type: ignore[arg-type]


def last_success(path: Path) -> float | None:
    """The last success's timestamp in the report at ``path`` (either format), or None."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        for family in text_string_to_metric_families(path.read_text(errors="replace")):
            for sample in family.samples:
                if sample.name == "rocm_fleet_audit_last_success_timestamp_seconds":
                    value = float(sample.value)
                    return value if math.isfinite(value) and value > 0 else None
    except (OSError, ValueError):
        return None
    return None
