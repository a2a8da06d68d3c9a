"""Tables on screen for audit, check and matrix, drawn by rich."""

from __future__ import annotations

import io
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

#: the width of output that goes to no terminal (a file, a pipe, a mail from cron)
FALLBACK_WIDTH = 100
COLOR_CHOICES = ("auto", "always", "never")


@dataclass(frozen=True)
class Screen:
    """How a table is drawn: ``width`` columns, coloured or not."""

    width: int = FALLBACK_WIDTH
    colour: bool = False


def screen_for(stream: IO[str], color: str = "auto") -> Screen:
    """The screen ``stream`` is: width (``COLUMNS`` wins), colour as ``--color`` says."""
    width = shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns
    if not is_terminal(stream) and "COLUMNS" not in os.environ:
        width = FALLBACK_WIDTH
    if color in ("always", "never"):
        return Screen(width, color == "always")
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return Screen(width, False)
    return Screen(width, bool(os.environ.get("FORCE_COLOR")) or is_terminal(stream))


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal (False for one that can't tell)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def console(screen: Screen) -> Console:
    """A console writing into a string, exactly ``screen``'s width and colour."""
    from rich.console import Console

    return Console(file=io.StringIO(), width=screen.width, force_terminal=screen.colour,
                   no_color=not screen.colour, color_system="standard" if screen.colour else None,
                   highlight=False, emoji=False, markup=False)  # fmt: skip


def text_of(written: Console) -> str:
    """What ``written`` wrote, without the padding rich leaves at the ends of lines."""
    text = written.file.getvalue()  # type: ignore[attr-defined]
    return "\n".join(_PADDING.sub(r"\1", line) for line in text.splitlines())


# the spaces that end a line, the colour escapes after them kept
_PADDING = re.compile(r"\s+((?:\x1b\[[0-9;]*m)*)$")


def grid(headers: Sequence[str], gap: int = 2) -> Table:
    """A borderless table, ``gap`` spaces between columns, cells clipped with "…" when short."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False, show_header=any(headers),
                  header_style="", padding=(0, gap, 0, 0))  # fmt: skip
    for header in headers:
        table.add_column(header, no_wrap=True, overflow="ellipsis")
    return table


def measure(table: Table) -> int:
    """The width ``table`` takes when nothing is clipped or wrapped."""
    wide = console(Screen(width=1_000_000))
    return max(1, wide.measure(table).maximum)


def whole(table: Table) -> str:
    """``table`` as wide as it takes (nothing clipped), without colour."""
    written = console(Screen(width=measure(table)))
    written.print(table)
    return text_of(written)


def folded(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """``rows`` in ``width`` columns: side by side as fit, the rest in more tables below, each
    led by the first column; the last column wraps."""
    from rich.cells import cell_len

    gap = 2
    widths = [max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    last = len(headers) - 1
    panels: list[list[int]] = []
    current = [0]

    def used() -> int:
        return sum(widths[i] for i in current) + gap * (len(current) - 1)

    for i in range(1, last):
        if len(current) > 1 and used() + gap + widths[i] > width:
            panels.append(current)
            current = [0]
        current.append(i)
    if len(current) > 1 and width - used() - gap < min(24, widths[last]):  # room to wrap in
        panels.append(current)
        current = [0]
    panels.append([*current, last])
    written = console(Screen(width))
    for n, panel in enumerate(panels):
        table = grid([headers[i] for i in panel], gap)
        table.columns[-1].no_wrap, table.columns[-1].overflow = False, "fold"
        for row in rows:
            table.add_row(*(row[i] for i in panel))
        if n:
            written.print()
        written.print(table)
    return text_of(written)
