"""Offline bundles: everything a fleet fetches from AMD and PyTorch, fetched once, verified.

A bundle is a directory laid out as the fleet mirror serves it (``sources.mirror_path``:
``repo.radeon.com/rocm/apt/6.4.3/dists/jammy/InRelease``,
``download.pytorch.org/whl/rocm6.4/torch/index.html``), so any static web server can serve
it and apt and pip on the hosts find what they asked upstream for, at the same paths:

* AMD's key (only with the pinned fingerprint), each repository's ``InRelease`` and package
  indexes **verbatim** (apt on the hosts verifies AMD's signature itself; the bundle checked
  it too, with ``gpgv`` and the pinned key alone), and the ``.deb`` files of the install
  closure within AMD's repository, each checked against the SHA256 of the signed index;
* per PyTorch index and host Python, the wheels of torch, torchvision, torchaudio and what
  they require, each checked against the ``#sha256=`` the index publishes, with PEP 503
  pages listing only those files (relative links, so the tree works from any URL); a
  distribution published only as an sdist (AMD's ``rocm``) as its sdist, with the wheels of
  its build backend (``offline.resolution``);
* ``manifest.json``: what was fetched, from where, how it was verified and why it is there
  (which host needs it, which package depends on it).

A second run fetches what is new only (a file already there with the expected hash is
kept) and removes what the inventory no longer needs. The manifest's format and what reads
it back (``missing`` tells preflight what a host needs that a bundle lacks, naming it, before
apt or pip start; ``locked_requirements`` the deploy's pins) are ``offline.manifest``.
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit
from urllib.request import url2pathname

from rocm_fleet.model import matrix
from rocm_fleet.model.sources import (
    AptRepository,
    HostNeeds,
)
from rocm_fleet.offline.aptrepo import (
    Index,
    RepositoryError,
    check_key,
    decompressed,
    install_closure,
    parse_release,
    parse_stanzas,
    signed_text,
)
from rocm_fleet.offline.dist_files import (
    ResolutionError,
    dist_metadata,
    is_sdist,
    sdist_build_requires,
)
from rocm_fleet.offline.download import DownloadError, Fetcher, Unreachable
from rocm_fleet.offline.manifest import (
    FORMAT,
    MANIFEST,
    BundleError,
    BundleUnreachable,
    bundle_path,
    check_record,
    confined,
    parsing,
    read_manifest,
    repository_key,
)
from rocm_fleet.offline.openpgp import primary_fingerprints
from rocm_fleet.offline.python_target import Target, interpreter_tag, manylinux_platforms
from rocm_fleet.offline.resolution import resolve
from rocm_fleet.offline.signature import SignatureError, check_release
from rocm_fleet.offline.wheels import Link, parse_page, project_url, untrusted_index
from rocm_fleet.version import __version__


def one_key(data: bytes, url: str) -> None:
    """Refuse a key file holding more than one key (a second armored block, or binary
    packets followed by an armored copy of another key): hosts' apt reads the whole file
    as the keyring, so the bundle must not carry a key it didn't check."""
    blocks = data.count(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    armored_at = data.find(b"-----BEGIN PGP")
    if blocks > 1:
        raise BundleError(f"refusing key from {url}: the file holds {blocks} armored keys, not one")
    if armored_at > 0 and data[:armored_at].strip():
        binary, armored = data[:armored_at], data[armored_at:]
        if primary_fingerprints(binary) != primary_fingerprints(armored):
            raise BundleError(
                f"refusing key from {url}: its binary key and the armored copy after it are "
                "different keys"
            )


# --- what an inventory needs -------------------------------------------------------------------


@dataclass
class Plan:
    """The union of the hosts' needs: per repository the packages, per (index, Python) the
    wheels, each with the hosts that need it."""

    apt: dict[AptRepository, tuple[set[str], set[str]]] = field(default_factory=dict)
    wheels: dict[tuple[str, matrix.HostRuntime], tuple[set[str], set[str]]] = field(
        default_factory=dict
    )
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, host: str, needs: HostNeeds, described: dict[str, Any]) -> None:
        self.hosts[host] = described
        for need in needs.apt:
            packages, hosts = self.apt.setdefault(need.repository, (set(), set()))
            packages.update(need.packages)
            hosts.add(host)
        for wheel in needs.wheels:
            requirements, hosts = self.wheels.setdefault(
                (wheel.index_url, wheel.runtime), (set(), set())
            )
            requirements.update(wheel.requirements())
            hosts.add(host)


# --- making a bundle ---------------------------------------------------------------------------


class _Files:
    """The manifest's file table, as the bundle is made."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    def add(self, path: str, url: str, sha256: str, size: int, verified: str, why: str) -> None:
        entry = self.entries.setdefault(
            path, {"url": url, "sha256": sha256, "size": size, "verified": verified, "why": []}
        )
        if why not in entry["why"]:
            entry["why"].append(why)


def _write(out: Path, path: str, data: bytes) -> None:
    target = confined(out, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".part")
    temporary.write_bytes(data)
    os.replace(temporary, target)


def make_bundle(plan: Plan, out: Path, fetcher: Fetcher, inventory: str = "") -> dict[str, Any]:
    """Fetch, verify and lay out everything ``plan`` names under ``out``; returns the
    manifest written there. Raises BundleError naming what failed; a file is only ever in
    the bundle under its real name once verified."""
    out.mkdir(parents=True, exist_ok=True)
    previous = read_manifest(out)
    if previous is not None:
        check_record(out, previous)
    files = _Files()
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "made_by": f"rocm-fleet {__version__}",
        "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "inventory": inventory,
        "hosts": plan.hosts,
        "keys": {},
        "repositories": [],
        "wheel_sets": [],
    }
    try:
        keys: dict[tuple[str, str], bytes] = {}
        for repository in sorted(plan.apt, key=repository_key):
            signer = (repository.key.url, repository.key.fingerprint)
            if signer not in keys:
                keys[signer] = _key(repository, fetcher, out, files, manifest)
            packages, hosts = plan.apt[repository]
            manifest["repositories"].append(
                _repository(repository, sorted(packages), sorted(hosts), keys[signer], fetcher,
                            out, files)
            )  # fmt: skip
        pages: dict[str, dict[str, list[tuple[str, Link]]]] = {}
        for (index_url, runtime), (requirements, hosts) in sorted(
            plan.wheels.items(), key=lambda item: (item[0][0], item[0][1].python)
        ):
            manifest["wheel_sets"].append(
                _wheels(index_url, runtime, sorted(requirements), sorted(hosts), fetcher, out,
                        files, pages)
            )  # fmt: skip
        for index_url, projects in pages.items():
            _write_pages(index_url, projects, out, files)
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        for wheel_set in manifest["wheel_sets"]:
            if wheel_set["python"] == running:
                _pip_check(wheel_set, out)
    except Unreachable as exc:
        raise BundleUnreachable(str(exc)) from None
    except (DownloadError, RepositoryError, ResolutionError, SignatureError) as exc:
        raise BundleError(str(exc)) from None
    manifest["files"] = dict(sorted(files.entries.items()))
    removed = _prune(out, previous, manifest)
    manifest["removed"] = removed
    _write(out, MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def _key(
    repository: AptRepository, fetcher: Fetcher, out: Path, files: _Files, manifest: dict
) -> bytes:
    """The repository's key, only with the pinned fingerprint (hosts check it again)."""
    url, fingerprint = repository.key.url, repository.key.fingerprint
    armored = fetcher.content(url)
    with parsing(url, "OpenPGP key"):
        check_key(armored, fingerprint, url)
        one_key(armored, url)
    path = bundle_path(url)
    _write(out, path, armored)
    files.add(path, url, _sha256(armored), len(armored), f"primary key fingerprint {fingerprint}",
              "the key apt and the deploy check AMD's signatures with")  # fmt: skip
    manifest["keys"][url] = {"path": path, "fingerprint": fingerprint}
    return armored


def _repository(
    repository: AptRepository,
    packages: list[str],
    hosts: list[str],
    key: bytes,
    fetcher: Fetcher,
    out: Path,
    files: _Files,
) -> dict[str, Any]:
    """One repository: InRelease (signature checked), its package indexes (hash checked),
    the install closure of ``packages`` (each .deb hash checked)."""
    where = repository.describe()
    url = f"{repository.dists_url}/InRelease"
    inrelease = fetcher.content(url)
    with parsing(url, "InRelease"):
        release = parse_release(signed_text(inrelease, key, url))
    check_release(release.fields, url, repository.suite)
    _write(out, bundle_path(url), inrelease)
    why = f"{where}: apt verifies it with the key"
    signed_by = (
        f"signature checked with gpgv under apt's policy and key {repository.key.fingerprint}"
    )
    files.add(bundle_path(url), url, _sha256(inrelease), len(inrelease), signed_by, why)
    variants = release.variants(repository.packages_index)
    if not variants:
        raise BundleError(f"{url} lists no {repository.packages_index}")
    parsed = None
    for variant in sorted(variants, key=lambda v: len(v.path)):
        index_url = f"{repository.dists_url}/{variant.path}"
        data = fetcher.content(index_url, size=variant.size)
        if _sha256(data) != variant.sha256:
            raise BundleError(f"{index_url}: SHA-256 is not the one its InRelease lists")
        paths = [bundle_path(index_url)]
        if release.by_hash:
            directory = variant.path.rsplit("/", 1)[0]
            paths.append(bundle_path(f"{repository.dists_url}/{directory}/by-hash/SHA256/"
                                     f"{variant.sha256}"))  # fmt: skip
        for path in paths:
            _write(out, path, data)
            files.add(path, index_url, variant.sha256, len(data), "SHA256 in the InRelease",
                      f"{where}: the package index")  # fmt: skip
        if parsed is None:
            with parsing(index_url, "package index"):
                parsed = (bundle_path(index_url), decompressed(variant.path, data))
    assert parsed is not None  # variants is not empty
    index_path, text = parsed
    # Every path of the closure proven inside the bundle (and every field read) before the
    # first .deb is fetched.
    located = []
    with parsing(index_path, "package index"):
        closure = install_closure(Index(parse_stanzas(text.decode("utf-8"))), packages, where)
        for package in closure:
            deb_url = f"{repository.url}/{package.filename}"
            path = bundle_path(deb_url)
            target = confined(out, path, f"{deb_url} ({where})")
            located.append((package, deb_url, path, target, package.sha256, package.size))
    debs = []
    for package, deb_url, path, target, sha256, size in located:
        debs.append(path)
        fetcher.file(deb_url, target, sha256, size)
        for reason in package.why:
            files.add(path, deb_url, package.sha256, package.size,
                      "SHA256 in the signed package index",
                      f"{package.name} {package.version}: {reason} ({where})")  # fmt: skip
    return {
        "url": repository.url,
        "suite": repository.suite,
        "component": repository.component,
        "architecture": repository.architecture,
        "key": repository.key.url,
        "packages": packages,
        "hosts": hosts,
        "index": index_path,
        "debs": debs,
    }


def _wheels(
    index_url: str,
    runtime: matrix.HostRuntime,
    requirements: list[str],
    hosts: list[str],
    fetcher: Fetcher,
    out: Path,
    files: _Files,
    pages: dict[str, dict[str, list[tuple[str, Link]]]],
) -> dict[str, Any]:
    """Resolve ``requirements`` for one Python on one index; fetch and verify each wheel.
    Only from an https index: the hashes read there pin every host's wheels."""
    problem = untrusted_index(index_url)
    if problem:
        raise BundleError(f"can't bundle the wheels of {', '.join(hosts)}: {problem}")
    target = Target(runtime)
    where = index_url

    @functools.cache
    def page(name: str) -> list[Link]:
        url = project_url(index_url, name)
        try:
            data = fetcher.content(url)
            with parsing(url, "PEP 503 page"):
                return parse_page(data.decode("utf-8"), url)
        except DownloadError as exc:
            if "HTTP 404" in str(exc):
                return []
            raise

    @functools.cache
    def metadata(link: Link) -> str:
        """A wheel's core metadata: the index's copy when it publishes one (PEP 658), so
        a candidate the resolution later drops costs no wheel download."""
        if link.metadata_sha256:
            data = fetcher.content(link.url + ".metadata")
            if _sha256(data) == link.metadata_sha256:
                with parsing(link.url + ".metadata", "core metadata file"):
                    return data.decode("utf-8")
        path = _wheel(link, fetcher, out)
        with parsing(link.url, "wheel"):
            return dist_metadata(str(path))

    @functools.cache
    def build_requires(link: Link) -> list[str]:
        """An sdist's build requirements (``offline.dist_files``): bundled beside it."""
        return sdist_build_requires(str(_wheel(link, fetcher, out)))

    with parsing(where, "wheel index (a requirement or version)"):
        pins = resolve(requirements, page, metadata, target, where, build_requires)
    pinned = {}
    for name, pin in sorted(pins.items()):
        link = pin.candidate.link
        path = bundle_path(link.url)
        size = _wheel(link, fetcher, out).stat().st_size
        for reason in pin.why:
            files.add(path, link.url, link.sha256 or "", size,
                      "#sha256 published by the index",
                      f"{name} {pin.candidate.version}: {reason} ({target.describe()}, "
                      f"{index_url})")  # fmt: skip
        pages.setdefault(index_url, {}).setdefault(name, [])
        if (path, link) not in pages[index_url][name]:
            pages[index_url][name].append((path, link))
        pinned[name] = {"version": str(pin.candidate.version), "path": path, "why": pin.why}
        if pin.build:
            pinned[name]["build"] = True
        if not pin.runtime:
            pinned[name]["runtime"] = False
    return {
        "index_url": index_url,
        "python": runtime.python,
        "glibc": runtime.glibc,
        "requirements": requirements,
        "hosts": hosts,
        "pins": pinned,
    }


def _wheel(link: Link, fetcher: Fetcher, out: Path) -> Path:
    if not link.sha256:
        raise BundleError(f"{link.url}: the index publishes no #sha256 for it; not bundled")
    path = confined(out, bundle_path(link.url), link.url)
    fetcher.file(link.url, path, link.sha256)
    return path


def _write_pages(
    index_url: str, projects: dict[str, list[tuple[str, Link]]], out: Path, files: _Files
) -> None:
    """PEP 503 pages for the bundled wheels only: a host's pip then can't pick a file the
    bundle doesn't hold. Links are relative (``../torch-2.9.1%2Brocm6.4-...whl``)."""

    def write(url: str, page: str, why: str) -> None:
        data = page.encode()
        path = bundle_path(url) + "index.html"
        _write(out, path, data)
        files.add(path, url, _sha256(data), len(data), "written by rocm-fleet bundle", why)

    root = index_url.rstrip("/") + "/"
    rows = "".join(f'<a href="{quote(name)}/">{html.escape(name)}</a><br/>\n' for name in projects)
    write(root, _page(f"Links for {index_url}", rows), "the index's project list")
    for name, entries in projects.items():
        page_dir = bundle_path(project_url(index_url, name))
        lines = []
        for path, link in sorted(entries, key=lambda e: e[0]):
            href = quote(os.path.relpath(path, page_dir)) + f"#sha256={link.sha256}"
            requires = (
                f' data-requires-python="{html.escape(link.requires_python)}"'
                if link.requires_python
                else ""
            )
            lines.append(
                f'<a href="{html.escape(href)}"{requires}>{html.escape(link.filename)}</a><br/>\n'
            )
        write(
            project_url(index_url, name),
            _page(f"Links for {name}", "".join(lines)),
            f"the page listing the bundled wheels of {name}",
        )


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html>\n<head><meta name="pypi:repository-version" content="1.0">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
        f"{body}</body>\n</html>\n"
    )


def _pip_check(wheel_set: dict[str, Any], out: Path) -> None:
    """pip resolves the set's requirements against the bundle's own pages, as a host's pip
    will: it must succeed and pick only bundled files. Only for the Python running this
    (pip's ``--python-version`` picks wheels for another Python but still evaluates
    ``Requires-Dist`` markers with its own)."""
    _check_pip()
    if any(is_sdist(pin["path"].rsplit("/", 1)[-1]) for pin in wheel_set["pins"].values()):
        # pip refuses --python-version with anything but --only-binary=:all:, and building
        # the sdist's metadata would run its build backend here: the resolution above decides.
        return
    index = confined(out, bundle_path(wheel_set["index_url"].rstrip("/") + "/index.html")).parent
    python = wheel_set["python"]
    abi = interpreter_tag(python)
    platforms = [a for p in manylinux_platforms(wheel_set["glibc"]) for a in ("--platform", p)]
    with tempfile.TemporaryDirectory(prefix="rocm-fleet-pip-") as tmp:
        report = Path(tmp) / "report.json"
        result = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run",
             "--ignore-installed", "--quiet", "--disable-pip-version-check", "--no-cache-dir",
             "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
             "--abi", abi, *platforms, "--index-url", index.as_uri(), "--report", str(report),
             *wheel_set["requirements"]],
            capture_output=True, text=True, check=False,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LANG": "C.UTF-8"},
        )  # fmt: skip
        if result.returncode != 0:
            errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
            raise BundleError(
                f"pip can't install {' '.join(wheel_set['requirements'])} for Python {python} "
                f"from the bundle: {' '.join(errors) or result.stderr[-500:]}"
            )
        picked = json.loads(report.read_text())["install"]
    bundled = {pin["path"] for pin in wheel_set["pins"].values()}
    for item in picked:
        url = item["download_info"]["url"]
        path = os.path.relpath(url2pathname(urlsplit(url).path), out.resolve())
        if path not in bundled:
            raise BundleError(f"pip would install {path} for Python {python}, not resolved")


# pip accepts --platform/--abi with --dry-run (no --target) from 23.3 on; pyproject.toml asks
# for it, so this only fails where rocm-fleet was installed without its dependencies.
PIP_AT_LEAST = (23, 3)


def _check_pip() -> None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("pip")
    except PackageNotFoundError:
        found = "none"
    numbers = tuple(int(n) for n in re.findall(r"\d+", found)[:2])
    if numbers < PIP_AT_LEAST:
        wanted = ".".join(map(str, PIP_AT_LEAST))
        raise BundleError(
            f"the pip beside rocm-fleet ({sys.executable}) is {found}; the bundle needs pip "
            f">= {wanted}: run `{sys.executable} -m pip install 'pip>={wanted}'`"
        )


def _prune(out: Path, previous: dict[str, Any] | None, manifest: dict[str, Any]) -> list[str]:
    """Remove the files an earlier run bundled that this one doesn't need: only those, and
    only while they are what it wrote (the size and SHA-256 it recorded; anything else is
    someone else's and stays), then the directories that leaves empty, never ``out`` or
    above it."""
    if not previous:
        return []
    root = out.resolve()
    keep = set(manifest["files"])
    recorded = previous["files"]
    removed = []
    for path in sorted(set(recorded) - keep):
        target = confined(out, path, f"{out / MANIFEST} lists a file that")
        entry = recorded[path]
        if target.is_symlink() or not target.is_file():
            continue
        if target.stat().st_size != entry["size"] or _sha256_file(target) != entry["sha256"]:
            continue
        target.unlink()
        removed.append(path)
        parent = target.parent
        while parent != root and parent.is_relative_to(root) and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    return removed


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
