"""Reading a signed apt repository the way apt trusts it, for ``rocm-fleet bundle``.

The key is accepted only when its one primary key has the pinned fingerprint; the
``InRelease`` is checked with ``gpgv`` against a keyring holding that key alone, and only
the text gpgv says was signed is read; every index file must have the SHA-256 that text
lists, and every package the SHA256 its (verified) index gives. Dependencies are resolved
within the repository: what a package needs from elsewhere comes from the host's own
Debian or Ubuntu mirror, as it does without a bundle.
"""

from __future__ import annotations

import gzip
import lzma
import re
from dataclasses import dataclass, field
from functools import cmp_to_key

from rocm_fleet.model.versions import compare_debian_versions, debian_version_satisfies
from rocm_fleet.offline.openpgp import binary_key, primary_fingerprints
from rocm_fleet.offline.signature import SignatureError, verified_text


class RepositoryError(Exception):
    """A repository that can't be trusted or doesn't hold what is needed; names which."""


def check_key(key: bytes, fingerprint: str, url: str) -> None:
    """Refuse a key unless its one primary key has ``fingerprint`` (armored, binary, or
    binary with an armored copy appended: ``openpgp``)."""
    found = primary_fingerprints(key)
    if found != [fingerprint.upper()]:
        raise RepositoryError(
            f"refusing key from {url}: fingerprint {', '.join(found) or 'none'} is not "
            f"{fingerprint.upper()}"
        )


def signed_text(inrelease: bytes, key: bytes, url: str) -> str:
    """The text of an ``InRelease`` that ``gpgv`` verifies with ``key`` alone, under apt's
    policy (``signature``: no expired or revoked key, no SHA-1)."""
    try:
        return verified_text(inrelease, binary_key(key), url)
    except SignatureError as exc:
        raise RepositoryError(str(exc)) from None


# --- Release and Packages ----------------------------------------------------------------------


@dataclass(frozen=True)
class IndexFile:
    path: str  # relative to dists/<suite>/, e.g. main/binary-amd64/Packages.gz
    sha256: str
    size: int


@dataclass(frozen=True)
class Release:
    fields: dict[str, str]
    files: dict[str, IndexFile]

    @property
    def by_hash(self) -> bool:
        return self.fields.get("Acquire-By-Hash", "").lower() == "yes"

    def variants(self, index: str) -> list[IndexFile]:
        """The files of one index (``main/binary-amd64/Packages`` and its compressed
        variants) this Release lists."""
        return [f for p, f in self.files.items() if p == index or p.startswith(index + ".")]


def parse_release(text: str) -> Release:
    fields: dict[str, str] = {}
    files: dict[str, IndexFile] = {}
    section = None
    for line in text.splitlines():
        if line.startswith((" ", "\t")):
            if section == "SHA256":
                parts = line.split()
                if len(parts) == 3:
                    files[parts[2]] = IndexFile(parts[2], parts[0].lower(), int(parts[1]))
            continue
        key, _, value = line.partition(":")
        section = key.strip()
        fields[section] = value.strip()
    return Release(fields, files)


def decompressed(path: str, data: bytes) -> bytes:
    if path.endswith(".gz"):
        return gzip.decompress(data)
    if path.endswith(".xz"):
        return lzma.decompress(data)
    return data


def parse_stanzas(text: str) -> list[dict[str, str]]:
    """deb822 paragraphs (continuation lines kept, joined with newlines)."""
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            if current:
                stanzas.append(current)
            current, last = {}, None
        elif line[0] in " \t" and last:
            current[last] += "\n" + line.strip()
        else:
            key, _, value = line.partition(":")
            last = key.strip()
            current[last] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


# --- the install closure -----------------------------------------------------------------------

_RELATION = re.compile(
    r"^\s*(?P<name>[a-z0-9][a-z0-9+.-]*)(?::[a-z0-9-]+)?\s*"
    r"(?:\(\s*(?P<op><<|<=|=|>=|>>|<|>)\s*(?P<version>[^)\s]+)\s*\))?\s*(?:\[[^]]*\])?\s*"
    r"(?:<[^>]*>\s*)*$"
)
# Old single-character forms dpkg still reads ("<" means "<=", ">" means ">=").
_OLD_OPERATORS = {"<": "<=", ">": ">="}
# apt installs these of each package it installs (Recommends by default, as the deploy does),
# named as the manifest says why a package is in a bundle.
DEPENDENCY_FIELDS = {
    "Pre-Depends": "pre-dependency of",
    "Depends": "dependency of",
    "Recommends": "recommended by",
}


@dataclass(frozen=True)
class Relation:
    name: str
    op: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        return f"{self.name} ({self.op} {self.version})" if self.op else self.name


def parse_relations(value: str) -> list[list[Relation]]:
    """A Depends-style field: clauses (comma) of alternatives (``|``)."""
    clauses = []
    for clause in value.split(","):
        if not clause.strip():
            continue
        alternatives = []
        for alternative in clause.split("|"):
            match = _RELATION.match(alternative)
            if not match:
                raise RepositoryError(f"unreadable dependency {alternative.strip()!r}")
            op = match.group("op")
            alternatives.append(
                Relation(match.group("name"), _OLD_OPERATORS.get(op, op), match.group("version"))
            )
        clauses.append(alternatives)
    return clauses


@dataclass
class Package:
    stanza: dict[str, str]
    why: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.stanza["Package"]

    @property
    def version(self) -> str:
        return self.stanza["Version"]

    @property
    def filename(self) -> str:
        return self.stanza["Filename"]

    @property
    def sha256(self) -> str:
        return self.stanza["SHA256"].lower()

    @property
    def size(self) -> int:
        return int(self.stanza["Size"])


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
            stanzas_of.sort(key=_DebianOrder, reverse=True)

    def best(self, relation: Relation) -> dict[str, str] | None:
        """The newest version in the index that satisfies ``relation`` (by name, else a
        package that provides it, for an unversioned relation), None when none does."""
        for stanza in self.versions.get(relation.name, []):
            if relation.op is None or debian_version_satisfies(
                stanza["Version"], relation.op, relation.version or ""
            ):
                return stanza
        if relation.op is None and relation.name in self.providers:
            return max(self.providers[relation.name], key=_DebianOrder)
        return None


_DebianOrder = cmp_to_key(lambda a, b: compare_debian_versions(a["Version"], b["Version"]))


def install_closure(index: Index, roots: list[str] | tuple[str, ...], where: str) -> list[Package]:
    """The packages apt installs from this repository for ``roots``: each root's newest
    version, and every Pre-Depends, Depends and Recommends the repository can satisfy,
    recursively. Of a clause's alternatives every one the repository holds is taken, so
    apt finds whichever it picks; what the repository doesn't hold comes from the host's
    distribution. A root the repository doesn't hold raises, naming it and ``where``."""
    chosen: dict[str, Package] = {}
    missing = [name for name in roots if index.best(Relation(name)) is None]
    if missing:
        raise RepositoryError(f"{', '.join(missing)}: not in {where}")
    queue: list[tuple[dict[str, str], str]] = [
        (index.best(Relation(name)) or {}, "wanted") for name in roots
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
