"""Hash locks for live wheel installs: what a host's pip may install, pinned by the controller.

A host that installs wheels live (straight from download.pytorch.org or AMD's index, through
a proxy, through a live fleet mirror) would otherwise trust the ``#sha256`` of the page it
reads, which whoever can change the wheel on its way can change too. Instead the controller
resolves the host's wheel set itself, against the upstream index it reaches over TLS, with
the bundle's resolver (``offline.wheels``: pip's resolvelib, the host's Python tags and
markers) and the bundle's limited downloads (``offline.download``), and the host's pip
installs exactly those files with ``--require-hashes``: a wheel swapped on the way to the
host is refused by the host's own pip, naming the wheel and both hashes.

A lock is made once per (index URL, requirements, Python, glibc) for the whole fleet, not per
host, and cached on the controller (``$XDG_CACHE_HOME/rocm-fleet/locks``, one JSON file per
key): the index's files are immutable (a file name pins one build; a changed file would have
another hash, and the host's pip would refuse it, not install it), so a lock stays right for
as long as its pins stay published. A cached file is used only when it records the very
inputs its name is the hash of, and lines that hash to what it records; anything else (a
truncated write, a hand edit, a file copied under another key) is made again from upstream.
To take a newer build that a requirement such as ``==7.14.*`` allows, or after upstream
withdrew a pinned file, remove the cached file (or the directory): the next run locks again.
A controller that can't reach the index can be given the directory of one that can (the
files are self-checking and keyed by their inputs, whatever machine made them).

The resolution reads each project page and each candidate's core metadata: the index's
``.metadata`` file when it publishes one with its hash (PEP 658/714; download.pytorch.org
does since pytorch/test-infra#6116), else the wheel itself, fetched within the bundle's
limits into a scratch directory and removed. A version published only as an sdist (AMD's
``rocm``) is pinned by its hash with the wheels that build it (``offline.wheels``): the host
installs those first and builds the sdist with them (``operations.python.pinned_wheels``).
The hashes pinned are those the index publishes, read over the controller's own channel to
it (TLS for the default indexes).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rocm_fleet.model.matrix import HostRuntime
from rocm_fleet.offline.download import (
    DownloadError,
    Fetcher,
    Progress,
    Unreachable,
    shorten,
)
from rocm_fleet.offline.wheels import (
    BUILD_MARK,
    NO_BINARY,
    Link,
    Locked,
    ResolutionError,
    Target,
    dist_metadata,
    is_sdist,
    lock_lines,
    parse_page,
    project_url,
    resolve,
    sdist_build_requires,
)

#: Bumped when what a lock holds or how it is made changes: older cached locks are not read.
#: 2: an sdist may be pinned, with its build requirements (``wheels.lock_lines``).
FORMAT = 2
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
#: One pinned file, as pip's --require-hashes wants it (a build requirement marked), or the
#: names pinned to an sdist (``wheels.lock_lines``).
LINE = re.compile(
    rf"{_NAME}==[^\s=;#]+ --hash=sha256:[0-9a-f]{{64}}(?: {re.escape(BUILD_MARK)})?"
    rf"|{re.escape(NO_BINARY)}{_NAME}(?:,{_NAME})*"
)


class LockError(Exception):
    """A wheel set that can't be locked: the index unreachable, a requirement it can't
    meet, a file without a published hash. One line naming the index and the requirements."""


@dataclass(frozen=True)
class LockRequest:
    """What a lock is made from: the index, the requirement strings (exact pins, or
    anything PEP 508 allows, extras included), and the host's Python."""

    index_url: str
    requirements: tuple[str, ...]
    python: str
    glibc: str

    @classmethod
    def of(cls, index_url: str, requirements: list[str], runtime: HostRuntime) -> LockRequest:
        return cls(index_url, tuple(sorted(set(requirements))), runtime.python, runtime.glibc)

    def inputs(self) -> dict[str, object]:
        return {
            "format": FORMAT,
            "index_url": self.index_url,
            "requirements": list(self.requirements),
            "python": self.python,
            "glibc": self.glibc,
        }

    def key(self) -> str:
        """The SHA-256 of the inputs: the cached lock's file name."""
        text = json.dumps(self.inputs(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        return (
            f"{', '.join(self.requirements)} from {self.index_url} for Python {self.python} "
            f"(glibc {self.glibc})"
        )


def default_cache() -> Path:
    """``$XDG_CACHE_HOME/rocm-fleet/locks`` (``~/.cache`` without it), the XDG base
    directory specification's place for a user's non-essential cached data."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rocm-fleet" / "locks"


def _lines_digest(lines: list[str]) -> str:
    return hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()


def read_cached(cache: Path, request: LockRequest) -> tuple[list[str] | None, str]:
    """The cached lock for ``request`` and "" when it is whole and was stored for these
    very inputs; (None, why) otherwise ("" when there is none)."""
    path = cache / f"{request.key()}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as exc:
        return None, f"{path}: unreadable ({type(exc).__name__})"
    if not isinstance(data, dict) or data.get("inputs") != request.inputs():
        return None, f"{path}: not the lock of {request.describe()}"
    lines = data.get("lines")
    if (
        not isinstance(lines, list)
        or not lines
        or not all(isinstance(line, str) and LINE.fullmatch(line) for line in lines)
        or data.get("sha256") != _lines_digest(lines)
    ):
        return None, f"{path}: its lines don't match its recorded SHA-256"
    return lines, ""


def write_cached(cache: Path, request: LockRequest, lines: list[str]) -> Path:
    """Store a lock under its key, atomically (a crash leaves the old file or none)."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{request.key()}.json"
    body = {"inputs": request.inputs(), "lines": lines, "sha256": _lines_digest(lines)}
    fd, temporary = tempfile.mkstemp(dir=cache, prefix=".lock-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out, indent=1)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def resolve_lock(request: LockRequest, fetcher: Fetcher, scratch: Path) -> list[str]:
    """The requirement lines pinning every wheel ``request`` installs, made from the index:
    ``name==version --hash=sha256:...``, sorted by name. LockError names what failed."""
    runtime = HostRuntime(request.python, request.glibc)
    target = Target(runtime)
    index_url = request.index_url

    @functools.cache
    def page(name: str) -> list[Link]:
        url = project_url(index_url, name)
        try:
            data = fetcher.content(url)
        except DownloadError as exc:
            if "HTTP 404" in str(exc):
                return []  # no such project on this index: the resolution says which
            raise
        try:
            return parse_page(data.decode("utf-8"), url)
        except (ValueError, KeyError, TypeError) as exc:
            raise LockError(f"{url}: not a PEP 503 page ({exc})") from None

    def fetched(link: Link) -> Path:
        if not link.sha256:
            raise LockError(f"{link.url}: the index publishes no #sha256 for it")
        path = scratch / link.filename
        fetcher.file(link.url, path, link.sha256)
        return path

    @functools.cache
    def metadata(link: Link) -> str:
        if link.metadata_sha256:
            data = fetcher.content(link.url + ".metadata")
            if hashlib.sha256(data).hexdigest() == link.metadata_sha256:
                return data.decode("utf-8", "replace")
        path = fetched(link)
        try:
            return dist_metadata(str(path))
        finally:
            if not is_sdist(link.filename):  # an sdist's build requirements are read next
                path.unlink(missing_ok=True)

    @functools.cache
    def build_requires(link: Link) -> list[str]:
        path = scratch / link.filename
        return sdist_build_requires(str(path if path.exists() else fetched(link)))

    pins = resolve(list(request.requirements), page, metadata, target, index_url, build_requires)
    for name, pin in pins.items():
        if not pin.candidate.link.sha256:
            raise LockError(f"{pin.candidate.link.url}: the index publishes no #sha256 for {name}")
    return lock_lines(
        [
            Locked(name, str(pin.candidate.version), pin.candidate.link.sha256 or "",
                   pin.sdist, pin.build, pin.runtime)
            for name, pin in pins.items()
        ]
    )  # fmt: skip


class Locks:
    """The controller's locks for one run: each request made (or read from the cache) once,
    whatever the number of hosts asking, its failure too; safe to share between threads.

    ``fetcher``: makes the Fetcher a lock is resolved with (the bundle's limits); ``note``:
    where a line saying a lock was made or a cached one was refused goes."""

    def __init__(
        self,
        cache: Path | None = None,
        fetcher: Callable[[], Fetcher] | None = None,
        note: Callable[[str], None] | None = None,
    ):
        self.cache = cache or default_cache()
        # Quiet: a lock is a few pages (and, without PEP 658 metadata, wheels); one note says
        # it was made.
        self._fetcher = fetcher or (lambda: Fetcher(retries=2, progress=Progress(io.StringIO())))
        self._note = note or (lambda text: None)
        self._made: dict[LockRequest, list[str] | LockError] = {}
        self._mutex = threading.Lock()

    def lines(self, request: LockRequest, refresh: bool = False) -> list[str]:
        """The lock for ``request``; LockError (one line) when it can't be made."""
        with self._mutex:
            if not refresh and request in self._made:
                made = self._made[request]
                if isinstance(made, LockError):
                    raise made
                return list(made)
            try:
                lines = self._lines(request, refresh)
            except LockError as exc:
                self._made[request] = exc
                raise
            self._made[request] = lines
            return list(lines)

    def _lines(self, request: LockRequest, refresh: bool) -> list[str]:
        if not refresh:
            cached, why = read_cached(self.cache, request)
            if cached is not None:
                return cached
            if why:
                self._note(f"{why}; locking again from the index")
        fetcher = self._fetcher()
        try:
            self.cache.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=self.cache, prefix=".wheels-") as scratch:
                lines = resolve_lock(request, fetcher, Path(scratch))
        except LockError as exc:
            raise LockError(f"can't lock {_what(request)}: {exc}") from None
        except Unreachable as exc:
            raise LockError(self.unreachable(request, exc)) from None
        except (DownloadError, ResolutionError, OSError, ValueError) as exc:
            raise LockError(f"can't lock {_what(request)}: {_one_line(exc)}") from None
        finally:
            fetcher.close()
        path = write_cached(self.cache, request, lines)
        self._note(f"locked {len(lines)} wheels of {request.describe()} in {path}")
        return lines

    def unreachable(self, request: LockRequest, exc: Unreachable) -> str:
        """One line: the index's server is unreachable, the machine running pyinfra is the
        one that must reach it (it locks the wheels the hosts install), and the ways out."""
        return (
            f"can't lock {_what(request)}: {exc.host} is unreachable from this machine "
            f"({exc.cause}); the machine running pyinfra locks the wheels and must reach "
            f"{exc.host}: give it a proxy (HTTPS_PROXY), deploy from a bundle made where "
            f"{exc.host} is reachable (rocm-fleet bundle, rocm_mirror_bundle), or copy "
            f"{self.cache} from a machine that reaches it"
        )


def _what(request: LockRequest) -> str:
    """The request in a message, its middle given up when long (dozens of requirements)."""
    return shorten(request.describe(), 240)


def _one_line(exc: Exception) -> str:
    """The error in one line, shortened from the middle: its end says why."""
    return shorten(" ".join((str(exc) or type(exc).__name__).split()), 500)
