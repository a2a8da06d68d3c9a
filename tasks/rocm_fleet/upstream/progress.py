"""Progress of a transfer or a run of checks on stderr; ``human`` sizes."""

import atexit
import sys
import time
from typing import IO, Any


def human(size: float) -> str:
    for unit in ("B", "kB", "MB"):
        if size < 1000:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


class DownloadProgress:
    """Progress on stderr: rich's transient line per file on a terminal, else a line when done."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self._bar: Any = None  # rich's Progress while a file is drawn on a terminal
        self._label = ""
        self._done = 0
        self._drawn = 0.0
        self._started = 0.0

    def start(self, label: str, total: int | None, already: int = 0) -> None:
        self._label, self._done = label, already
        self._started = time.monotonic()
        if self.live:
            self.close()
            self._bar = _progress_line(self.stream)
            if self._bar is not None:
                self._bar.add_task(label, total=total, completed=already)
                self._bar.start()
                atexit.register(self.close)  # the cursor comes back, even after an error

    def advance(self, count: int) -> None:
        self._done += count
        now = time.monotonic()
        if self._bar is not None and now - self._drawn >= 0.1:
            self._drawn = now
            self._bar.update(self._bar.task_ids[0], completed=self._done, refresh=True)

    def finish(self, note: str = "") -> None:
        elapsed = max(time.monotonic() - self._started, 1e-6)
        line = f"fetched {self._label} ({human(self._done)}, {human(self._done / elapsed)}/s)"
        self.close()
        self.note(line + (f" {note}" if note else ""))

    def note(self, text: str) -> None:
        if self._bar is not None:
            self._bar.console.print(text, markup=False, highlight=False, emoji=False)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Take the progress line away (nothing when none is drawn)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            atexit.unregister(self.close)


def _progress_line(stream: IO[str]) -> Any:
    """rich's progress display of one transfer on ``stream``; None without rich."""
    try:
        from rich import progress as rich
        from rich.console import Console
        from rich.table import Column
    except ModuleNotFoundError:
        return None

    console = Console(file=stream, highlight=False, markup=False, emoji=False)
    name = rich.TextColumn("{task.description}:", markup=False,
                           table_column=Column(no_wrap=True, overflow="ellipsis"))  # fmt: skip
    return rich.Progress(name, rich.DownloadColumn(), rich.BarColumn(), rich.TransferSpeedColumn(),
                         console=console, auto_refresh=False, transient=True,
                         redirect_stdout=False, redirect_stderr=False)  # fmt: skip
