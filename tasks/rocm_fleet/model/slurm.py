"""A node's GPUs as Slurm's generic resources: gres.conf's lines, slurm.conf's ``Gres=``, and
``scontrol show node`` read back (docs/decisions/slurm-gres.md)."""

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rocm_fleet.assets import render
from rocm_fleet.model import grammar, paths
from rocm_fleet.model.health_check import scontrol_node
from rocm_fleet.model.pci_ids import lookup

GRES_NAME = "gpu"
#: Words of a PCI ID's product name that say the maker or line, not the product.
_LINE_WORDS = {"amd", "instinct", "radeon", "pro"}


class GresError(ValueError):
    """A value that would not be one token of gres.conf's grammar."""


@dataclass(frozen=True, order=True)
class SlurmGpu:
    """One GPU as gres.conf lists it."""

    type: str  #: "mi300x"
    file: str  #: "/dev/dri/renderD128"

    def line(self) -> str:
        for what, value, pattern in (
            ("type", self.type, grammar.SLURM_GRES_TYPE),
            ("file", self.file, grammar.RENDER_NODE),
        ):
            if not grammar.full(pattern, value):
                raise GresError(f"gres.conf {what} {value!r} is not {pattern}")
        return f"Name={GRES_NAME} Type={self.type} File={self.file}"


@dataclass(frozen=True)
class SlurmNodeView:
    """What Slurm's controller says of this node (``scontrol show node``)."""

    node: str  #: the name asked for (``rocm_slurm_node_name``, else the host's short name)
    gres: str | None  #: its ``Gres=`` as printed ("gpu:mi300x:8", "(null)"); None: no answer
    error: str | None = None  #: why there is no answer (no scontrol, unknown node, ...)


def gpu_type(gfx: str, device_id: str | None) -> str:
    """The GRES type of a GPU: its product where its PCI ID names exactly one, else its gfx
    target (``"gfx1100"``)."""
    row = lookup(device_id) if device_id else None
    product = re.search(r"\[([^\]]+)\]", row.name) if row else None
    if product and "/" not in product.group(1):
        words = [w.lower() for w in product.group(1).split() if w.lower() not in _LINE_WORDS]
        name = "_".join(words)
        if name and grammar.full(grammar.SLURM_GRES_TYPE, name):
            return name
    return gfx


def slurm_gpus(kfd_nodes: Iterable[Mapping[str, Any]], type_: str | None = None) -> list[SlurmGpu]:
    """The GPUs of the KFD topology that have a render node, in render-node order, each of
    ``type_`` if given; GresError names a GPU whose values can't go into gres.conf."""
    gpus = []
    for node in kfd_nodes:
        raw = node.get("drm_render_minor")
        if not raw:
            continue  # no render node: nothing Slurm could bind a job to
        where = f"KFD node {node.get('node', '?')} ({node.get('gfx')})"
        try:
            minor = int(raw)
        except (TypeError, ValueError):
            raise GresError(f"{where}: drm_render_minor {raw!r} is not a number") from None
        kind = type_ or gpu_type(str(node["gfx"]), node.get("device_id"))
        gpu = SlurmGpu(kind, f"{paths.RENDER_NODE_PREFIX}{minor}")
        try:
            gpu.line()  # checked here, where the GPU can still be named
        except GresError as exc:
            raise GresError(f"{where}: {exc}") from None
        gpus.append((minor, gpu))
    return [gpu for _, gpu in sorted(gpus, key=lambda pair: pair[0])]


def counts(gpus: Iterable[SlurmGpu]) -> dict[tuple[str, str | None], int]:
    return dict(Counter((GRES_NAME, gpu.type) for gpu in gpus))


def node_gres(gpus: Iterable[SlurmGpu]) -> str:
    """What slurm.conf's line for this node must say: ``gpu:mi300x:8,...``; "" without a GPU."""
    return ",".join(f"{name}:{kind}:{n}" for (name, kind), n in counts(gpus).items())


def gres_conf(gpus: list[SlurmGpu]) -> str:
    """gres.conf for this node (GresError for a value outside the grammar)."""
    for gpu in gpus:
        gpu.line()  # each value checked by its grammar before the template writes it
    return render("gres.conf.j2", gres=node_gres(gpus), name=GRES_NAME, gpus=gpus)


def parse_gres(value: str | None) -> dict[tuple[str, str | None], int]:
    """A ``Gres=`` value -> (name, type) -> count: ``gpu:mi300x:8(S:0-1)`` -> {("gpu",
    "mi300x"): 8}, ``gpu:2`` -> {("gpu", None): 2}, ``(null)`` -> {}; no count counts 1."""
    text = (value or "").strip()
    found: Counter[tuple[str, str | None]] = Counter()
    if text in ("", "(null)"):
        return {}
    for entry in re.sub(r"\([^)]*\)", "", text).split(","):
        parts = entry.strip().split(":")
        if not parts[0]:
            continue
        if len(parts) == 2 and parts[1].isdigit():
            found[parts[0], None] += int(parts[1])
        else:  # name[:type[:count]]
            kind = parts[1] if len(parts) >= 2 else None
            count = parts[2] if len(parts) >= 3 else ""
            found[parts[0], kind] += int(count) if count.isdigit() else 1
    return dict(found)


def gres_mismatch(gpus: list[SlurmGpu], view: SlurmNodeView) -> str | None:
    """Why Slurm's view of the node disagrees with its GPUs (None: it agrees)."""
    need = node_gres(gpus) or "(null)"
    if view.error is not None or view.gres is None:
        return (
            f"Slurm could not be asked about node {view.node} ({view.error}); it needs Gres={need}"
        )
    if parse_gres(view.gres) != counts(gpus):
        return (
            f"Slurm's node {view.node} has Gres={view.gres}; its GPUs need Gres={need} "
            "(on its NodeName line in the controller's slurm.conf, then `scontrol reconfigure` "
            "and a restart of slurmd)"
        )
    return None


#: every reason the roll sets starts so; a drain with another reason is not the roll's
REASON_PREFIX = "rocm-fleet:"

#: base states with no job on the node (Slurm's node_state_string)
EMPTY_STATES = frozenset({"IDLE", "DOWN", "FUTURE", "UNKNOWN"})


class SlurmOutputError(ValueError):
    """Slurm printed something this module can't read (one line saying what)."""


@dataclass(frozen=True)
class NodeState:
    """One Slurm node as ``scontrol show node NAME`` reports it."""

    name: str
    state: str  #: the base state: IDLE, MIXED, ALLOCATED, DOWN, ...
    flags: frozenset[str]  #: DRAIN, COMPLETING, NOT_RESPONDING (``*``), RESERVED, ...
    reason: str  #: the drain/down reason without Slurm's ``[user@time]``; "" when none
    gres: str | None = None  #: its ``Gres=`` as printed ("gpu:mi300x:8", "(null)"); None: none

    @property
    def drain(self) -> bool:
        """Whether the node is drained or draining (takes no new job)."""
        return "DRAIN" in self.flags

    @property
    def empty(self) -> bool:
        """Whether no job runs or completes on the node: a drained node has drained."""
        return self.state in EMPTY_STATES and "COMPLETING" not in self.flags

    @property
    def drained_by_roll(self) -> bool:
        """Whether the drain is the roll's own (an earlier roll's included)."""
        return self.drain and self.reason.startswith(REASON_PREFIX)

    @property
    def drained_by_others(self) -> bool:
        """Drained by someone else (an administrator, a health check): the roll keeps it so."""
        return self.drain and not self.drained_by_roll

    def describe(self) -> str:
        """The state as sinfo's words say it (drained, draining, idle, ...), with the reason."""
        words = ("drained" if self.empty else "draining") if self.drain else self.state.lower()
        return f"{words} ({self.reason})" if self.reason else words


def parse_node(text: str) -> NodeState:
    """A ``NodeState`` from ``scontrol show node NAME``'s text (``health_check.scontrol_node``
    reads it); SlurmOutputError when it names no node."""
    fields, reason = scontrol_node(text)
    name, state = fields.get("NodeName"), fields.get("State")
    if not name or not state:
        raise SlurmOutputError(f"not a node of scontrol show node: {' '.join(text.split())[:120]}")
    base, *flags = state.split("+")
    found = set(flags)
    if base.endswith("*"):  # "IDLE*": the node does not respond
        base = base.rstrip("*")
        found.add("NOT_RESPONDING")
    return NodeState(name, base, frozenset(found), reason, fields.get("Gres"))
