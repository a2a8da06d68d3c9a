"""Slurm's view of this node (``scontrol show node`` asked on the node)."""

import shlex

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import RC_PREFIX, split_rc
from rocm_fleet.model.slurm import SlurmNodeView, SlurmOutputError, parse_node

_NODE = "__node="
_NO_SCONTROL = "__no_scontrol"


class SlurmNode(FactBase[SlurmNodeView]):
    """Slurm's view of node ``node`` (None: the host's short name); ``error`` says why there is
    none (no scontrol, an unknown node, no answer)."""

    def command(self, node: str | None = None) -> str:
        named = f"node={shlex.quote(node)}" if node else "node=$(hostname -s)"
        return (
            named + '; echo "' + _NODE + '$node"; '
            "if ! command -v scontrol >/dev/null 2>&1; then echo " + _NO_SCONTROL + "; exit 0; fi; "
            'timeout 30 scontrol show node "$node" 2>&1; echo "' + RC_PREFIX + '$?"'
        )

    def process(self, output: list[str]) -> SlurmNodeView:
        lines, rc = split_rc(output)
        node = next((line[len(_NODE) :] for line in lines if line.startswith(_NODE)), "")
        body = [line for line in lines if not line.startswith(_NODE)]
        if _NO_SCONTROL in body:
            return SlurmNodeView(node, None, "scontrol is not installed")
        text = "\n".join(body)
        if rc != 0:
            said = " ".join(text.split())[:300] or f"exit status {rc}"
            return SlurmNodeView(node, None, f"scontrol show node {node}: {said}")
        try:
            found = parse_node(text)
        except SlurmOutputError as exc:
            return SlurmNodeView(node, None, f"scontrol show node {node}: {exc}")
        return SlurmNodeView(node, found.gres or "(null)")
