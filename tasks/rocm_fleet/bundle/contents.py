"""A bundle being made (``Bundle``): its files written confined and atomically and listed in the
manifest, AMD's verified keys and repositories, wheel sets and their PEP 503 pages."""

import hashlib
import html
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model import matrix
from rocm_fleet.model.sources import AptRepository
from rocm_fleet.upstream.aptrepo import (
    Index,
    check_key,
    check_release,
    decompressed,
    install_closure,
    parse_release,
    parse_stanzas,
    primary_fingerprints,
    signed_text,
)
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.manifest import (
    BundleError,
    bundle_path,
    confined,
    parsing,
)
from rocm_fleet.upstream.resolution import Target, index_reads, resolve
from rocm_fleet.upstream.wheels import (
    Link,
    project_url,
    untrusted_index,
)


def write_confined(out: Path, path: str, data: bytes) -> None:
    """``data`` at ``path`` inside ``out`` (confined), written atomically."""
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
        write_confined(self.out, path, data)
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
