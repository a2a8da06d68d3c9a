"""The audit as metrics, for the dashboards and alerts a fleet already has.

``rocm-fleet audit INVENTORY --format openmetrics`` prints the OpenMetrics text format
(https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md): serve
it, or write it where node_exporter's textfile collector reads it on the controller
(``--format prometheus`` is the older Prometheus text format, 0.0.4, which is what the
textfile collector parses: no ``# UNIT``, no ``# EOF``).

Every family is a gauge with the inventory's host name as the ``host`` label:

``rocm_fleet_audit_status{host,status}``
    1 for the host's status (ok, drift, refused, unreachable, failed, invalid), 0 for the
    others (a state set, so ``rocm_fleet_audit_status{status="ok"} == 0`` alerts).
``rocm_fleet_host_info{host,distro,rocm_release,torch,hip}``
    1; what the host has installed (empty when none).
``rocm_fleet_gpus_expected{host}``, ``rocm_fleet_gpus_found{host}``
    GPU counts; ``expected`` is absent where the inventory asks for "at least one".
``rocm_fleet_drifted_concerns{host}``, ``rocm_fleet_concern_drifted{host,concern}``
    how many concerns drift, and 0/1 per concern (the audit table's columns).
``rocm_fleet_reboot_pending{host}``
    0/1.
``rocm_fleet_last_verify_timestamp_seconds{host}``
    when the deploy's GPU check last passed in this boot (absent if it hasn't).
``rocm_fleet_audit_timestamp_seconds``
    when the audit ran.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from typing import Any

STATUSES = ("ok", "drift", "refused", "unreachable", "failed", "invalid")
#: the output formats: OpenMetrics 1.0, and Prometheus text 0.0.4 (node_exporter's textfile)
FORMATS = ("openmetrics", "prometheus")
#: the Content-Type each format is served with
CONTENT_TYPES = {
    "openmetrics": "application/openmetrics-text; version=1.0.0; charset=utf-8",
    "prometheus": "text/plain; version=0.0.4; charset=utf-8",
}

Sample = tuple[dict[str, str], float]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _family(
    name: str, help_text: str, samples: Iterable[Sample], fmt: str, unit: str | None = None
) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
    if unit and fmt == "openmetrics":
        lines.append(f"# UNIT {name} {unit}")
    for labels, value in samples:
        text = ",".join(f'{key}="{_escape(str(val))}"' for key, val in labels.items())
        lines.append(f"{name}{{{text}}} {_number(value)}" if text else f"{name} {_number(value)}")
    return lines


def families(rows: list[dict[str, Any]], now: float) -> list[tuple[str, str, list[Sample], str]]:
    """(name, help, samples, unit) per family, from the audit's rows."""
    status: list[Sample] = []
    info: list[Sample] = []
    expected: list[Sample] = []
    found: list[Sample] = []
    drifted: list[Sample] = []
    concern: list[Sample] = []
    reboot: list[Sample] = []
    verified: list[Sample] = []
    for row in rows:
        host = {"host": row["host"]}
        status += [({**host, "status": s}, float(row["status"] == s)) for s in STATUSES]
        cells = row.get("cells") or {}
        if not cells:
            continue  # unreachable, failed, invalid: the status says all that is known
        distro, rocm, torch = (cells.get(k) or {} for k in ("distro", "rocm", "torch"))
        labels = {
            "distro": distro.get("text", ""),
            "rocm_release": rocm.get("installed") or "",
            "torch": torch.get("torch") or "",
            "hip": torch.get("hip") or "",
        }
        info.append(({**host, **labels}, 1.0))
        gpus = cells.get("gpus") or {}
        if gpus.get("expected_count") is not None:
            expected.append((host, float(gpus["expected_count"])))
        found.append((host, float(len(gpus.get("found") or []))))
        if row["status"] in ("ok", "drift"):
            flags = {key: c.get("drift", False) for key, c in cells.items()}
            drifted.append((host, float(sum(flags.values()))))
            concern += [({**host, "concern": key}, float(flag)) for key, flag in flags.items()]
        reboot.append((host, float(bool((cells.get("reboot") or {}).get("drift")))))
        if row.get("verified_at"):
            verified.append((host, float(row["verified_at"])))
    return [
        ("rocm_fleet_audit_status", "The host's audit status (1 for the one it has).", status,
         ""),
        ("rocm_fleet_host_info", "What the host has installed: distribution, ROCm, torch.",
         info, ""),
        ("rocm_fleet_gpus_expected", "GPUs the inventory expects.", expected, ""),
        ("rocm_fleet_gpus_found", "AMD GPUs the host has.", found, ""),
        ("rocm_fleet_drifted_concerns", "Concerns that differ from the inventory.", drifted, ""),
        ("rocm_fleet_concern_drifted", "1 when the concern differs from the inventory.",
         concern, ""),
        ("rocm_fleet_reboot_pending", "1 when the host waits for a reboot.", reboot, ""),
        ("rocm_fleet_last_verify_timestamp_seconds",
         "When the deploy's GPU check last passed on the host (this boot).", verified,
         "seconds"),
        ("rocm_fleet_audit_timestamp_seconds", "When the audit ran.", [({}, float(now))],
         "seconds"),
    ]  # fmt: skip


def render(rows: list[dict[str, Any]], fmt: str = "openmetrics", now: float | None = None) -> str:
    """The audit's rows in ``fmt`` (one of FORMATS), ending with a newline."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
    lines: list[str] = []
    for name, help_text, samples, unit in families(rows, time.time() if now is None else now):
        if samples:
            lines += _family(name, help_text, samples, fmt, unit or None)
    if fmt == "openmetrics":
        lines.append("# EOF")
    return "\n".join(lines) + "\n"
