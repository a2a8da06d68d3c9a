"""The roll as data: its waves and its drain reasons (each starting ``rocm-fleet:``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from rocm_fleet.model.slurm import REASON_PREFIX

Item = TypeVar("Item")


def parse_jobs(text: str) -> list[str]:
    """The job IDs of ``squeue --noheader --format=%i``'s output, one a line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def waves(hosts: Sequence[Item], max_unavailable: int) -> list[list[Item]]:
    """``hosts`` (those with drift, in order) in waves of at most ``max_unavailable``."""
    if max_unavailable < 1:
        raise ValueError(f"max_unavailable must be 1 or more, not {max_unavailable}")
    return [list(hosts[i : i + max_unavailable]) for i in range(0, len(hosts), max_unavailable)]


def reason(why: str) -> str:
    """A drain reason: the prefix, then ``why`` on one line, no double quote (Slurm keeps it as
    given)."""
    words = " ".join(why.replace('"', "'").split())
    return f"{REASON_PREFIX} {words}"[:250]


#: the reason of a node the roll drained to change it
ROLLING = reason("rolling maintenance: drained to be changed, resumed once checked")
