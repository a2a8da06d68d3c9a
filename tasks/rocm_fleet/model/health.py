"""GPU health (ECC counts, PCIe link, XGMI links) from ``amd-smi --json`` (6.x's list or 7.x's
``{"gpu_data": [...]}``), pure; a counter not reported is ``None``, never zero."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

NOT_AVAILABLE = "not available on this GPU"
#: ``amd-smi xgmi --link-status`` letters (amdsmi_xgmi_link_status_type_t): up, down, disabled
XGMI_UP, XGMI_DOWN, XGMI_DISABLED = "U", "D", "X"


#: what is read, by name -> amd-smi's arguments (``--json`` is added).
AMD_SMI_READS = {
    "metric": "metric --ecc --pcie",
    "static": "static",
    "xgmi": "xgmi --link-status",  # amd-smi >= ROCm 6.4; older ones print usage, exit non-zero
}


class HealthParseError(ValueError):
    """The tool's output is not the JSON this module knows (says which command and why)."""


@dataclass(frozen=True)
class Ecc:
    """Total ECC errors since the driver loaded; ``None``: the GPU has no such counter."""

    correctable: int | None = None
    uncorrectable: int | None = None

    @property
    def available(self) -> bool:
        return self.correctable is not None or self.uncorrectable is not None


@dataclass(frozen=True)
class PcieLink:
    width: int | None = None  #: lanes now
    speed_gts: float | None = None  #: GT/s now (drops at idle)
    max_width: int | None = None  #: the card's (``amd-smi static --bus``)
    max_speed_gts: float | None = None

    @property
    def degraded(self) -> bool:
        """Fewer lanes than the card has: a bad seat, riser or slot (x8 instead of x16)."""
        return self.width is not None and self.max_width is not None and self.width < self.max_width


@dataclass(frozen=True)
class GpuHealth:
    gpu: int  #: amd-smi's GPU index
    bdf: str | None = None
    ecc: Ecc = Ecc()
    pcie: PcieLink = PcieLink()
    #: one letter per XGMI link (U/D/X); ``None``: no XGMI on this GPU or tool too old
    xgmi: tuple[str, ...] | None = None
    #: the board's firmware version (``static``'s ``vbios``, ``ifwi`` from ROCm 7.0)
    firmware: str | None = None

    @property
    def xgmi_down(self) -> int:
        return (self.xgmi or ()).count(XGMI_DOWN)

    def problems(self) -> list[str]:
        """What is wrong, one sentence each; empty when healthy (or nothing is known)."""
        found = []
        name = f"GPU {self.gpu}" + (f" ({self.bdf})" if self.bdf else "")
        if self.ecc.uncorrectable:
            found.append(f"{name}: {self.ecc.uncorrectable} uncorrectable ECC errors")
        if self.pcie.degraded:
            found.append(
                f"{name}: PCIe link x{self.pcie.width}, the card has x{self.pcie.max_width}"
            )
        if self.xgmi_down:
            found.append(f"{name}: {self.xgmi_down} of {len(self.xgmi or ())} XGMI links down")
        return found

    def warnings(self) -> list[str]:
        """Worth watching, not failing: correctable ECC errors."""
        count = self.ecc.correctable
        return [f"GPU {self.gpu}: {count} correctable ECC errors"] if count else []

    def lines(self) -> list[str]:
        """One line per counter, "not available on this GPU" where the tool has none."""

        def shown(value: object, suffix: str = "") -> str:
            return NOT_AVAILABLE if value is None else f"{value}{suffix}"

        pcie = self.pcie
        link = (
            NOT_AVAILABLE
            if pcie.width is None
            else f"x{pcie.width} (card x{shown(pcie.max_width)}), "
            f"{shown(pcie.speed_gts, ' GT/s')} (card {shown(pcie.max_speed_gts, ' GT/s')})"
        )
        xgmi = NOT_AVAILABLE if self.xgmi is None else " ".join(self.xgmi)
        return [
            f"GPU {self.gpu}: ECC correctable {shown(self.ecc.correctable)}, "
            f"uncorrectable {shown(self.ecc.uncorrectable)}",
            f"GPU {self.gpu}: PCIe {link}",
            f"GPU {self.gpu}: XGMI links {xgmi}",
        ]


def _by_gpu(text: str | None, command: str) -> dict[int, dict[str, Any]]:
    """The per-GPU objects of an amd-smi ``--json`` output (either top-level form), by index."""
    if not text or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise HealthParseError(f"{command}: not JSON ({exc}): {text[:120]!r}") from None
    if isinstance(data, dict):
        # 7.x wraps the list; ``xgmi --json`` names it after the table
        for key in ("gpu_data", "link_status", "xgmi_metric"):
            if isinstance(data.get(key), list):
                data = data[key]
                break
    if not isinstance(data, list):
        raise HealthParseError(f"{command}: expected a list of GPUs, got {type(data).__name__}")
    records = [item for item in data if isinstance(item, dict) and "gpu" in item]
    return {index: r for r in records if (index := _int(r.get("gpu"))) is not None}


def _number(value: Any) -> float | None:
    """16, 2.5, "16" or {"value": 32, ...} as a number; None for "N/A", absent, negative or
    all-ones "unsupported" sentinels."""
    if isinstance(value, dict):
        value = value.get("value")
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.split()[0])
        except (ValueError, IndexError):
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    if value >= 0xFFFF_FFFF:  # UINT32_MAX / UINT64_MAX: the library's "not supported"
        return None
    return float(value)


def _int(value: Any) -> int | None:
    number = _number(value)
    return None if number is None else int(number)


def _speed_gts(value: Any) -> float | None:
    """GT/s; some releases give MT/s (16000 for Gen4) where the unit says GT/s."""
    speed = _number(value)
    if speed is not None and speed >= 1000:
        speed /= 1000
    return speed


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() not in ("", "N/A") else None


def _section(record: dict[str, Any], key: str) -> dict[str, Any]:
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def _xgmi_states(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list):
        return None
    states = tuple(str(item).strip().upper() for item in value)
    if not states or all(state not in (XGMI_UP, XGMI_DOWN, XGMI_DISABLED) for state in states):
        return None  # all "N/A": no XGMI links (a PCIe card, an APU)
    return states


def gpu_health(
    metric: str | None, static: str | None = None, xgmi: str | None = None
) -> list[GpuHealth]:
    """Per GPU, from the outputs of :data:`AMD_SMI_READS`; a missing or empty one leaves its
    counters unknown."""
    metrics = _by_gpu(metric, "amd-smi metric")
    statics = _by_gpu(static, "amd-smi static")
    links = _by_gpu(xgmi, "amd-smi xgmi")
    result = []
    for index in sorted(set(metrics) | set(statics) | set(links)):
        m, s, x = metrics.get(index, {}), statics.get(index, {}), links.get(index, {})
        ecc, pcie, bus = _section(m, "ecc"), _section(m, "pcie"), _section(s, "bus")
        firmware = (_section(s, "ifwi") or _section(s, "vbios")).get("version")
        bdf = _text(bus.get("bdf")) or _text(x.get("bdf"))
        result.append(
            GpuHealth(
                gpu=index,
                bdf=bdf,
                ecc=Ecc(
                    correctable=_int(ecc.get("total_correctable_count")),
                    uncorrectable=_int(ecc.get("total_uncorrectable_count")),
                ),
                pcie=PcieLink(
                    width=_int(pcie.get("width")),
                    speed_gts=_speed_gts(pcie.get("speed")),
                    max_width=_int(bus.get("max_pcie_width")),
                    max_speed_gts=_speed_gts(bus.get("max_pcie_speed")),
                ),
                xgmi=_xgmi_states(x.get("link_status")),
                firmware=_text(firmware),
            )
        )
    return result


def usable_json(text: str | None) -> str | None:
    """A secondary read's JSON, or None when amd-smi lacks the command (usage text)."""
    if not text or text.lstrip()[:1] not in ("[", "{"):
        return None
    return text


#: (name, labels, value): one OpenMetrics sample; the audit adds ``host`` and renders
Sample = tuple[str, dict[str, str], float]

#: each family's HELP text (all gauges)
HEALTH_FAMILIES = {
    "rocm_fleet_gpu_ecc_correctable_errors": "ECC errors corrected since the driver loaded",
    "rocm_fleet_gpu_ecc_uncorrectable_errors": "ECC errors not correctable since the driver loaded",
    "rocm_fleet_gpu_pcie_link_width": "PCIe lanes the link runs at",
    "rocm_fleet_gpu_pcie_link_max_width": "PCIe lanes the card has",
    "rocm_fleet_gpu_pcie_link_speed_transfers_per_second": "PCIe link speed now (lower when idle)",
    "rocm_fleet_gpu_pcie_link_max_speed_transfers_per_second": "the card's maximum PCIe link speed",
    "rocm_fleet_gpu_xgmi_links_down": "XGMI links down",
    "rocm_fleet_gpu_xgmi_links_up": "XGMI links up",
    "rocm_fleet_gpu_healthy": "1 when no uncorrectable ECC error, narrowed link or XGMI link down",
}

#: the families that count up (from 0 when the driver loads): counters, exposed as ``NAME_total``
HEALTH_COUNTERS = frozenset(
    {"rocm_fleet_gpu_ecc_correctable_errors", "rocm_fleet_gpu_ecc_uncorrectable_errors"}
)


def health_metrics(gpus: list[GpuHealth]) -> list[Sample]:
    """The samples for one host's GPUs; a counter the GPU lacks is left out, never 0."""
    samples: list[Sample] = []
    for gpu in gpus:
        labels = {"gpu": str(gpu.gpu), **({"bdf": gpu.bdf} if gpu.bdf else {})}
        values: list[tuple[str, float | None]] = [
            ("rocm_fleet_gpu_ecc_correctable_errors", gpu.ecc.correctable),
            ("rocm_fleet_gpu_ecc_uncorrectable_errors", gpu.ecc.uncorrectable),
            ("rocm_fleet_gpu_pcie_link_width", gpu.pcie.width),
            ("rocm_fleet_gpu_pcie_link_max_width", gpu.pcie.max_width),
            ("rocm_fleet_gpu_pcie_link_speed_transfers_per_second", gpu.pcie.speed_gts),
            ("rocm_fleet_gpu_pcie_link_max_speed_transfers_per_second", gpu.pcie.max_speed_gts),
        ]
        values = [(n, v * 1e9 if v is not None and "speed" in n else v) for n, v in values]
        if gpu.xgmi is not None:
            values.append(("rocm_fleet_gpu_xgmi_links_down", gpu.xgmi_down))
            values.append(("rocm_fleet_gpu_xgmi_links_up", gpu.xgmi.count(XGMI_UP)))
        samples += [(name, labels, float(v)) for name, v in values if v is not None]
        samples.append(("rocm_fleet_gpu_healthy", labels, 0.0 if gpu.problems() else 1.0))
    return samples


@dataclass(frozen=True)
class HostHealth:
    """What the host's SMI tool said. ``status``: ``ok``, ``no_tool``, ``unsupported`` (only
    rocm-smi) or ``error`` (``message`` says why)."""

    status: str
    tool: str | None = None  #: the program's path
    message: str = ""
    gpus: tuple[GpuHealth, ...] = ()

    def problems(self) -> list[str]:
        return [problem for gpu in self.gpus for problem in gpu.problems()]


def health_families(
    hosts: list[tuple[str, HostHealth]],
) -> list[tuple[str, str, list[tuple[dict[str, str], float]], str]]:
    """Metric families (name, help, samples, unit) for every host, labelled ``host`` first;
    families without samples left out."""
    samples: dict[str, list[tuple[dict[str, str], float]]] = {name: [] for name in HEALTH_FAMILIES}
    for host, health in hosts:
        for name, labels, value in health_metrics(list(health.gpus)):
            samples[name].append(({"host": host, **labels}, value))
    return [(name, HEALTH_FAMILIES[name], found, "") for name, found in samples.items() if found]
