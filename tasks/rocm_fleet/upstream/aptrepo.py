"""A signed apt repository read as apt trusts it: the key by its pinned fingerprint, InRelease
by ``gpgv`` with that key alone, every index and package by its listed SHA-256."""

from __future__ import annotations

import gzip
import lzma
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rocm_fleet.model.versions import debian_version, debian_version_satisfies
from rocm_fleet.upstream.signature import (
    SignatureError,
    binary_key,
    primary_fingerprints,
    verified_text,
)

if TYPE_CHECKING:
    from debian.debian_support import Version as DebianVersion


class RepositoryError(Exception):
    """A repository that can't be trusted or doesn't hold what is needed; names which."""


def check_key(key: bytes, fingerprint: str, url: str) -> None:
    """RepositoryError unless the key's one primary key has ``fingerprint``."""
    found = primary_fingerprints(key)
    if found != [fingerprint.upper()]:
        raise RepositoryError(
            f"refusing key from {url}: fingerprint {', '.join(found) or 'none'} is not "
            f"{fingerprint.upper()}"
        )


def signed_text(inrelease: bytes, key: bytes, url: str) -> str:
    """The text of ``inrelease`` gpgv verifies with ``key`` alone; RepositoryError otherwise."""
    try:
        return verified_text(inrelease, binary_key(key), url)
    except SignatureError as exc:
        raise RepositoryError(str(exc)) from None


@dataclass(frozen=True)
class IndexFile:
    path: str  # relative to dists/<suite>/, e.g. main/binary-amd64/Packages.gz
    sha256: str
    size: int


@dataclass(frozen=True)
class ReleaseFile:
    """An apt repository's Release (or InRelease) file: its fields and the indexes it lists."""

    fields: dict[str, str]
    files: dict[str, IndexFile]

    @property
    def by_hash(self) -> bool:
        return self.fields.get("Acquire-By-Hash", "").lower() == "yes"

    def variants(self, index: str) -> list[IndexFile]:
        """The files this Release lists for ``index``, compressed variants included."""
        return [f for p, f in self.files.items() if p == index or p.startswith(index + ".")]


def parse_release(text: str) -> ReleaseFile:
    """A Release file's fields and each index's SHA-256 (its signature unchecked here)."""
    from debian import deb822

    release = deb822.Release(text)
    files = {
        entry["name"]: IndexFile(entry["name"], entry["sha256"].lower(), int(entry["size"]))
        for entry in release.get("SHA256", [])
    }
    fields = {key: value for key, value in release.items() if isinstance(value, str)}
    return ReleaseFile(fields, files)


def decompressed(path: str, data: bytes) -> bytes:
    if path.endswith(".gz"):
        return gzip.decompress(data)
    if path.endswith(".xz"):
        return lzma.decompress(data)
    return data


def parse_stanzas(text: str) -> list[dict[str, str]]:
    """The paragraphs of a deb822 file such as ``Packages``."""
    from debian import deb822

    return [
        dict(paragraph) for paragraph in deb822.Packages.iter_paragraphs(text, use_apt_pkg=False)
    ]


# A package name (deb-src-control(5)): python-debian returns what it can't read as the name.
_PACKAGE_NAME = re.compile(r"[a-z0-9][a-z0-9+.-]*")
# Old single-character forms dpkg still reads ("<" means "<=", ">" means ">=").
_OLD_OPERATORS = {"<": "<=", ">": ">="}
# The relations apt installs (Recommends too, as the deploy does), named as the manifest says.
DEPENDENCY_FIELDS = {"Pre-Depends": "pre-dependency of", "Depends": "dependency of",
                     "Recommends": "recommended by"}  # fmt: skip


@dataclass(frozen=True)
class Relation:
    name: str
    op: str | None = None
    version: str | None = None


def parse_relations(value: str) -> list[list[Relation]]:
    """A Depends-style field: clauses of alternatives, architecture qualifiers and build
    profiles dropped; RepositoryError on an unreadable name."""
    from debian import deb822

    if not value.strip():
        return []
    clauses = []
    for clause in deb822.PkgRelation.parse_relations(value):
        alternatives = []
        for parsed in clause:
            if not _PACKAGE_NAME.fullmatch(parsed["name"]):
                raise RepositoryError(f"unreadable dependency {parsed['name'].strip()!r}")
            op, version = parsed["version"] or (None, None)
            alternatives.append(Relation(parsed["name"], _OLD_OPERATORS.get(op, op), version))
        clauses.append(alternatives)
    return clauses


@dataclass
class Package:
    """A package of an index (its stanza) and why it is installed."""

    stanza: dict[str, str]
    why: list[str] = field(default_factory=list)
    name = property(lambda self: self.stanza["Package"])
    version = property(lambda self: self.stanza["Version"])
    filename = property(lambda self: self.stanza["Filename"])
    sha256 = property(lambda self: self.stanza["SHA256"].lower())
    size = property(lambda self: int(self.stanza["Size"]))


class Index:
    """A repository's package index: each package's versions, and who provides what."""

    def __init__(self, stanzas: list[dict[str, str]]):
        self.versions: dict[str, list[dict[str, str]]] = {}
        self.providers: dict[str, list[dict[str, str]]] = {}
        for stanza in stanzas:
            if "Package" not in stanza or "Filename" not in stanza:
                continue
            self.versions.setdefault(stanza["Package"], []).append(stanza)
            for clause in parse_relations(stanza.get("Provides", "")):
                for provided in clause:
                    self.providers.setdefault(provided.name, []).append(stanza)
        for stanzas_of in self.versions.values():
            stanzas_of.sort(key=_debian_order, reverse=True)

    def best(self, relation: Relation) -> dict[str, str] | None:
        """The newest stanza satisfying ``relation`` (else a provider of an unversioned one)."""
        for stanza in self.versions.get(relation.name, []):
            if relation.op is None or debian_version_satisfies(
                stanza["Version"], relation.op, relation.version or ""
            ):
                return stanza
        if relation.op is None and relation.name in self.providers:
            return max(self.providers[relation.name], key=_debian_order)
        return None


def _debian_order(stanza: dict[str, str]) -> DebianVersion:
    return debian_version(stanza["Version"])


def wanted(index: Index, root: str) -> dict[str, str] | None:
    """The stanza apt installs for ``root`` (``NAME`` or ``NAME=PREFIX*``): the newest."""
    name, _, pinned = root.partition("=")
    if not pinned:
        return index.best(Relation(name))
    prefix = pinned.removesuffix("*")
    return next((s for s in index.versions.get(name, []) if s["Version"].startswith(prefix)), None)


def install_closure(index: Index, roots: list[str] | tuple[str, ...], where: str) -> list[Package]:
    """What apt installs from here for ``roots``; RepositoryError naming a root it lacks."""
    chosen: dict[str, Package] = {}
    missing = [root for root in roots if wanted(index, root) is None]
    if missing:
        raise RepositoryError(f"{', '.join(missing)}: not in {where}")
    queue: list[tuple[dict[str, str], str]] = [
        (wanted(index, root) or {}, "wanted") for root in roots
    ]
    while queue:
        stanza, why = queue.pop(0)
        key = f"{stanza['Package']}={stanza['Version']}"
        if key in chosen:
            chosen[key].why.append(why)
            continue
        chosen[key] = Package(stanza, [why])
        for field_name, reason in DEPENDENCY_FIELDS.items():
            for clause in parse_relations(stanza.get(field_name, "")):
                for relation in clause:
                    found = index.best(relation)
                    if found is not None:
                        queue.append((found, f"{reason} {stanza['Package']}"))
    return sorted(chosen.values(), key=lambda p: p.filename)
