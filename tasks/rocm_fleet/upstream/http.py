"""The one HTTP client and verified, limited, resumable downloads (``Fetcher``)."""

import hashlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.util.retry import Retry

from rocm_fleet.model.paths import SYSTEM_CA_BUNDLE
from rocm_fleet.upstream.progress import DownloadProgress, human
from rocm_fleet.version import __version__

CHUNK = 1 << 16
CONTENT_CAP = 64 << 20  # most bytes read into memory (a Release, a Packages index, a page)
FILE_CAP = 32 << 30  # most bytes of a file with no size in a signed index (a wheel)
DEADLINE = 3600.0  # seconds one transfer may take, resumptions included
MAX_REDIRECTS = 10


class DownloadError(Exception):
    """A file could not be fetched or did not verify; the message names the URL."""


class TooLong(DownloadError):
    """The server sent more than the limit (``read_limited``)."""


class Unreachable(DownloadError):
    """``url``'s server (``host``) can't be reached: ``cause``; ``message`` replaces the wording."""

    def __init__(self, url: str, host: str, cause: str, message: str | None = None) -> None:
        super().__init__(message or f"{url}: {host} is unreachable from this machine ({cause})")
        self.url, self.host, self.cause = url, host, cause


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


class NoDowngradeSession(requests.Session):
    """The client's session: no https-to-http redirect, TLS against ``ca`` alone when pinned."""

    def __init__(self, ca: str | None = None, timeout: float | tuple[float, float] = 30.0):
        super().__init__()
        self.ca, self.timeout = ca, timeout

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", self.timeout)
        return super().request(method, url, *args, **kwargs)

    def merge_environment_settings(self, url: Any, *settings: Any) -> dict[str, Any]:
        merged = super().merge_environment_settings(url, *settings)
        if self.ca:
            merged["verify"] = self.ca
        return merged

    def get_redirect_target(self, resp: requests.Response) -> str | None:
        if not self.max_redirects:
            return None  # none followed: the redirect is the answer
        target = super().get_redirect_target(resp)
        if target and resp.url.lower().startswith("https://"):
            following = requests.compat.urljoin(resp.url, target)
            if not following.lower().startswith("https://"):
                raise DownloadError(
                    f"{resp.url}: redirects to {following.split('?', 1)[0]}, from https to "
                    "http; refused"
                )
        return target


def client(purpose: str, retries: int = 0, *, ca: str | None = None,
           system_cas: bool = False, redirects: int = MAX_REDIRECTS,
           proxies_from_environment: bool = True,
           timeout: float | tuple[float, float] = 30.0) -> NoDowngradeSession:  # fmt: skip
    """The one HTTP client: ``retries`` on connection errors and 429/5xx; at most ``redirects``
    redirects, never https to http (0: the redirect is the answer); TLS against ``ca``, else
    (``system_cas``) the system's CAs, else requests'; proxies from the environment unless
    ``proxies_from_environment`` is False; a User-Agent naming ``purpose``."""
    if ca is None and system_cas and os.path.isfile(SYSTEM_CA_BUNDLE):
        ca = SYSTEM_CA_BUNDLE
    retry = Retry(total=retries, connect=retries, read=retries, status=retries,
                  backoff_factor=0.5, status_forcelist=(429, 500, 502, 503, 504),
                  allowed_methods=frozenset({"GET", "HEAD"}), respect_retry_after_header=True,
                  raise_on_status=False)  # fmt: skip
    session = NoDowngradeSession(ca, timeout)
    session.max_redirects = redirects
    session.trust_env = proxies_from_environment
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    session.headers["User-Agent"] = f"rocm-fleet/{__version__} ({purpose})"
    return session


def read_limited(url: str, response: requests.Response, room: int,
                 have: int = 0) -> Iterator[bytes]:  # fmt: skip
    """The body's chunks; TooLong once more than ``room`` bytes come or are announced."""
    announced = response.headers.get("Content-Length", "")
    encoded = response.headers.get("Content-Encoding", "identity") != "identity"
    if announced.isdigit() and not encoded and have + int(announced) > room:
        raise TooLong(url)
    taken = have
    while True:
        chunk = response.raw.read1(min(CHUNK, room - taken + 1), decode_content=True)
        if not chunk:
            return
        taken += len(chunk)
        if taken > room:
            raise TooLong(url)
        yield chunk


# urllib3's wrapping around a failed connection's cause (1.x names the object, 2.x host:port).
_OBJECT = re.compile(r"<[\w.]+ object at 0x[0-9a-f]+>: |\w+Connection\(host=[^)]*\): ")
_CAUSED_BY = re.compile(r"\(Caused by \w+\((.*)\)\)$", re.S)


def reason(exc: BaseException, limit: int = 300) -> str:
    """The innermost cause of a failed request, in at most ``limit`` characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if caused := _CAUSED_BY.search(text):
        text = caused.group(1).strip("'\"")
    return shorten(_OBJECT.sub("", text), limit)


def shorten(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, its middle replaced by "…"."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 5
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def unreachable(url: str, exc: BaseException) -> Unreachable | None:
    """``exc`` as Unreachable when the server was not reached at all, else None."""
    errors = requests.exceptions
    if isinstance(exc, errors.SSLError) or not isinstance(exc, errors.ConnectionError):
        return None
    return Unreachable(url, urlsplit(url).netloc or url, reason(exc, 200))


@dataclass
class Counts:
    """What a run fetched: files and bytes over the network, files already in place."""

    fetched: int = 0
    fetched_bytes: int = 0
    kept: int = 0


class Fetcher:
    """One HTTP session for a bundle run: retries, a deadline per transfer, byte caps."""

    def __init__(self, timeout: tuple[float, float] = (10.0, 60.0), retries: int = 5,
                 progress: DownloadProgress | None = None, deadline: float = DEADLINE,
                 file_cap: int = FILE_CAP, content_cap: int = CONTENT_CAP):  # fmt: skip
        self.retries, self.deadline = retries, deadline
        self.file_cap, self.content_cap = file_cap, content_cap
        self.progress = progress or DownloadProgress()
        self.counts = Counts()
        self._verified: set[tuple[Path, str]] = set()  # (file, SHA-256): not hashed again
        self.session = client("bundle", retries, timeout=timeout)

    def close(self) -> None:
        self.session.close()

    def content(self, url: str, size: int | None = None) -> bytes:
        """A small file, in memory: at most ``size`` bytes when known, else ``content_cap``."""
        limit = self._limit(size, self.content_cap, "an index or page")
        ends = time.monotonic() + self.deadline
        body = bytearray()
        try:
            with self.session.get(url, stream=True) as response:
                if response.status_code != 200:
                    raise DownloadError(f"{url}: HTTP {response.status_code} {response.reason}")
                for chunk in self._chunks(url, response, ends, *limit):
                    body += chunk
        except (requests.RequestException, Urllib3Error) as exc:
            raise unreachable(url, exc) or DownloadError(f"{url}: {reason(exc)}") from None
        self.counts.fetched += 1
        self.counts.fetched_bytes += len(body)
        return bytes(body)

    @staticmethod
    def _limit(size: int | None, cap: int, what: str) -> tuple[int, str]:
        """The most bytes to take, and what says so."""
        return (size, "its index says") if size is not None else (cap, f"the cap for {what} is")

    def _chunks(self, url: str, response: requests.Response, ends: float, room: int,
                limited_by: str, have: int = 0) -> Iterator[bytes]:  # fmt: skip
        """``read_limited``'s chunks; DownloadError past ``ends`` (monotonic) or ``room``."""
        try:
            for chunk in read_limited(url, response, room, have):
                if time.monotonic() > ends:
                    raise DownloadError(
                        f"{url}: not done within {self.deadline:.0f} s, the deadline of one "
                        "transfer; cut off"
                    )
                yield chunk
        except TooLong:
            raise DownloadError(
                f"{url}: the server sends more than the {room} bytes {limited_by}; cut off, "
                "nothing kept"
            ) from None

    def file(self, url: str, dest: Path, sha256: str, size: int | None = None) -> bool:
        """Put the file at ``url`` with ``sha256`` at ``dest``: True when fetched, False when a
        verified copy was there; DownloadError otherwise."""
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
        attempts = (False, True) if part.exists() else (False,)  # a bad resumed part: afresh
        ends = time.monotonic() + self.deadline
        for fresh in attempts:
            if fresh:
                part.unlink(missing_ok=True)
            self._transfer(url, part, size, ends)
            got = sha256_file(part)
            if got == sha256:
                os.replace(part, dest)
                self._verified.add((dest, sha256))
                self.counts.fetched += 1
                return True
        part.unlink(missing_ok=True)
        raise DownloadError(f"{url}: SHA-256 is {got}, its index says {sha256}; nothing kept")

    def _transfer(self, url: str, part: Path, size: int | None, ends: float) -> None:
        label = url.rsplit("/", 1)[-1]
        limit = self._limit(size, self.file_cap, "a file without a size")
        breaks = 0
        self.progress.start(label, size, part.stat().st_size if part.exists() else 0)
        while True:
            have = part.stat().st_size if part.exists() else 0
            if size is not None and have == size:
                break
            headers = {"Range": f"bytes={have}-"} if have else {}
            try:
                with self.session.get(url, headers=headers, stream=True) as response:
                    if have and response.status_code == 416:  # the part is longer: restart
                        part.unlink()
                        continue
                    if response.status_code not in (200, 206):
                        raise DownloadError(f"{url}: HTTP {response.status_code} {response.reason}")
                    starts = response.headers.get("Content-Range", "").startswith(f"bytes {have}-")
                    resumed = response.status_code == 206 and starts
                    if have and not resumed:
                        self.progress.note(f"{label}: server sent the whole file, restarting")
                        have = 0
                        self.progress.start(label, size)
                    try:
                        with open(part, "ab" if resumed else "wb") as out:
                            for chunk in self._chunks(url, response, ends, *limit, have):
                                out.write(chunk)
                                self.counts.fetched_bytes += len(chunk)
                                self.progress.advance(len(chunk))
                    except DownloadError:
                        part.unlink(missing_ok=True)  # too long or too slow: nothing kept
                        raise
                    break  # a whole answer: its hash decides (a shorter file is another file)
            except (requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError,
                    requests.exceptions.Timeout, Urllib3Error) as exc:  # fmt: skip
                breaks += 1
                if breaks > self.retries:  # Unreachable when not one byte came
                    raise (not have and unreachable(url, exc)) or DownloadError(
                        f"{url}: gave up after {breaks} broken transfers ({reason(exc)}); "
                        f"{part} is kept, the next run resumes it"
                    ) from None
                got = part.stat().st_size if part.exists() else 0
                self.progress.note(
                    f"{label}: transfer broke off at {human(got)} ({reason(exc)}), resuming"
                )
                if time.monotonic() > ends:
                    raise DownloadError(
                        f"{url}: not done within {self.deadline:.0f} s, the deadline of one "
                        f"transfer; {part} is kept, the next run resumes it"
                    ) from None
                time.sleep(min(0.5 * 2 ** (breaks - 1), 10))
        self.progress.finish()
