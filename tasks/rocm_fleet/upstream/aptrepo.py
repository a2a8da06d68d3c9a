"""A signed apt repository read as apt trusts it: the key by its pinned fingerprint (RFC 9580
packets read here), InRelease by gpgv with that key alone under apt's policy (hashes,
Valid-Until, suite), every index and package by its listed SHA-256."""

from __future__ import annotations

import base64
import datetime
import email.utils
import gzip
import hashlib
import lzma
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rocm_fleet.model.versions import debian_version, debian_version_satisfies

if TYPE_CHECKING:
    from debian.debian_support import Version as DebianVersion


PUBLIC_KEY = 6  # packet tag of a primary public key (subkeys are 14)


def dearmor(data: bytes) -> bytes:
    """The binary form of an ASCII-armored block; ``data`` unchanged when not armored."""
    text = data.lstrip()
    if not text.startswith(b"-----BEGIN PGP"):
        return data
    lines = text.decode("ascii", "replace").splitlines()[1:]
    start = 0
    while start < len(lines) and ":" in lines[start]:
        start += 1  # armor headers ("Version: GnuPG ..."); base64 has no colon
    if start < len(lines) and not lines[start].strip():
        start += 1  # the blank line after them
    body = []
    for line in lines[start:]:
        if line.startswith(("=", "-----END")):
            break  # the checksum line, or the end
        body.append(line.strip())
    return base64.b64decode("".join(body))


def _packets(data: bytes):
    """(tag, body, end offset) of each packet until the data ends or stops being packets."""
    pos = 0
    while pos < len(data):
        ctb = data[pos]
        if not ctb & 0x80:
            return  # not a packet: e.g. the armored copy after a binary key
        pos += 1
        if ctb & 0x40:  # new format
            tag, first = ctb & 0x3F, data[pos]
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                length, pos = ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
            elif first == 255:
                length, pos = int.from_bytes(data[pos + 1 : pos + 5], "big"), pos + 5
            else:
                return  # partial body lengths: never used for key packets
        else:  # old format
            tag, kind = (ctb >> 2) & 0x0F, ctb & 0x03
            if kind == 3:
                length = len(data) - pos
            else:
                size = (1, 2, 4)[kind]
                length, pos = int.from_bytes(data[pos : pos + size], "big"), pos + size
        yield tag, data[pos : pos + length], pos + length
        pos += length


def binary_key(data: bytes) -> bytes:
    """The key's packets in binary form, as gpgv reads a keyring."""
    binary = dearmor(data)
    ends = [end for _tag, _body, end in _packets(binary)]
    return binary[: ends[-1] if ends else 0]


def primary_fingerprints(data: bytes) -> list[str]:
    """The upper-case fingerprints of the primary keys in a published key file (v4, v5, v6)."""
    found = []
    for tag, body, _end in _packets(dearmor(data)):
        if tag != PUBLIC_KEY or not body:
            continue
        if body[0] == 4:
            digest = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body)
        elif body[0] in (5, 6):
            prefix = b"\x9a" if body[0] == 5 else b"\x9b"
            digest = hashlib.sha256(prefix + len(body).to_bytes(4, "big") + body)
        else:
            continue
        fingerprint = digest.hexdigest().upper()
        if fingerprint not in found:
            found.append(fingerprint)
    return found


class RepositoryError(Exception):
    """A repository that can't be trusted or doesn't hold what is needed; names which."""


class SignatureError(RepositoryError):
    """An InRelease that does not verify under apt's policy; names the URL and the reason."""


# RFC 9580 §9.5 hash algorithm ids.
HASH_NAMES = {1: "MD5", 2: "SHA-1", 3: "RIPEMD-160", 8: "SHA-256", 9: "SHA-384", 10: "SHA-512",
              11: "SHA-224", 12: "SHA3-256", 14: "SHA3-512"}  # fmt: skip
ACCEPTED_HASHES = frozenset({8, 9, 10, 11, 12, 14})

# Status keywords that make a signature worthless (apt: WorthlessSigners) or bad.
_WORTHLESS = {"EXPKEYSIG": "made by a key that has expired",
              "REVKEYSIG": "made by a key that is revoked", "EXPSIG": "expired"}  # fmt: skip
_BAD = {"BADSIG": "bad (the text or the signature was changed)"}


def signed_text(inrelease: bytes, key: bytes, url: str) -> str:
    """The text of ``inrelease`` gpgv verifies with ``key`` alone under apt's policy; else
    SignatureError."""
    with tempfile.TemporaryDirectory(prefix="rocm-fleet-gpg-") as home:
        keyring = Path(home) / "keyring.gpg"
        keyring.write_bytes(binary_key(key))
        signed = Path(home) / "InRelease"
        signed.write_bytes(inrelease)
        out = Path(home) / "verified"
        try:
            result = subprocess.run(
                ["gpgv", "--status-fd", "1", "--keyring", str(keyring), "--output", str(out),
                 str(signed)],
                capture_output=True, text=True, check=False,
                env={"GNUPGHOME": home, "PATH": "/usr/bin:/bin", "LANG": "C"},
            )  # fmt: skip
        except FileNotFoundError:  # gpgv is its own package on Debian 13
            raise SignatureError(
                f"{url}: can't verify its signature here: gpgv is not installed (apt-get "
                "install gpgv)"
            ) from None
        refusal = policy_refusal(result.stdout)
        if refusal is None and (result.returncode != 0 or not out.exists()):
            refusal = " ".join(result.stderr.split())[-300:] or f"gpgv exit {result.returncode}"
        if refusal is not None:
            raise SignatureError(f"{url}: the signature does not verify with the key ({refusal})")
        try:
            return out.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise SignatureError(f"{url}: the signed text is not UTF-8") from None


def policy_refusal(status: str) -> str | None:
    """Why gpgv's ``--status-fd`` output is not a signature apt accepts; None when it is."""
    lines = [line.split()[1:] for line in status.splitlines() if line.startswith("[GNUPG:] ")]
    keywords = [fields[0] for fields in lines if fields]
    for keyword, why in {**_BAD, **_WORTHLESS}.items():
        if keyword in keywords:
            return f"the signature is {why}: gpgv says {keyword}"
    valid = [fields for fields in lines if fields and fields[0] == "VALIDSIG"]
    if "GOODSIG" not in keywords or not valid:
        return "no good signature by the pinned key"
    for fields in valid:
        algorithm = int(fields[8]) if len(fields) > 8 and fields[8].isdigit() else -1
        if algorithm not in ACCEPTED_HASHES:
            name = HASH_NAMES.get(algorithm, f"hash algorithm {algorithm}")
            return f"the signature uses {name}, which apt's verifier (sqv on Debian 13) refuses"
    return None


def check_release(fields: dict[str, str], url: str, suite: str,
                  now: datetime.datetime | None = None) -> None:  # fmt: skip
    """SignatureError unless a verified Release is within ``Valid-Until`` and of ``suite``."""
    now = now or datetime.datetime.now(datetime.UTC)
    valid_until = fields.get("Valid-Until")
    if valid_until:
        try:
            until = email.utils.parsedate_to_datetime(valid_until)
        except (TypeError, ValueError):
            raise SignatureError(f"{url}: unreadable Valid-Until {valid_until!r}") from None
        if until.tzinfo is None:
            until = until.replace(tzinfo=datetime.UTC)
        if until < now:
            raise SignatureError(
                f"{url}: expired on {valid_until} (Valid-Until): a stale copy, refused as apt "
                "refuses it"
            )
    signed = [fields[name] for name in ("Suite", "Codename") if fields.get(name)]
    if suite not in signed:
        raise SignatureError(
            f"{url}: signed for {' / '.join(signed) or 'no suite'}, not {suite} (Suite, "
            "Codename): another release's InRelease, refused"
        )


def check_key(key: bytes, fingerprint: str, url: str) -> None:
    """RepositoryError unless the key's one primary key has ``fingerprint``."""
    found = primary_fingerprints(key)
    if found != [fingerprint.upper()]:
        raise RepositoryError(
            f"refusing key from {url}: fingerprint {', '.join(found) or 'none'} is not "
            f"{fingerprint.upper()}"
        )


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
