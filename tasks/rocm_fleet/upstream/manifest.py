"""A bundle's manifest, read: path confinement, what a host lacks, its hash-pinned requirements."""

import binascii
import contextlib
import functools
import gzip
import json
import lzma
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocm_fleet.model import paths, sources
from rocm_fleet.upstream import aptrepo
from rocm_fleet.upstream.aptrepo import RepositoryError
from rocm_fleet.upstream.wheels import ResolutionError, is_sdist

MANIFEST = paths.BUNDLE_MANIFEST
FORMAT = 1


# ``name==version --hash=sha256:...`` per file; an sdist's build requirement also has a line
# ending in BUILD_MARK (a comment to pip); NO_BINARY names the distributions pinned to an sdist.
BUILD_MARK = "# build requirement"
NO_BINARY = "--no-binary="


@dataclass(frozen=True)
class Locked:
    """One pinned file, as a lock or a bundle records it."""

    name: str
    version: str
    sha256: str
    sdist: bool = False
    build: bool = False  # the build of an sdist of the set needs it
    runtime: bool = True  # the set needs it installed


def lock_lines(pins: list[Locked]) -> list[str]:
    """The lines for ``pins`` by name: the set's, the build requirements', the NO_BINARY line."""
    ordered = sorted(pins, key=lambda p: p.name)
    line = "{0.name}=={0.version} --hash=sha256:{0.sha256}".format
    lines = [line(p) for p in ordered if p.runtime]
    lines += [f"{line(p)} {BUILD_MARK}" for p in ordered if p.build]
    sdists = [p.name for p in ordered if p.sdist]
    if sdists:
        lines.append(NO_BINARY + ",".join(sdists))
    return lines


class BundleError(Exception):
    """What stops a bundle (one line): missing, unverified, unreachable or unsafe."""


class BundleUnreachable(BundleError):
    """Upstream (or the proxy) did not answer: could not check, rather than found wrong."""


# What a parser of fetched data raises on malformed input.
MALFORMED = (ValueError, KeyError, IndexError, OverflowError, EOFError, TypeError, binascii.Error,
             gzip.BadGzipFile, zlib.error, lzma.LZMAError, zipfile.BadZipFile)  # fmt: skip


@contextlib.contextmanager
def parsing(what: str, kind: str):
    """Turn a parser's exception into a BundleError naming ``what`` and the ``kind`` expected."""
    try:
        yield
    except (BundleError, RepositoryError, ResolutionError):
        raise
    except MALFORMED as exc:
        detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise BundleError(f"{what}: not a readable {kind} ({detail})") from None


def bundle_path(url: str) -> str:
    """``mirror_path(url)``, or BundleError naming the URL when it would leave the bundle."""
    try:
        return sources.mirror_path(url)
    except sources.UnsafePath as exc:
        raise BundleError(f"refusing {exc}; nothing of it written") from None


def confined(out: Path, path: str, what: str = "") -> Path:
    """``out / path`` once proven inside ``out`` (normalised, links resolved); BundleError
    naming ``what`` and the path otherwise."""
    root = out.resolve()
    target = Path(os.path.normpath(root / path)) if isinstance(path, str) and path else root
    inside = (
        isinstance(path, str)
        and bool(path)
        and not path.startswith("/")
        and "\x00" not in path
        and target != root
        and target.is_relative_to(root)
        and target.resolve().is_relative_to(root)
    )
    if not inside:
        raise BundleError(
            f"{what or 'bundle entry'}: {path!r} is outside the bundle {out}; refusing it"
        )
    return target


def repository_key(repository: sources.AptRepository) -> str:
    return f"{repository.url} {repository.suite} {repository.component} {repository.architecture}"


def check_record(out: Path, previous: dict[str, Any]) -> None:
    """BundleError unless every file the manifest lists is inside ``out`` with size and SHA-256."""
    where = out / MANIFEST
    entries = previous.get("files")
    if not isinstance(entries, dict):
        raise BundleError(f"{where}: no 'files' table; not a manifest rocm-fleet wrote")
    for path, entry in entries.items():
        confined(out, path, f"{where} lists a file that")
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("size"), int)
            and isinstance(entry.get("sha256"), str)
        ):
            raise BundleError(f"{where}: entry {path!r} has no size and SHA-256")


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """A bundle's manifest, or None; BundleError when it is not a JSON object."""
    path = directory / MANIFEST
    if not path.is_file():
        return None
    return _cached_json(str(path), path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _cached_json(path: str, _mtime: int) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_bytes())
    except (ValueError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: not a manifest ({exc})") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a manifest (a JSON object is expected)")
    return data


@functools.lru_cache(maxsize=32)
def _cached_index(path: str, _mtime: int) -> aptrepo.Index:
    text = aptrepo.decompressed(path, Path(path).read_bytes()).decode("utf-8")
    return aptrepo.Index(aptrepo.parse_stanzas(text))


def incomplete(bundle: str) -> list[str]:
    """The files the manifest lists that the directory lacks (or at another size)."""
    directory = Path(bundle)
    try:
        manifest = read_manifest(directory)
        if manifest is None:
            return [str(directory / MANIFEST)]
        check_record(directory, manifest)
        on_disk = manifest.get("files", {})
        return [path for path in on_disk if not _present(directory, on_disk, path)]
    except BundleError as exc:
        return [str(exc)]


def _present(directory: Path, on_disk: dict[str, Any], path: str) -> bool:
    entry = on_disk.get(path)
    if not entry:
        return False
    target = confined(directory, path, f"{directory / MANIFEST} lists a file that")
    return target.is_file() and target.stat().st_size == entry.get("size")


def missing(bundle: str, needs: sources.HostNeeds) -> list[str]:
    """What a host with ``needs`` would fetch that ``bundle`` lacks, a line each (or the error)."""
    directory = Path(bundle)
    try:
        manifest = read_manifest(directory)
        if manifest is None:
            return [f"the bundle itself ({directory / MANIFEST} does not exist)"]
        check_record(directory, manifest)
        present = functools.partial(_present, directory, manifest.get("files", {}))
        gaps = [_apt_gaps(need, manifest, directory, present) for need in needs.apt]
        gaps += [_wheel_gaps(need, manifest, present) for need in needs.wheels]
        return [gap for found in gaps for gap in found]
    except BundleError as exc:
        return [str(exc)]


def _apt_gaps(need: sources.AptNeed, manifest: dict, directory: Path, present) -> list[str]:
    repository = need.repository
    where = repository.describe()
    if not present(bundle_path(repository.key.url)):
        return [f"AMD's key {repository.key.url}"]
    entry = next((r for r in manifest.get("repositories", [])
                  if f"{r['url']} {r['suite']} {r['component']} {r['architecture']}"
                  == repository_key(repository)), None)  # fmt: skip
    if entry is None or not present(entry["index"]):
        return [f"{', '.join(need.packages)} ({where}: the repository is not in the bundle)"]
    index_file = confined(directory, entry["index"], f"{directory / MANIFEST}: the index")
    try:
        with parsing(str(index_file), "package index"):
            index = _cached_index(str(index_file), index_file.stat().st_mtime_ns)
            closure = aptrepo.install_closure(index, need.packages, where)
    except RepositoryError as exc:
        return [str(exc)]
    return [
        f"{package.name} {package.version} ({where})"
        for package in closure
        if not present(bundle_path(f"{repository.url}/{package.filename}"))
    ]


def _wheel_set(manifest: dict, index_url: str, python: str, wanted: set[str]) -> dict | None:
    """The manifest's wheel set of ``index_url`` for ``python`` holding ``wanted``, or None."""
    return next((ws for ws in manifest.get("wheel_sets", []) if ws.get("index_url") == index_url
                 and ws.get("python") == python
                 and wanted <= set(ws.get("requirements", []))), None)  # fmt: skip


def _wheel_gaps(need: sources.WheelNeed, manifest: dict, present) -> list[str]:
    wanted = set(need.requirements())
    wheel_set = _wheel_set(manifest, need.index_url, need.runtime.python, wanted)
    if wheel_set is None:
        return [
            f"{', '.join(sorted(wanted))} for Python {need.runtime.python} ({need.index_url}: "
            "not in the bundle)"
        ]
    return [
        f"{name} {pin['version']} for Python {need.runtime.python} ({need.index_url})"
        for name, pin in wheel_set["pins"].items()
        if not present(pin["path"])
    ]


def locked_requirements(bundle: str, index_url: str, python: str,
                        requirements: list[str]) -> list[str] | None:  # fmt: skip
    """The bundle's hash-pinned lines for these requirements; None when it holds no such set."""
    try:
        manifest = read_manifest(Path(bundle))
    except BundleError:
        return None
    wheel_set = manifest and _wheel_set(manifest, index_url, python, set(requirements))
    if not wheel_set:
        return None
    files, pins = manifest.get("files", {}), []
    for name, pin in sorted(wheel_set["pins"].items()):
        digest = files.get(pin["path"], {}).get("sha256", "")
        if not re.fullmatch(r"[0-9a-f]{64}", digest):
            return None
        sdist = is_sdist(pin["path"].rsplit("/", 1)[-1])
        pins.append(Locked(name, pin["version"], digest, sdist, bool(pin.get("build")),
                           pin.get("runtime", True) is not False))  # fmt: skip
    return lock_lines(pins)


def bundle_lock(bundle: str, index_url: str, python: str, requirements: list[str]) -> list[str]:
    """``locked_requirements``; BundleError naming the bundle, index and Python when none."""
    locked = locked_requirements(bundle, index_url, python, requirements)
    if locked is None:
        raise BundleError(
            f"the bundle {bundle} pins no wheel set for {index_url} and Python {python}: "
            f"run `rocm-fleet bundle INVENTORY --output {bundle}` again"
        )
    return locked
