"""The audit's outlier rule: a host differing from the strict majority of its peers
(docs/decisions/audit.md), and the rows it flags."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rocm_fleet.audit.cells import AuditRow, Cell, Outlier
from rocm_fleet.model import node_settings
from rocm_fleet.model.health import HostHealth
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.settings import SETTINGS
from rocm_fleet.model.slurm import gpu_type

if TYPE_CHECKING:
    pass

#: what the rule compares, in report order
PROPERTIES = ("driver", "firmware", "kernel", "rocm")
#: property -> the audit cell that shows it
CELLS = {"driver": "driver", "firmware": "health", "kernel": "kernel", "rocm": "rocm"}
#: property -> the deploy's concerns (audit concern ids) that change it; firmware: none
CONCERNS = {
    "driver": ("amdgpu_driver",),
    "firmware": (),
    "kernel": ("kernel",),
    "rocm": ("rocm_apt_repository", "rocm_packages"),
}
#: the settings' concerns that decide what the compared properties should be: hosts differing
#: in these are not peers (users, PyTorch, Slurm, ... are not compared)
PEER_CONCERNS = frozenset(
    {node_settings.REPOSITORY, node_settings.PACKAGES, node_settings.KERNEL, node_settings.DRIVER}
)


def peer_key(survey: HostSurvey, gpus: list[dict[str, Any]], config: Any) -> str:
    """The host's peer group: ``debian 12 / mi300x / settings 1a2b3c4d`` (distro release, GPU
    model(s), SHA-256 of its settings of :data:`PEER_CONCERNS`)."""
    distro = survey.distro or {}
    release = f"{distro.get('id') or '?'} {distro.get('version_id') or '?'}"
    models = sorted({gpu_type(g["gfx"] or "unknown", g.get("device")) for g in gpus})
    chosen = {key: getattr(config, key) for key, declared in SETTINGS.items()
              if declared.metadata["concern"] in PEER_CONCERNS}  # fmt: skip
    digest = hashlib.sha256(json.dumps(chosen, sort_keys=True, default=str).encode()).hexdigest()
    return f"{release} / {'+'.join(models) or 'none'} / settings {digest[:8]}"


@dataclass(frozen=True)
class HostVersions:
    """What one host runs; ``None`` where the survey could not tell."""

    driver: str | None = None  #: amdgpu's version (``/sys/module/amdgpu/version``, DKMS)
    firmware: str | None = None  #: GPU firmware (VBIOS / IFWI), joined if several GPUs differ
    kernel: str | None = None  #: running kernel release
    rocm: str | None = None  #: ``/opt/rocm/.info/version``


def versions_from_survey(survey: HostSurvey, health: HostHealth | None) -> HostVersions:
    """A host's versions from its survey and its amd-smi reading."""
    amdgpu = survey.amdgpu or {}
    firmware = sorted({gpu.firmware for gpu in health.gpus if gpu.firmware} if health else ())
    return HostVersions(
        driver=amdgpu.get("version") or None,  # AMD's DKMS amdgpu; the inbox one has none
        firmware="/".join(firmware) or None,
        kernel=survey.kernel or None,
        rocm=survey.rocm_version or None,
    )


def majority(values: list[str]) -> str | None:
    """The value more than half of ``values`` hold, or None (a tie, a plurality, < 3)."""
    if len(values) < 3:
        return None
    value, count = Counter(values).most_common(1)[0]
    return value if count * 2 > len(values) else None


def outliers(groups: Mapping[str, list[str]], hosts: Mapping[str, HostVersions]) -> list[Outlier]:
    """Each host differing from its group's majority, per property (hosts missing skipped)."""
    found = []
    for group in sorted(groups):
        members = [name for name in groups[group] if name in hosts]
        for prop in PROPERTIES:
            reported = {name: getattr(hosts[name], prop) for name in members}
            values = [value for value in reported.values() if value is not None]
            common = majority(values)
            if common is None:
                continue
            count = values.count(common)
            found += [
                Outlier(group, name, prop, value, common, count, len(values), CELLS[prop])
                for name, value in sorted(reported.items())
                if value is not None and value != common
            ]
    return found


def with_drift(found: list[Outlier], drifted: Mapping[str, set[str]]) -> list[Outlier]:
    """``found``, drift where one of the property's :data:`CONCERNS` drifted on its host."""
    return [
        replace(o, drift=bool(set(CONCERNS[o.property]) & drifted.get(o.host, set())))
        for o in found
    ]


def flag_outliers(rows: list[AuditRow], found: list[Outlier]) -> list[AuditRow]:
    """Each surveyed row with its outliers; a drifted one makes an ``ok`` row ``drift``."""
    by_host: dict[str, list[Outlier]] = {}
    for outlier in found:
        by_host.setdefault(outlier.host, []).append(outlier)
    return [_with_outliers(row, by_host.get(row.host, [])) if row.outliers is not None else row
            for row in rows]  # fmt: skip


def _with_outliers(row: AuditRow, mine: list[Outlier]) -> AuditRow:
    if not mine:
        return replace(row, outliers=(), cells=replace(row.cells, outlier=Cell("no")))
    said = [
        f"{o.property} {o.value} ({o.hosts_with_majority} of {o.hosts_reporting} in "
        f"group {o.group} have {o.majority})"
        for o in mine
    ]
    drifted = [o for o in mine if o.drift]
    text = "; ".join(said)
    row = replace(
        row,
        outliers=tuple(mine),
        cells=replace(row.cells, outlier=Cell(f"! {text}" if drifted else text, bool(drifted))),
    )
    if row.status not in ("ok", "drift") or not drifted:
        return row
    return replace(
        row, status="drift", drift=(*row.drift, *(f"outlier: {o.property}" for o in drifted))
    )
