"""What one of preflight's rules finds (``Found``), and how its messages list names.

Every rule (``model.findings``, ``model.conflicts``) returns what it found instead of
appending to lists it is handed; ``findings`` adds them up, in the rules' order.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Found:
    """Problems (each with its fix) that refuse the host, warnings printed before the deploy
    goes ahead, and the long lists a message only summarises ("cuda-cccl-13-0, ... and 57
    more"), in full: shown with pyinfra -v and in `rocm-fleet audit --json`."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    details: dict[str, list[str]] = field(default_factory=dict)

    def __add__(self, other: Found) -> Found:
        return Found(
            self.problems + other.problems,
            self.warnings + other.warnings,
            {**self.details, **other.details},
        )


# How many names a one-line message lists before "and N more".
LISTED = 5


def listed(names: list[str], what: str) -> str:
    """``names`` for a one-line message: all of them up to LISTED, else the first LISTED and
    how many more ("a, b, c, d, e and 57 more <what>")."""
    if len(names) <= LISTED:
        return ", ".join(names)
    return f"{', '.join(names[:LISTED])} and {len(names) - LISTED} more {what}"
