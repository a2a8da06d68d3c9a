"""A node's GPUs as Slurm GRES: gres.conf's lines (one per KFD GPU with a render node, every
value grammar-checked) and the ``Gres=`` slurm.conf must say, which rocm-fleet never writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rocm_fleet.assets import render
from rocm_fleet.model import grammar, paths
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
    """The GRES type: the product its PCI ID names (``mi300x``), else the gfx target."""
    row = lookup(device_id) if device_id else None
    product = re.search(r"\[([^\]]+)\]", row.name) if row else None
    if product and "/" not in product.group(1):
        words = [w.lower() for w in product.group(1).split() if w.lower() not in _LINE_WORDS]
        name = "_".join(words)
        if name and grammar.full(grammar.SLURM_GRES_TYPE, name):
            return name
    return gfx


def slurm_gpus(kfd_nodes: Iterable[Mapping[str, Any]], type_: str | None = None) -> list[SlurmGpu]:
    """The KFD GPUs with a render node, in its order, typed ``type_`` if given; raises
    GresError naming the GPU."""
    gpus = []
    for node in kfd_nodes:
        raw = node.get("drm_render_minor")
        if not raw:
            continue  # no render node: nothing to bind a job to
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
    found: dict[tuple[str, str | None], int] = {}
    for gpu in gpus:
        found[GRES_NAME, gpu.type] = found.get((GRES_NAME, gpu.type), 0) + 1
    return found


def node_gres(gpus: Iterable[SlurmGpu]) -> str:
    """The node's slurm.conf ``Gres=``: ``gpu:mi300x:8``; "" without a GPU."""
    return ",".join(f"{name}:{kind}:{n}" for (name, kind), n in counts(gpus).items())


def gres_conf(gpus: list[SlurmGpu]) -> str:
    """gres.conf for this node; raises GresError."""
    for gpu in gpus:
        gpu.line()  # raises GresError before the template writes anything
    return render("gres.conf.j2", gres=node_gres(gpus), name=GRES_NAME, gpus=gpus)


def parse_gres(value: str | None) -> dict[tuple[str, str | None], int]:
    """``Gres=`` -> {(name, type): count}: ``gpu:mi300x:8(S:0-1)`` -> {("gpu", "mi300x"): 8},
    ``(null)`` -> {}; no count means 1."""
    text = (value or "").strip()
    if text in ("", "(null)"):
        return {}
    found: dict[tuple[str, str | None], int] = {}
    for entry in re.sub(r"\([^)]*\)", "", text).split(","):
        parts = entry.strip().split(":")
        if not parts[0]:
            continue
        name, kind, count = parts[0], None, 1
        if len(parts) == 2:
            if parts[1].isdigit():
                count = int(parts[1])
            else:
                kind = parts[1]
        elif len(parts) >= 3:
            kind = parts[1]
            count = int(parts[2]) if parts[2].isdigit() else 1
        found[name, kind] = found.get((name, kind), 0) + count
    return found


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
