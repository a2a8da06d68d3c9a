"""Rolling maintenance in Slurm as pure data: the waves, a node's state from ``scontrol show
node`` (Slurm 22.05 to 24.11), and the roll's drain reasons (``REASON_PREFIX``). A drain by
someone else is kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

#: every reason the roll sets starts so; a drain with another reason is not the roll's
REASON_PREFIX = "rocm-fleet:"

#: base states with no job on the node (COMPLETING is a flag)
EMPTY_STATES = frozenset({"IDLE", "DOWN", "FUTURE", "UNKNOWN"})

Item = TypeVar("Item")


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


_FIELD = re.compile(r"(?:^|\s)([A-Za-z_]+)=(\S*)")
_REASON_SUFFIX = re.compile(r"\s*\[[^\[\]@]*@[^\[\]]*\]\s*$")


def parse_node(text: str) -> NodeState:
    """A ``NodeState`` from ``scontrol show node NAME``; raises SlurmOutputError for no node."""
    fields: dict[str, str] = {}
    reason = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Reason="):
            # the rest of the line is the reason, spaces and all, then [user@time]
            reason = _REASON_SUFFIX.sub("", stripped.removeprefix("Reason=")).strip()
            continue
        if stripped.startswith(("OS=", "Comment=", "Extra=")):
            continue  # free text, spaces included
        for key, value in _FIELD.findall(stripped):
            fields.setdefault(key, value)
    name, state = fields.get("NodeName"), fields.get("State")
    if not name or not state:
        raise SlurmOutputError(f"not a node of scontrol show node: {' '.join(text.split())[:120]}")
    base, *flags = state.split("+")
    found = set(flags)
    if base.endswith("*"):  # "IDLE*": the node does not respond
        base = base.rstrip("*")
        found.add("NOT_RESPONDING")
    if reason == "(null)":
        reason = ""
    return NodeState(
        name=name, state=base, flags=frozenset(found), reason=reason, gres=fields.get("Gres")
    )


def parse_jobs(text: str) -> list[str]:
    """The job IDs of ``squeue --noheader --format=%i``'s output, one a line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def waves(hosts: Sequence[Item], max_unavailable: int) -> list[list[Item]]:
    """``hosts`` (those with drift, in order) in waves of at most ``max_unavailable``."""
    if max_unavailable < 1:
        raise ValueError(f"max_unavailable must be 1 or more, not {max_unavailable}")
    return [list(hosts[i : i + max_unavailable]) for i in range(0, len(hosts), max_unavailable)]


def reason(why: str) -> str:
    """The roll's drain reason: the prefix, then ``why`` on one line without quotes."""
    words = " ".join(why.replace('"', "'").split())
    return f"{REASON_PREFIX} {words}"[:250]


#: the reason of a node the roll drained to change it
ROLLING = reason("rolling maintenance: drained to be changed, resumed once checked")
