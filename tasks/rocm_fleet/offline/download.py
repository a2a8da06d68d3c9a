"""Downloads for ``rocm-fleet bundle``: retried, timed out, resumable, verified, with progress.

``requests`` with urllib3's retries for connection errors and 429/5xx answers; a transfer
that breaks off midway is resumed where it stopped (``Range: bytes=N-``), also by the next
run of the command, since the partial file is kept beside its final name (``.part``). A file
is renamed into place only once its SHA-256 is the one its signed index names, so a bundle
never holds an unverified file under its real name. Progress goes to stderr: one updating
line on a terminal, a line per file otherwise (logs stay readable).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from rocm_fleet.version import __version__

# Small enough that a transfer that breaks off loses little (the chunk being read is lost).
CHUNK = 1 << 16


class DownloadError(Exception):
    """A file could not be fetched or did not verify; the message names the URL."""


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def human(size: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


class Progress:
    """What is being fetched, on stderr. On a terminal one line is redrawn (at most ten
    times a second); otherwise each file gets a line when it is done."""

    def __init__(self, stream: IO[str] | None = None):
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self._label = ""
        self._total: int | None = None
        self._done = 0
        self._drawn = 0.0
        self._started = 0.0

    def start(self, label: str, total: int | None, already: int = 0) -> None:
        self._label, self._total, self._done = label, total, already
        self._started = time.monotonic()
        self._draw(force=True)

    def advance(self, count: int) -> None:
        self._done += count
        self._draw()

    def finish(self, note: str = "") -> None:
        elapsed = max(time.monotonic() - self._started, 1e-6)
        line = f"fetched {self._label} ({human(self._done)}, {human(self._done / elapsed)}/s)"
        if self.live:
            self.stream.write("\r\x1b[K")
        self.stream.write(line + (f" {note}" if note else "") + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[K")
        self.stream.write(text + "\n")
        self.stream.flush()

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.live or (not force and now - self._drawn < 0.1):
            return
        self._drawn = now
        total = f"/{human(self._total)}" if self._total else ""
        rate = self._done / max(now - self._started, 1e-6)
        self.stream.write(
            f"\r\x1b[K{self._label}: {human(self._done)}{total} ({human(rate)}/s)"[:200]
        )
        self.stream.flush()


def retrying_session(retries: int, purpose: str) -> requests.Session:
    """A ``requests`` session that retries connection errors and 429/5xx answers ``retries``
    times, with backoff and Retry-After: the bundle's and the matrix check's."""
    retry = Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=0.5,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET", "HEAD"}),
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.headers["User-Agent"] = f"rocm-fleet/{__version__} ({purpose})"
    return session


def reason(exc: Exception) -> str:
    """What went wrong with a request, in one short line."""
    text = str(exc)
    return text.splitlines()[0][:200] if text else type(exc).__name__


@dataclass
class Counts:
    """What a run fetched: files and bytes over the network, files already in place."""

    fetched: int = 0
    fetched_bytes: int = 0
    kept: int = 0


class Fetcher:
    """One HTTP session for a bundle run. ``timeout`` is (connect, read) seconds; a
    ``retries`` budget covers connection errors and 429/5xx answers (with backoff, honouring
    Retry-After) and, separately, transfers that break off midway (each resumed)."""

    def __init__(
        self,
        timeout: tuple[float, float] = (10.0, 60.0),
        retries: int = 5,
        progress: Progress | None = None,
    ):
        self.timeout = timeout
        self.retries = retries
        self.progress = progress or Progress()
        self.counts = Counts()
        # (file, SHA-256) verified in this run: asked again (a wheel read for its metadata,
        # then bundled), it is neither hashed nor counted again.
        self._verified: set[tuple[Path, str]] = set()
        self.session = retrying_session(retries, "bundle")

    def close(self) -> None:
        self.session.close()

    def content(self, url: str) -> bytes:
        """A small file (an index, a key, a page), whole, in memory."""
        try:
            response = self.session.get(url, timeout=self.timeout)
        except requests.RequestException as exc:
            raise DownloadError(f"{url}: {reason(exc)}") from None
        if response.status_code != 200:
            raise DownloadError(f"{url}: HTTP {response.status_code} {response.reason}")
        self.counts.fetched += 1
        self.counts.fetched_bytes += len(response.content)
        return response.content

    def file(self, url: str, dest: Path, sha256: str, size: int | None = None) -> bool:
        """``dest`` holding the file at ``url`` whose SHA-256 must be ``sha256``; True when
        it was fetched, False when a verified copy was already there."""
        sha256 = sha256.lower()
        if (dest, sha256) in self._verified:
            return False
        same_size = dest.is_file() and (size is None or dest.stat().st_size == size)
        if same_size and sha256_file(dest) == sha256:
            self._verified.add((dest, sha256))
            self.counts.kept += 1
            return False
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        # A copy resumed from an earlier run's part that fails its hash is fetched afresh
        # once; a whole transfer that fails it is not fetched again.
        attempts = (False, True) if part.exists() else (False,)
        for fresh in attempts:
            if fresh:
                part.unlink(missing_ok=True)
            self._transfer(url, part, size)
            got = sha256_file(part)
            if got == sha256:
                os.replace(part, dest)
                self._verified.add((dest, sha256))
                self.counts.fetched += 1
                return True
        part.unlink(missing_ok=True)
        raise DownloadError(f"{url}: SHA-256 is {got}, its index says {sha256}; nothing kept")

    def _transfer(self, url: str, part: Path, size: int | None) -> None:
        label = url.rsplit("/", 1)[-1]
        breaks = 0
        self.progress.start(label, size, part.stat().st_size if part.exists() else 0)
        while True:
            have = part.stat().st_size if part.exists() else 0
            if size is not None and have == size:
                break
            headers = {"Range": f"bytes={have}-"} if have else {}
            try:
                with self.session.get(
                    url, headers=headers, stream=True, timeout=self.timeout
                ) as response:
                    if have and response.status_code == 416:
                        part.unlink()  # the partial copy is longer than the file: restart
                        continue
                    if response.status_code not in (200, 206):
                        raise DownloadError(f"{url}: HTTP {response.status_code} {response.reason}")
                    resumed = response.status_code == 206 and _starts_at(response, have)
                    if have and not resumed:
                        self.progress.note(f"{label}: server sent the whole file, restarting")
                        have = 0
                        self.progress.start(label, size)
                    with open(part, "ab" if resumed else "wb") as out:
                        for chunk in response.iter_content(CHUNK):
                            out.write(chunk)
                            self.counts.fetched_bytes += len(chunk)
                            self.progress.advance(len(chunk))
                    break  # a whole answer: its hash decides (a shorter file is another file)
            except (
                requests.exceptions.ConnectionError,
                requests.exceptions.ChunkedEncodingError,
                requests.exceptions.Timeout,
            ) as exc:
                breaks += 1
                if breaks > self.retries:
                    raise DownloadError(
                        f"{url}: gave up after {breaks} broken transfers ({reason(exc)}); "
                        f"{part} is kept, the next run resumes it"
                    ) from None
                got = part.stat().st_size if part.exists() else 0
                self.progress.note(
                    f"{label}: transfer broke off at {human(got)} ({reason(exc)}), resuming"
                )
                time.sleep(min(0.5 * 2 ** (breaks - 1), 10))
        self.progress.finish()


def _starts_at(response: requests.Response, offset: int) -> bool:
    """Whether a 206 answer starts where the partial copy ends (``Content-Range: bytes N-``)."""
    content_range = response.headers.get("Content-Range", "")
    return content_range.startswith(f"bytes {offset}-")
