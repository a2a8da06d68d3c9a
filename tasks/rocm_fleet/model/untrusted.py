"""Text a node reported, made safe to print on a terminal: control and bidi characters written
as escapes (docs/decisions/model-trust-boundaries.md)."""

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
    """``str(text)`` with its control and bidi characters (tab and newline too) written out as
    escapes, at most ``limit`` characters before them (then "…")."""
    said = str(text)
    cut = len(said) > limit
    said = _UNSAFE.sub(_escape, said[:limit] if cut else said)
    return said + "…" if cut else said


def visible_lines(text: str) -> str:
    """A whole report with its controls but tabs and line breaks written out; not cut."""
    return _UNSAFE_IN_REPORT.sub(_escape, text)


class VisibleLog(logging.Filter):
    """pyinfra's logger's filter: each line ``visible`` but its tabs and colours, cut at LIMIT."""

    def filter(self, record: logging.LogRecord) -> bool:
        lines = record.getMessage().split("\n")
        text = "\n".join(line[:LIMIT] + "…" if len(line) > LIMIT else line for line in lines)
        if _BARE_CONTROL.search(text):
            text = _LOGGED.sub(lambda found: found.group(1) or _escape(found), text)
        record.msg, record.args = text, ()
        return True


#: the one instance, added once to pyinfra's logger (``logging.Logger.addFilter`` keeps one)
VISIBLE_LOG = VisibleLog()
