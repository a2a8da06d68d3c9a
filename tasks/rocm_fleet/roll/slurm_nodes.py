"""A node's Slurm, asked on the node itself (``scontrol``, ``squeue`` as root); a command that
fails raises ``SlurmUnreachable`` with Slurm's own words. The roll's drain reasons start
``rocm-fleet:``."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rocm_fleet.engine.remote import Ran
from rocm_fleet.model import grammar
from rocm_fleet.model.slurm import REASON_PREFIX, NodeState, SlurmOutputError, parse_node

Runner = Callable[[Sequence[str]], Ran]


def parse_jobs(text: str) -> list[str]:
    """The job IDs of ``squeue --noheader --format=%i``'s output, one a line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def reason(why: str) -> str:
    """A drain reason: the prefix, then ``why`` on one line, no double quote (Slurm keeps it as
    given)."""
    words = " ".join(why.replace('"', "'").split())
    return f"{REASON_PREFIX} {words}"[:250]


#: the reason of a node the roll drained to change it
ROLLING = reason("rolling maintenance: drained to be changed, resumed once checked")


class SlurmUnreachable(Exception):
    """Slurm did not answer (or refused) a command on a node; one line with its words."""


class SlurmNode:
    """One inventory host's node in Slurm, reached by running Slurm's client on it."""

    def __init__(self, host: str, run: Runner, node_name: str | None = None) -> None:
        self.host, self._run, self._name = host, run, node_name

    @property
    def name(self) -> str:
        """The node's NodeName=: the setting, else the host's short name, as slurmd's own."""
        if self._name is None:
            name = self._ask(["hostname", "--short"]).strip()
            # NodeName= and squeue -w take hostlist expressions: one plain name only.
            if not grammar.full(grammar.SLURM_NODE_NAME, name):
                raise SlurmUnreachable(f"{self.host}: hostname --short gave {name!r}, not one "
                                       "Slurm node name; set rocm_slurm_node_name")  # fmt: skip
            self._name = name
        return self._name

    def state(self) -> NodeState:
        text = self._ask(["scontrol", "show", "node", self.name])
        try:
            return parse_node(text)
        except SlurmOutputError as exc:
            raise SlurmUnreachable(f"{self.host}: {exc}") from None

    def jobs(self) -> list[str]:
        """The IDs of the jobs on the node (running, completing, suspended)."""
        return parse_jobs(self._ask(["squeue", "--noheader", "--format=%i", "-w", self.name]))

    def drain(self, reason: str) -> None:
        """Drain the node (no new job; running ones go on), or give a drained one ``reason``."""
        self._ask(["scontrol", "update", f"NodeName={self.name}", "State=DRAIN",
                   f"Reason={reason}"])  # fmt: skip

    def resume(self) -> None:
        self._ask(["scontrol", "update", f"NodeName={self.name}", "State=RESUME"])

    def _ask(self, argv: Sequence[str]) -> str:
        try:
            ran = self._run(argv)
        except Exception as exc:  # the engine's RemoteFailed: the node itself is gone
            raise SlurmUnreachable(" ".join(str(exc).split())) from None
        if ran.status != 0:
            said = " ".join((ran.stderr or ran.stdout).split()) or f"exit status {ran.status}"
            raise SlurmUnreachable(f"{self.host}: {argv[0]} {argv[1]}: {said}")
        return ran.stdout
