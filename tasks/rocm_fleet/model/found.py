"""What one of preflight's rules finds (``Found``), and how messages list names."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Found:
    """Problems (refusing the host), warnings, and in full the lists messages summarise."""

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
    """``names`` for one line: up to LISTED, then "and N more <what>"."""
    if len(names) <= LISTED:
        return ", ".join(names)
    return f"{', '.join(names[:LISTED])} and {len(names) - LISTED} more {what}"
