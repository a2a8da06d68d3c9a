"""A bundle's tree (each file atomic, confined, in the manifest); AMD's apt repositories in it."""

import hashlib
from pathlib import Path
from typing import Any

from rocm_fleet.atomic import write_atomically
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
from rocm_fleet.upstream.manifest import BundleError, bundle_path, confined, parsing


class Files:
    """The manifest's file table, as the bundle is made."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}

    def add(self, path: str, url: str, sha256: str, size: int, verified: str, why: str) -> None:
        entry = self.entries.setdefault(
            path, {"url": url, "sha256": sha256, "size": size, "verified": verified, "why": []}
        )
        if why not in entry["why"]:
            entry["why"].append(why)


def write_file(out: Path, path: str, data: bytes) -> None:
    target = confined(out, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, data)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def add_key(
    repository: AptRepository, fetcher: Fetcher, out: Path, files: Files, manifest: dict
) -> bytes:
    """The repository's key, only with the pinned fingerprint (hosts check it again)."""
    url, fingerprint = repository.key.url, repository.key.fingerprint
    armored = fetcher.content(url)
    with parsing(url, "OpenPGP key"):
        check_key(armored, fingerprint, url)
        one_key(armored, url)
    path = bundle_path(url)
    write_file(out, path, armored)
    files.add(path, url, sha256_hex(armored), len(armored),
              f"primary key fingerprint {fingerprint}",
              "the key apt and the deploy check AMD's signatures with")  # fmt: skip
    manifest["keys"][url] = {"path": path, "fingerprint": fingerprint}
    return armored


def add_repository(
    repository: AptRepository,
    packages: list[str],
    hosts: list[str],
    key: bytes,
    fetcher: Fetcher,
    out: Path,
    files: Files,
) -> dict[str, Any]:
    """One repository: its verified InRelease and indexes, and the closure of ``packages``."""
    where = repository.describe()
    url = f"{repository.dists_url}/InRelease"
    inrelease = fetcher.content(url)
    with parsing(url, "InRelease"):
        release = parse_release(signed_text(inrelease, key, url))
    check_release(release.fields, url, repository.suite)
    write_file(out, bundle_path(url), inrelease)
    why = f"{where}: apt verifies it with the key"
    signed_by = (
        f"signature checked with gpgv under apt's policy and key {repository.key.fingerprint}"
    )
    files.add(bundle_path(url), url, sha256_hex(inrelease), len(inrelease), signed_by, why)
    variants = release.variants(repository.packages_index)
    if not variants:
        raise BundleError(f"{url} lists no {repository.packages_index}")
    parsed = None
    for variant in sorted(variants, key=lambda v: len(v.path)):
        index_url = f"{repository.dists_url}/{variant.path}"
        data = fetcher.content(index_url, size=variant.size)
        if sha256_hex(data) != variant.sha256:
            raise BundleError(f"{index_url}: SHA-256 is not the one its InRelease lists")
        paths = [bundle_path(index_url)]
        if release.by_hash:
            directory = variant.path.rsplit("/", 1)[0]
            paths.append(bundle_path(f"{repository.dists_url}/{directory}/by-hash/SHA256/"
                                     f"{variant.sha256}"))  # fmt: skip
        for path in paths:
            write_file(out, path, data)
            files.add(path, index_url, variant.sha256, len(data), "SHA256 in the InRelease",
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
