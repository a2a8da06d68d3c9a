"""The audit's row and cells as types; ``AuditRow.to_json`` is ``--format json``'s host object."""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

from rocm_fleet.model.acceptance import AcceptanceRecord
from rocm_fleet.model.boot import BootOutlook
from rocm_fleet.model.health import HostHealth

Status = Literal["ok", "drift", "refused", "unreachable", "failed", "invalid"]
#: every status a row can have, the good ones first
STATUSES: tuple[Status, ...] = ("ok", "drift", "refused", "unreachable", "failed", "invalid")


def plain(value: Any) -> Any:
    """``value`` as JSON has it: a dataclass a dict of its fields in order, a tuple a list."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class Cell:
    """What one column shows for a host: ``text``, and whether it is drift."""

    text: str
    drift: bool = False

    def to_json(self) -> dict[str, Any]:
        return plain(self)


@dataclass(frozen=True, kw_only=True)
class KernelCell(Cell):
    running: str  #: the running kernel's release
    newer: str | None = None  #: the newest installed kernel newer than it


@dataclass(frozen=True, kw_only=True)
class SecureBootCell(Cell):
    state: str  #: mokutil's Secure Boot state (``enabled``, ``disabled``, ``absent``, ...)
    mok: str | None = None  #: the signing key's MOK state, when it has one


@dataclass(frozen=True, kw_only=True)
class RocmCell(Cell):
    installed: str | None  #: ``/opt/rocm/.info/version``; None: none installed


@dataclass(frozen=True, kw_only=True)
class TorchCell(Cell):
    """The venv's torch (``model.conflicts.venv_torch``)."""

    torch: str | None
    hip: str | None
    cuda: str | None
    build: str | None  #: ``rocm``, ``cuda``, ``cpu``; None: no torch


@dataclass(frozen=True)
class ApuTotals:
    """An APU's integrated GPU: amdgpu's memory totals (bytes), its VRAM being a carve-out."""

    gfx: str
    slot: str
    vram_total: int | None
    gtt_total: int | None


@dataclass(frozen=True, kw_only=True)
class GpusCell(Cell):
    expected: str  #: what the inventory expects, as the table says it
    expected_count: int | None  #: None: at least one
    found: tuple[str, ...]  #: the gfx target of each AMD GPU found
    apus: tuple[ApuTotals, ...] = ()


@dataclass(frozen=True, kw_only=True)
class DriverCell(Cell):
    bound: tuple[str, ...]  #: the drivers bound to the host's AMD GPUs


@dataclass(frozen=True, kw_only=True)
class RebootCell(Cell):
    pending: bool
    unsafe: bool  #: the kernel it boots next is not ready for the driver
    reasons: tuple[str, ...]
    boot: BootOutlook

    def to_json(self) -> dict[str, Any]:
        found = plain(self)
        # ``ready`` is a property: named here, before the problems
        found["boot"]["kernels"] = [
            {"kernel": k.kernel, "ready": k.ready, "problems": list(k.problems)}
            for k in self.boot.kernels
        ]
        return found


@dataclass(frozen=True, kw_only=True)
class SlurmCell(Cell):
    """Slurm's ``Gres=`` for the node against its GPUs (``rocm_slurm_gres``)."""

    node: str | None = None  #: the node Slurm was asked about; None: not asked (setting off)
    gres: str | None = None  #: what Slurm says (``scontrol show node``); None: no answer
    needs: str | None = None  #: what the node's GPUs make; None: not known


@dataclass(frozen=True, kw_only=True)
class ContainersCell(Cell):
    """GPU containers (``rocm_containers_engines``): ``model.gpu_containers.judge``'s verdict, and
    what rocm-fleet left that the inventory no longer wants (a host without engines too)."""

    engines: tuple[str, ...]  #: the engines the inventory wants
    spec: str  #: ``current``, ``stale``, ``missing``, ``unknown``
    gone: tuple[str, ...] = ()  #: render nodes the spec names that the host no longer has
    missed: tuple[str, ...] = ()  #: render nodes of the host's GPUs the spec lacks
    problems: tuple[str, ...] = ()
    #: what rocm-fleet set up that the inventory no longer wants (``gpu_containers.leftovers``)
    leftovers: tuple[str, ...] = ()

    @property
    def works(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        found = plain(self)
        if not self.leftovers:
            del found["leftovers"]
        return found


@dataclass(frozen=True, kw_only=True)
class HealthCell(Cell):
    status: str  #: ``HostHealth.status``, or ``unread`` when the read failed
    problems: tuple[str, ...] = ()
    warnings: tuple[str, ...] | None = None  #: correctable ECC errors, when the GPUs were read

    def to_json(self) -> dict[str, Any]:
        found = plain(self)
        if self.warnings is None:
            del found["warnings"]
        return found


@dataclass(frozen=True, kw_only=True)
class AcceptanceCell(Cell):
    """The node's last acceptance run (``rocm_acceptance``); never drift (``audit.rows``)."""

    level: str | None = None  #: None: never run, or the record not understood
    passed: bool | None = None
    finished_at: float | None = None  #: seconds since the epoch


@dataclass(frozen=True, kw_only=True)
class ConcernCell(Cell):
    """A concern of the plan: its ``name`` and its operations that would change the host."""

    name: str
    operations: tuple[str, ...]


#: the observed columns: key -> header, in order
OBSERVED: dict[str, str] = {
    "distro": "DISTRO", "kernel": "KERNEL", "secure_boot": "SECURE BOOT / MOK", "rocm": "ROCM",
    "torch": "TORCH (hip)", "gpus": "GPUS expected/found", "driver": "DRIVER",
    "reboot": "REBOOT PENDING", "slurm": "SLURM GRES", "containers": "GPU CONTAINERS",
    "health": "GPU HEALTH", "outlier": "OUTLIER", "acceptance": "ACCEPTANCE",
}  # fmt: skip
#: the observed columns shown only when some host has the cell
OPTIONAL: frozenset[str] = frozenset({"containers"})


@dataclass(frozen=True)
class ObservedCells:
    """The survey's cells in column order (``OBSERVED``); None where the host has none."""

    distro: Cell | None = None
    kernel: KernelCell | None = None
    secure_boot: SecureBootCell | None = None
    rocm: RocmCell | Cell | None = None
    torch: TorchCell | None = None
    gpus: GpusCell | None = None
    driver: DriverCell | None = None
    reboot: RebootCell | None = None
    slurm: SlurmCell | None = None
    containers: ContainersCell | None = None
    health: HealthCell | None = None
    outlier: Cell | None = None
    acceptance: AcceptanceCell | None = None

    def items(self) -> Iterator[tuple[str, Cell]]:
        """(key, cell) of every cell the host has, in column order."""
        for key in OBSERVED:
            if (found := getattr(self, key)) is not None:
                yield key, found

    @property
    def rocm_release(self) -> str | None:
        """The installed ROCm release; None when none or not surveyed."""
        return self.rocm.installed if isinstance(self.rocm, RocmCell) else None

    def get(self, key: str) -> Cell | None:
        return getattr(self, key, None) if key in OBSERVED else None

    def __bool__(self) -> bool:
        return any(True for _ in self.items())

    def to_json(self) -> dict[str, Any]:
        return {key: found.to_json() for key, found in self.items()}


@dataclass(frozen=True)
class Outlier:
    group: str
    host: str
    property: str  #: one of ``outliers.PROPERTIES``
    value: str
    majority: str
    hosts_with_majority: int
    hosts_reporting: int
    #: the audit cell that shows the property (``outliers.CELLS``)
    cell: str = ""
    #: whether the deploy would change it (its concern drifted on this host)
    drift: bool = False

    def sentence(self) -> str:
        return (
            f"{self.host}: {self.property} {self.value}, but {self.hosts_with_majority} of "
            f"{self.hosts_reporting} hosts in group {self.group} have {self.majority}"
        )


@dataclass(frozen=True)
class AuditRow:
    """One host of the audit; ``outliers`` None when not surveyed, ``health`` None when unread."""

    host: str
    status: Status
    error: str | None = None
    drift: tuple[str, ...] = ()
    cells: ObservedCells = ObservedCells()
    concerns: Mapping[str, ConcernCell] = field(default_factory=dict)  #: by concern id
    health: HostHealth | None = None
    outliers: tuple[Outlier, ...] | None = None
    #: the last acceptance run's record (``rocm_acceptance`` on, one kept on the node)
    acceptance: AcceptanceRecord | None = None
    details: Mapping[str, list[str]] = field(default_factory=dict)  #: a refusal's long lists
    warnings: tuple[str, ...] = ()  #: what preflight warns of: said, not drift
    verified_at: float | None = None  #: when the deploy's GPU check last passed (this boot)
    #: where the host's release row comes from (Config.matrix_source)
    matrix_data: str | None = None
    #: what the plan would change in detail (``--format json`` only): {"packages", "files"}
    changes: Mapping[str, list[dict[str, Any]]] | None = None

    def to_json(self) -> dict[str, Any]:
        """The host as ``--format json`` prints it (the keys scripts read)."""
        found: dict[str, Any] = {
            "host": self.host,
            "error": self.error,
            "drift": list(self.drift),
            "cells": self.cells.to_json(),
            "concerns": {key: concern.to_json() for key, concern in self.concerns.items()},
        }
        if self.outliers is not None:
            found["health"] = plain(self.health)
            found["outliers"] = [{**plain(o), "sentence": o.sentence()} for o in self.outliers]
        found["status"] = self.status
        optional = {
            "details": self.details or None,
            "warnings": self.warnings or None,
            "verified_at": self.verified_at,
            "matrix_data": self.matrix_data,
            "changes": self.changes,
        }
        return found | {key: plain(value) for key, value in optional.items() if value is not None}
