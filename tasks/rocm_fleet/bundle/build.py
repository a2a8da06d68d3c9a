"""``make_bundle``: fetch, verify and lay out what a ``Plan`` names (docs/decisions/bundles.md):
AMD's apt repositories, and wheels with PEP 503 pages listing only the bundled files, each file
atomic, confined and in the manifest; a host's pip resolves each wheel set to them only."""

import hashlib
import html
import importlib.metadata
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

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model import matrix
from rocm_fleet.model.sources import AptRepository, HostNeeds
from rocm_fleet.upstream.aptrepo import (
    Index,
    RepositoryError,
    SignatureError,
    check_key,
    check_release,
    decompressed,
    install_closure,
    parse_release,
    parse_stanzas,
    primary_fingerprints,
    signed_text,
)
from rocm_fleet.upstream.http import DownloadError, Fetcher, Unreachable, sha256_file
from rocm_fleet.upstream.manifest import (
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
from rocm_fleet.upstream.resolution import (
    Target,
    index_reads,
    interpreter_tag,
    manylinux_platforms,
    resolve,
)
from rocm_fleet.upstream.wheels import (
    Link,
    ResolutionError,
    is_sdist,
    project_url,
    untrusted_index,
)
from rocm_fleet.version import __version__


@dataclass
class Plan:
    """The union of the hosts' needs, each with the hosts that need it."""

    apt: dict[AptRepository, tuple[set[str], set[str]]] = field(default_factory=dict)
    wheels: dict[tuple[str, matrix.HostRuntime], tuple[set[str], set[str]]] = field(
        default_factory=dict
    )
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, host: str, needs: HostNeeds, described: dict[str, Any]) -> None:
        self.hosts[host] = described
        wanted: list[tuple[dict[Any, tuple[set[str], set[str]]], Any, Any]] = [
            *((self.apt, need.repository, need.packages) for need in needs.apt),
            *((self.wheels, (w.index_url, w.runtime), w.requirements()) for w in needs.wheels),
        ]
        for table, key, items in wanted:
            found, hosts = table.setdefault(key, (set(), set()))
            found.update(items)
            hosts.add(host)


def make_bundle(plan: Plan, out: Path, fetcher: Fetcher, inventory: str = "") -> dict[str, Any]:
    """Fetch, verify and lay out ``plan`` under ``out``, the manifest written; else BundleError."""
    out.mkdir(parents=True, exist_ok=True)
    previous = read_manifest(out)
    if previous is not None:
        check_record(out, previous)
    bundle = Bundle(out, fetcher)
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
            url, fingerprint = repository.key.url, repository.key.fingerprint
            if (url, fingerprint) not in keys:
                keys[url, fingerprint] = bundle.key(url, fingerprint)
                manifest["keys"][url] = {"path": bundle_path(url), "fingerprint": fingerprint}
            packages, hosts = plan.apt[repository]
            manifest["repositories"].append(
                bundle.repository(
                    repository, sorted(packages), sorted(hosts), keys[url, fingerprint]
                )
            )
        for (index_url, runtime), (requirements, hosts) in sorted(
            plan.wheels.items(), key=lambda item: (item[0][0], item[0][1].python)
        ):
            found = bundle.wheel_set(index_url, runtime, sorted(requirements), sorted(hosts))
            manifest["wheel_sets"].append(found)
        for index_url, projects in bundle.pages.items():
            bundle.write_pages(index_url, projects)
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        for wheel_set in manifest["wheel_sets"]:
            if wheel_set["python"] == running:
                pip_check(wheel_set, out)
    except Unreachable as exc:
        raise BundleUnreachable(str(exc)) from None
    except (DownloadError, RepositoryError, ResolutionError, SignatureError) as exc:
        raise BundleError(str(exc)) from None
    manifest["files"] = dict(sorted(bundle.files.items()))
    removed = _prune(out, previous, manifest)
    manifest["removed"] = removed
    _write(out, MANIFEST, (json.dumps(manifest, indent=1) + "\n").encode())
    return manifest


def _write(out: Path, path: str, data: bytes) -> None:
    target = confined(out, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, data)


def one_key(data: bytes, url: str) -> None:
    """BundleError when a key file holds more than one key (hosts' apt reads it whole)."""
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


#: a PEP 503 page of the bundle: its title, and its links
PAGE = (
    '<!DOCTYPE html>\n<html>\n<head><meta name="pypi:repository-version" content="1.0">'
    "<title>{title}</title></head>\n<body>\n<h1>{title}</h1>\n{body}</body>\n</html>\n"
)


class Bundle:
    """A bundle being made in ``out`` with ``fetcher``: its manifest's file table (``files``)
    and the wheels each index's pages will list (``pages``)."""

    def __init__(self, out: Path, fetcher: Fetcher) -> None:
        self.out, self.fetcher = out, fetcher
        self.files: dict[str, dict[str, Any]] = {}
        self.pages: dict[str, dict[str, list[tuple[str, Link]]]] = {}

    def add(self, path: str, url: str, sha256: str, size: int, verified: str, why: str) -> None:
        """A file in the manifest's table, ``why`` added to its reasons."""
        entry = self.files.setdefault(
            path, {"url": url, "sha256": sha256, "size": size, "verified": verified, "why": []}
        )
        if why not in entry["why"]:
            entry["why"].append(why)

    def write(self, path: str, url: str, data: bytes, verified: str, why: str) -> None:
        """``data`` written at ``path`` in the bundle, and in the manifest."""
        _write(self.out, path, data)
        self.add(path, url, hashlib.sha256(data).hexdigest(), len(data), verified, why)

    def key(self, url: str, fingerprint: str) -> bytes:
        """The key at ``url``, only with the pinned ``fingerprint`` (hosts check it again)."""
        armored = self.fetcher.content(url)
        with parsing(url, "OpenPGP key"):
            check_key(armored, fingerprint, url)
            one_key(armored, url)
        self.write(bundle_path(url), url, armored, f"primary key fingerprint {fingerprint}",
                   "the key apt and the deploy check AMD's signatures with")  # fmt: skip
        return armored

    def repository(
        self, repository: AptRepository, packages: list[str], hosts: list[str], key: bytes
    ) -> dict[str, Any]:
        """One repository: its verified InRelease and indexes, and the closure of ``packages``."""
        where, fetcher = repository.describe(), self.fetcher
        url = f"{repository.dists_url}/InRelease"
        inrelease = fetcher.content(url)
        with parsing(url, "InRelease"):
            release = parse_release(signed_text(inrelease, key, url))
        check_release(release.fields, url, repository.suite)
        signed_by = (
            f"signature checked with gpgv under apt's policy and key {repository.key.fingerprint}"
        )
        self.write(
            bundle_path(url), url, inrelease, signed_by, f"{where}: apt verifies it with the key"
        )
        variants = release.variants(repository.packages_index)
        if not variants:
            raise BundleError(f"{url} lists no {repository.packages_index}")
        parsed = None
        for variant in sorted(variants, key=lambda v: len(v.path)):
            index_url = f"{repository.dists_url}/{variant.path}"
            data = fetcher.content(index_url, size=variant.size)
            if hashlib.sha256(data).hexdigest() != variant.sha256:
                raise BundleError(f"{index_url}: SHA-256 is not the one its InRelease lists")
            paths = [bundle_path(index_url)]
            if release.by_hash:
                directory = variant.path.rsplit("/", 1)[0]
                paths.append(bundle_path(f"{repository.dists_url}/{directory}/by-hash/SHA256/"
                                         f"{variant.sha256}"))  # fmt: skip
            for path in paths:
                self.write(path, index_url, data, "SHA256 in the InRelease",
                           f"{where}: the package index")  # fmt: skip
            if parsed is None:
                with parsing(index_url, "package index"):
                    parsed = (bundle_path(index_url), decompressed(variant.path, data))
        assert parsed is not None  # variants is not empty
        index_path, text = parsed
        # Every path of the closure proven inside the bundle before the first .deb is fetched.
        located = []
        with parsing(index_path, "package index"):
            closure = install_closure(Index(parse_stanzas(text.decode("utf-8"))), packages, where)
            for package in closure:
                deb_url = f"{repository.url}/{package.filename}"
                path = bundle_path(deb_url)
                located.append(
                    (package, deb_url, path, confined(self.out, path, f"{deb_url} ({where})"))
                )
        for package, deb_url, path, target in located:
            fetcher.file(deb_url, target, package.sha256, package.size)
            for reason in package.why:
                self.add(path, deb_url, package.sha256, package.size,
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
            "debs": [path for _, _, path, _ in located],
        }

    def wheel_set(
        self, index_url: str, runtime: matrix.HostRuntime, requirements: list[str], hosts: list[str]
    ) -> dict[str, Any]:
        """Resolve, fetch and verify ``requirements`` for one Python on one https index."""
        problem = untrusted_index(index_url)
        if problem:
            raise BundleError(f"can't bundle the wheels of {', '.join(hosts)}: {problem}")
        target = Target(runtime)
        page, metadata, build_requires = index_reads(
            index_url, self.fetcher.content, self.wheel, parsing
        )
        with parsing(index_url, "wheel index (a requirement or version)"):
            pins = resolve(requirements, page, metadata, target, index_url, build_requires)
        pinned = {}
        for name, pin in sorted(pins.items()):
            link = pin.candidate.link
            path = bundle_path(link.url)
            size = self.wheel(link).stat().st_size
            for reason in pin.why:
                self.add(path, link.url, link.sha256 or "", size, "#sha256 published by the index",
                         f"{name} {pin.candidate.version}: {reason} ({target.describe()}, "
                         f"{index_url})")  # fmt: skip
            listed = self.pages.setdefault(index_url, {}).setdefault(name, [])
            if (path, link) not in listed:
                listed.append((path, link))
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

    def wheel(self, link: Link) -> Path:
        """The wheel or sdist of ``link`` in the bundle, fetched against its #sha256."""
        if not link.sha256:
            raise BundleError(f"{link.url}: the index publishes no #sha256 for it; not bundled")
        path = confined(self.out, bundle_path(link.url), link.url)
        self.fetcher.file(link.url, path, link.sha256)
        return path

    def write_pages(self, index_url: str, projects: dict[str, list[tuple[str, Link]]]) -> None:
        """PEP 503 pages listing the bundled files only, with relative links."""

        def write(url: str, title: str, body: str, why: str) -> None:
            page = PAGE.format(title=html.escape(title), body=body).encode()
            self.write(
                bundle_path(url) + "index.html", url, page, "written by rocm-fleet bundle", why
            )

        root = index_url.rstrip("/") + "/"
        rows = "".join(
            f'<a href="{quote(name)}/">{html.escape(name)}</a><br/>\n' for name in projects
        )
        write(root, f"Links for {index_url}", rows, "the index's project list")
        for name, entries in projects.items():
            page_dir = bundle_path(project_url(index_url, name))
            lines = []
            for path, link in sorted(entries, key=lambda e: e[0]):
                href = quote(os.path.relpath(path, page_dir)) + f"#sha256={link.sha256}"
                attributes = f'href="{html.escape(href)}"'
                if link.requires_python:
                    attributes += f' data-requires-python="{html.escape(link.requires_python)}"'
                lines.append(f"<a {attributes}>{html.escape(link.filename)}</a><br/>\n")
            why = f"the page listing the bundled wheels of {name}"
            write(project_url(index_url, name), f"Links for {name}", "".join(lines), why)


def _prune(out: Path, previous: dict[str, Any] | None, manifest: dict[str, Any]) -> list[str]:
    """Remove the files no longer needed that still match their record, and emptied directories."""
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
        if target.stat().st_size != entry["size"] or sha256_file(target) != entry["sha256"]:
            continue
        target.unlink()
        removed.append(path)
        parent = target.parent
        while parent != root and parent.is_relative_to(root) and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    return removed


def pip_check(wheel_set: dict[str, Any], out: Path) -> None:
    """BundleError unless pip resolves the set against the bundle's pages to bundled files."""
    try:
        found = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        found = "none"
    if tuple(int(n) for n in re.findall(r"\d+", found)[:2]) < (23, 3):  # --platform with --dry-run
        raise BundleError(
            f"the pip beside rocm-fleet ({sys.executable}) is {found}; the bundle needs pip "
            f">= 23.3: run `{sys.executable} -m pip install 'pip>=23.3'`"
        )
    if any(is_sdist(pin["path"].rsplit("/", 1)[-1]) for pin in wheel_set["pins"].values()):
        # pip needs --only-binary=:all: with --python-version: the resolution decides.
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
