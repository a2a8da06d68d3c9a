"""Lines of Python frames looked up once per code object and instruction (each ``f_lineno``
reads the code's line table from its start): for the operation order and log records'
callers (``engine.speedups``)."""

import io
import logging
import sys
import traceback
from types import CodeType
from typing import Any

#: (id of a code object, instruction offset) -> (the code object, its line); the line table is
#: read from its start for each ``f_lineno``
_LINES: dict[tuple[int, int], tuple[CodeType, int]] = {}


def line_of(frame: Any) -> int:
    """``frame.f_lineno``, looked up once per code object and instruction."""
    code, key = frame.f_code, (id(frame.f_code), frame.f_lasti)
    found = _LINES.get(key)
    if found is None or found[0] is not code:
        if len(_LINES) > 4096:
            _LINES.clear()
        found = _LINES[key] = (code, frame.f_lineno)
    return found[1]


def find_caller(log: logging.Logger, stack_info: bool = False, stacklevel: int = 1) -> Any:
    """``Logger.findCaller`` (what each log record's file, line and function come from): the
    same frame and stack, its line looked up once per code object and instruction (``line_of``),
    not read from the line table's start for each record (pyinfra's log line of each operation
    on each host; ~1% of a converged run)."""
    frame = sys._getframe(0)
    while stacklevel > 0 and (caller := frame.f_back) is not None:
        frame = caller
        if not _internal_frame(frame):
            stacklevel -= 1
    sinfo = None
    if stack_info:
        with io.StringIO() as out:
            out.write("Stack (most recent call last):\n")
            traceback.print_stack(frame, file=out)
            sinfo = out.getvalue().removesuffix("\n")
    return frame.f_code.co_filename, line_of(frame), frame.f_code.co_name, sinfo


def _internal_frame(frame: Any) -> bool:
    return logging._is_internal_frame(frame)  # type: ignore[attr-defined]
