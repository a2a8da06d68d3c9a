"""Text a node reported, made safe to print on a terminal
(docs/decisions/model-trust-boundaries.md).

``visible`` writes every control, format and bidi character (tab and newline too) as Python's
ASCII escape and caps the length; every other character stays. ``VisibleLog`` does the same for
each line pyinfra logs, keeping its line breaks and colours; ``visible_lines`` for a whole
report, keeping its tabs and line breaks.
"""

from __future__ import annotations

import logging
import re

#: the longest text shown (the rest cut, "…" marking the cut): a node's 1 MB line stays a line
LIMIT = 4000

# C0 controls but tab and newline, DEL, C1 controls; the bidi marks, embeddings, overrides and
# isolates (U+061C, U+200E-200F, U+202A-202E, U+2066-2069); the line and paragraph separators
# (U+2028-2029).
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\t\n{_CONTROLS}]")
# in a whole report (its lines and tabs its own): a control but those
_UNSAFE_IN_REPORT = re.compile(f"[{_CONTROLS}]")
# in a log line: a colour (SGR, ``ESC [ ... m``), kept, or a control, written out
_LOGGED = re.compile(f"(\x1b\\[[0-9;]*m)|[{_CONTROLS}]")
# a control that is not a colour's escape: what makes ``_LOGGED`` change a line
_BARE_CONTROL = re.compile(f"(?!\x1b\\[[0-9;]*m)[{_CONTROLS}]")


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return {9: "\\t", 10: "\\n", 13: "\\r"}.get(code) or (
        f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    )


def visible(text: object, limit: int = LIMIT) -> str:
    """``text`` (``str()`` of it) with its control and bidi characters written out as escapes,
    at most ``limit`` characters before them (then "…"); ordinary text unchanged."""
    said = str(text)
    cut = len(said) > limit
    said = _UNSAFE.sub(_escape, said[:limit] if cut else said)
    return said + "…" if cut else said


def visible_lines(text: str) -> str:
    """A whole report (metrics printed on a terminal) with every control and bidi character
    but its tabs and line breaks written out as ``visible`` writes them; not cut."""
    return _UNSAFE_IN_REPORT.sub(_escape, text)


def _escape_logged(found: re.Match[str]) -> str:
    return found.group(1) or _escape(found)


class VisibleLog(logging.Filter):
    """A filter for pyinfra's logger: each record's lines ``visible`` but for their line
    breaks, tabs and colours, each line at most ``LIMIT`` characters."""

    def filter(self, record: logging.LogRecord) -> bool:
        lines = record.getMessage().split("\n")
        text = "\n".join(line[:LIMIT] + "…" if len(line) > LIMIT else line for line in lines)
        if _BARE_CONTROL.search(text):
            text = _LOGGED.sub(_escape_logged, text)
        record.msg, record.args = text, ()
        return True


#: the one instance, added once to pyinfra's logger (``logging.Logger.addFilter`` keeps one)
VISIBLE_LOG = VisibleLog()
