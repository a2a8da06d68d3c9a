"""The decisions of Slurm's health program (``rocm_slurm_health_check``), pure; the node program
carries this module and ``model.health`` verbatim, so both stay standard library only. The rules
are docs/maintaining/slurm.md's "The health check between changes"."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocm_fleet.model.health import GpuHealth

#: what every drain reason of the program starts with; no other drain is its own
PREFIX = "rocm-fleet-health:"
#: Slurm's reason is shown to every user (sinfo -R): node text is cut to this charset
_UNSAFE = re.compile(r"[^A-Za-z0-9 ._:,/()+>=-]")
MAX_REASON = 200


def gpu_key(gpu: GpuHealth) -> str:
    """The GPU's key in the baseline: its PCI slot, else its index."""
    return gpu.bdf or f"gpu{gpu.gpu}"


def next_baseline(gpus: Sequence[GpuHealth], baseline: Mapping[str, int]) -> dict[str, int]:
    """The baseline to keep: a GPU's first count, a lower count after a reset; never higher."""
    kept = dict(baseline)
    for gpu in gpus:
        count, key = gpu.ecc.uncorrectable, gpu_key(gpu)
        if count is not None and (key not in kept or count < kept[key]):
            kept[key] = count
    return kept


def problems(
    gpus: Sequence[GpuHealth],
    baseline: Mapping[str, int],
    missing: Sequence[str] = (),
    expected_gpus: int | None = None,
) -> list[str]:
    """What is wrong, one short sentence each; ``missing``: device files not there."""
    found = [f"{path} missing" for path in missing]
    if expected_gpus is not None and len(gpus) < expected_gpus:
        found.append(f"amd-smi sees {len(gpus)} of {expected_gpus} GPUs")
    for gpu in gpus:
        name = f"GPU {gpu.gpu}" + (f" ({gpu.bdf})" if gpu.bdf else "")
        count, before = gpu.ecc.uncorrectable, baseline.get(gpu_key(gpu))
        if count is not None and before is not None and count > before:
            found.append(f"{name}: uncorrectable ECC errors {before} -> {count}")
        if gpu.pcie.degraded:
            found.append(f"{name}: PCIe x{gpu.pcie.width} of x{gpu.pcie.max_width}")
        if gpu.xgmi_down:
            found.append(f"{name}: {gpu.xgmi_down} XGMI links down")
    return found


def reason(found: Sequence[str]) -> str:
    """Slurm's drain reason for ``found``: :data:`PREFIX`, then the problems in the safe
    charset, at most :data:`MAX_REASON` characters."""
    text = _UNSAFE.sub("?", f"{PREFIX} " + "; ".join(found))
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


@dataclass(frozen=True)
class SlurmView:
    """The node as ``scontrol show node`` says: drained (or draining), and the reason."""

    drain: bool
    reason: str  #: without Slurm's ``[user@time]``; "" when none

    @property
    def ours(self) -> bool:
        return self.drain and self.reason.startswith(PREFIX)


#: lines of ``scontrol show node`` whose value is free text (spaces and ``=`` its own)
_FREE_TEXT = ("OS=", "Comment=", "Extra=")
_FIELD = re.compile(r"(?:^|\s)([A-Za-z_]+)=(\S*)")
#: the `` [user@time]`` Slurm puts after a reason's first line; a user may hold "@" (user@domain)
_REASON_STAMP = re.compile(r"\s*\[[^\[\]]*@[^\[\]]*\]\s*$")
#: how Slurm indents a reason's further lines: its line end's 3 spaces and 7 more
_REASON_MORE = " " * 10


def scontrol_node(text: str) -> tuple[dict[str, str], str]:
    """``scontrol show node NAME``'s fields (the first of each key; free text not read for
    fields) and its reason ("" when none) as Slurm prints it (SchedMD/slurm
    src/api/node_info.c, ``slurm_sprint_node_table``): its first line after ``Reason=``, less
    the stamp, then each further line, indented by ``_REASON_MORE``, joined by newlines."""
    fields: dict[str, str] = {}
    said: list[str] = []
    more = False
    for line in text.splitlines():
        if more and line.startswith(_REASON_MORE):
            said.append(line[len(_REASON_MORE) :])
            continue
        stripped, more = line.strip(), False
        if not said and stripped.startswith("Reason="):
            said, more = [_REASON_STAMP.sub("", stripped.removeprefix("Reason=")).strip()], True
        elif not stripped.startswith(_FREE_TEXT):
            for key, value in _FIELD.findall(stripped):
                fields.setdefault(key, value)
    reason = "\n".join(said)
    return fields, "" if reason == "(null)" else reason


def slurm_view(text: str) -> SlurmView | None:
    """``scontrol show node NAME``'s drain flag and reason; None when it names no node."""
    fields, said = scontrol_node(text)
    if not (state := fields.get("State")):
        return None
    return SlurmView("DRAIN" in state.split("+"), said)


@dataclass(frozen=True)
class Action:
    """What the program does in Slurm: ``drain`` (with ``reason``), ``resume`` or ``none``,
    and why, for its log."""

    kind: str
    why: str
    reason: str | None = None


def decide(found: Sequence[str], view: SlurmView | None) -> Action:
    """The action for the node's problems ``found`` and its Slurm state (None: unknown)."""
    if view is None:
        return Action("none", "Slurm did not answer: nothing changed")
    if found:
        wanted = reason(found)
        if not view.drain:
            return Action("drain", "unhealthy", wanted)
        if view.ours and view.reason != wanted:
            return Action("drain", "unhealthy, the problems changed", wanted)
        if view.ours:
            return Action("none", "unhealthy, drained already")
        return Action("none", f"unhealthy; drained by someone else ({view.reason}): left so")
    if view.ours:
        return Action("resume", "healthy again, drained by this program")
    if view.drain:
        return Action("none", f"healthy; drained by someone else ({view.reason}): left so")
    return Action("none", "healthy")
