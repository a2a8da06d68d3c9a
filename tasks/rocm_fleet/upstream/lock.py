"""Hash locks for live wheel installs, cached under the controller's HMAC key."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import os
import re
import secrets
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model.decisions import TORCH_FAMILY
from rocm_fleet.model.matrix import HostRuntime
from rocm_fleet.model.torch_builds import SDIST_ONLY
from rocm_fleet.upstream.http import DownloadError, Fetcher, Unreachable, shorten
from rocm_fleet.upstream.manifest import BUILD_MARK, MALFORMED, NO_BINARY, Locked, lock_lines
from rocm_fleet.upstream.progress import DownloadProgress
from rocm_fleet.upstream.resolution import Target, index_reads, resolve
from rocm_fleet.upstream.wheels import (
    Link,
    ResolutionError,
    project_url,
    untrusted_index,
)

FORMAT = 3  # bumped when a lock's content changes: older cached locks are not read
KEY_BYTES = 32  # RFC 2104: at least the hash's output length
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
#: One pinned line (a build requirement marked), or the names pinned to an sdist.
LINE = re.compile(
    rf"{_NAME}==[^\s=;#]+ --hash=sha256:[0-9a-f]{{64}}(?: {re.escape(BUILD_MARK)})?"
    rf"|{re.escape(NO_BINARY)}{_NAME}(?:,{_NAME})*"
)


class LockError(Exception):
    """A wheel set that can't be locked; one line naming the index and the requirements."""


@dataclass(frozen=True)
class LockRequest:
    """What a lock is made from: the index, PEP 508 requirements, the host's Python and glibc."""

    index_url: str
    requirements: tuple[str, ...]
    python: str
    glibc: str

    @classmethod
    def of(cls, index_url: str, requirements: list[str],
           runtime: HostRuntime | None) -> LockRequest:  # fmt: skip
        """The request for a host's wheel set; LockError when its Python isn't known."""
        if runtime is None:
            raise LockError(f"can't lock the wheels of {index_url}: unknown host Python")
        return cls(index_url, tuple(sorted(set(requirements))), runtime.python, runtime.glibc)

    def inputs(self) -> dict[str, object]:
        return {"format": FORMAT, **asdict(self), "requirements": list(self.requirements)}

    def key(self) -> str:
        """The SHA-256 of the inputs: the cached lock's file name."""
        text = json.dumps(self.inputs(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self, limit: int = 0) -> str:
        """The request in words (at most ``limit`` characters, shortened from the middle)."""
        text = (
            f"{', '.join(self.requirements)} from {self.index_url} for Python {self.python} "
            f"(glibc {self.glibc})"
        )
        return shorten(text, limit) if limit else text


def _xdg(variable: str, fallback: str, name: str) -> Path:
    return Path(os.environ.get(variable) or Path.home() / fallback) / "rocm-fleet" / name


def private_directory(path: Path, what: str) -> Path:
    """``path`` (made 0700) if this user's directory, no link, writable by nobody else; else
    LockError naming the problem and the fix."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    mode = stat.S_IMODE(info.st_mode)
    if not stat.S_ISDIR(info.st_mode):
        problem = "not a directory (a link?)"
    elif info.st_uid != os.geteuid():
        problem = f"owned by uid {info.st_uid}, not by this user (uid {os.geteuid()})"
    elif mode & 0o022:
        problem = f"writable by group or others (mode {mode:04o}): chmod go-w {path}"
    else:
        return path
    raise LockError(f"{what} {path} is {problem}; refused: whoever can write it pins the fleet")


def controller_key(path: Path) -> bytes:
    """The controller's lock key, made (random, 0600) on first use; LockError unless this user's."""
    private_directory(path.parent, "the directory of the lock key")
    if not os.path.lexists(path):  # linked into place whole: concurrent runs read the first
        with contextlib.suppress(FileExistsError):
            write_atomically(path, secrets.token_bytes(KEY_BYTES), mode=0o600, exclusive=True)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise LockError(f"the lock key {path}: can't read it ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        key = handle.read(KEY_BYTES + 1)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != os.geteuid() or mode & 0o077 or len(key) != KEY_BYTES:
        raise LockError(
            f"the lock key {path} is not {KEY_BYTES} bytes of this user's alone (uid "
            f"{info.st_uid}, mode {mode:04o}, {len(key)} bytes); refused: remove it, and the "
            "next run makes a new one (and locks again)"
        )
    return key


def _authentication(key: bytes, inputs: dict[str, object], lines: list[str]) -> str:
    text = json.dumps({"inputs": inputs, "lines": lines}, sort_keys=True, separators=(",", ":"))
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def _sdists(lines: list[str]) -> set[str]:
    return {
        n for line in lines if line.startswith(NO_BINARY) for n in line[len(NO_BINARY) :].split(",")
    }


def read_cached(cache: Path, request: LockRequest, key: bytes) -> tuple[list[str] | None, str]:
    """(lines, "") for a lock of these inputs authenticated by ``key``; else (None, why or "")."""
    path = cache / f"{request.key()}.json"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as handle:
            data = json.load(handle)
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
        or not isinstance(data.get("hmac"), str)
        or not hmac.compare_digest(data["hmac"], _authentication(key, request.inputs(), lines))
    ):
        return None, f"{path}: not authenticated by this controller's lock key (forged?); refused"
    if not _sdists(lines) <= SDIST_ONLY:
        return None, f"{path}: pins an sdist of {', '.join(sorted(_sdists(lines) - SDIST_ONLY))}"
    return lines, ""


def write_cached(cache: Path, request: LockRequest, lines: list[str], key: bytes) -> Path:
    """Write the lock under its key with its HMAC, atomically; its path."""
    path = cache / f"{request.key()}.json"
    inputs = request.inputs()
    body = {"inputs": inputs, "lines": lines, "hmac": _authentication(key, inputs, lines)}
    write_atomically(path, json.dumps(body, indent=1) + "\n", mode=0o600)
    return path


def resolve_lock(request: LockRequest, fetcher: Fetcher, scratch: Path) -> list[str]:
    """The sorted ``name==version --hash=sha256:...`` lines of ``request``; LockError otherwise."""
    target = Target(HostRuntime(request.python, request.glibc))

    def fetched(link: Link) -> Path:
        if not link.sha256:
            raise LockError(f"{link.url}: the index publishes no #sha256 for it")
        path = scratch / link.filename
        fetcher.file(link.url, path, link.sha256)
        return path

    page, metadata, build_requires = index_reads(
        request.index_url, fetcher.content, fetched, _parsing, keep=False
    )
    if unserved := _unserved(request.requirements, page, request.index_url):
        raise LockError(unserved)
    pins = resolve(
        list(request.requirements), page, metadata, target, request.index_url, build_requires
    )
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


@contextlib.contextmanager
def _parsing(url: str, kind: str) -> Iterator[None]:
    """A malformed file of the index as LockError naming it."""
    try:
        yield
    except MALFORMED as exc:
        raise LockError(f"{url}: not a {kind} ({exc})") from None


def _unserved(requirements: tuple[str, ...], page: Callable[[str], list[Link]],
              index_url: str) -> str | None:  # fmt: skip
    """The first exact torch-family pin the live index doesn't list, said so; None if none."""
    for line in requirements:
        requirement = Requirement(line)
        pins = [spec.version for spec in requirement.specifier if spec.operator == "=="]
        if not pins or not re.fullmatch(TORCH_FAMILY, requirement.name):
            continue
        listed = set()
        for link in page(requirement.name):
            with contextlib.suppress(InvalidWheelFilename):
                listed.add(parse_wheel_filename(link.filename)[1])
        if Version(pins[0]) not in listed:
            shown = ", ".join(str(v) for v in sorted(listed)[-6:]) or "nothing"
            return (
                f"{project_url(index_url, requirement.name)} does not serve "
                f"{requirement.name} {pins[0]}, which this release's pins name (rocm-fleet's "
                f"matrix, or torch_version): the index lists {shown}; set torch_version to a "
                "build it serves, or pytorch_install: False"
            )
    return None


class Locks:
    """One run's locks, each made or read once (its failure too), thread-safe."""

    def __init__(self, cache: Path | None = None,
                 fetcher: Callable[[], Fetcher] | None = None,
                 note: Callable[[str], None] | None = None, key: Path | None = None):  # fmt: skip
        self.cache = cache or _xdg("XDG_CACHE_HOME", ".cache", "locks")
        self.key = key or _xdg("XDG_CONFIG_HOME", ".config", "lock-key")
        self._fetcher = fetcher or (
            lambda: Fetcher(retries=2, progress=DownloadProgress(io.StringIO()))
        )
        self._note = note or (lambda text: None)
        self._made: dict[LockRequest, list[str] | LockError] = {}
        self._mutex = threading.Lock()

    def lines(self, request: LockRequest, refresh: bool = False) -> list[str]:
        """The lock for ``request``; LockError (one line) when it can't be made."""
        with self._mutex:
            if refresh or request not in self._made:
                try:
                    self._made[request] = self._lines(request, refresh)
                except LockError as exc:
                    self._made[request] = exc
            made = self._made[request]
            if isinstance(made, LockError):
                raise made
            return list(made)

    def _lines(self, request: LockRequest, refresh: bool) -> list[str]:
        what = request.describe(240)
        if problem := untrusted_index(request.index_url):
            raise LockError(f"can't lock {what}: {problem}")
        private_directory(self.cache, "the lock cache")
        key = controller_key(self.key)
        if not refresh:
            cached, why = read_cached(self.cache, request, key)
            if cached is not None:
                return cached
            if why:
                self._note(f"{why}; locking again from the index")
        fetcher = self._fetcher()
        try:
            with tempfile.TemporaryDirectory(dir=self.cache, prefix=".wheels-") as scratch:
                lines = resolve_lock(request, fetcher, Path(scratch))
        except LockError as exc:
            raise LockError(f"can't lock {what}: {exc}") from None
        except Unreachable as exc:
            raise LockError(
                f"can't lock {what}: {exc.host} is unreachable from this machine "
                f"({exc.cause}); the machine running pyinfra locks the wheels and must reach "
                f"{exc.host}: give it a proxy (HTTPS_PROXY), deploy from a bundle made where "
                f"{exc.host} is reachable (rocm-fleet bundle, rocm_mirror_bundle), or serve "
                f"the wheels from a TLS fleet mirror"
            ) from None
        except (DownloadError, ResolutionError, OSError, ValueError) as exc:
            line = " ".join((str(exc) or type(exc).__name__).split())
            raise LockError(f"can't lock {what}: {shorten(line, 500)}") from None
        finally:
            fetcher.close()
        path = write_cached(self.cache, request, lines, key)
        self._note(f"locked {len(lines)} wheels of {request.describe()} in {path}")
        return lines
