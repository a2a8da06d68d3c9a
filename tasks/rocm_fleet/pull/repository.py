"""The fleet's TUF repository for pull mode (``rocm-fleet publish``): each pull node's settings
the target ``nodes/<name>.json`` of its own delegated role ``node-<name>``, published, staged
short of a threshold, signed and rotated; its metadata files each role's ``N.role.json``,
written atomically (docs/pull-mode.md); its private keys found in the key directories (first
wins), loaded (0600 only), checked against a root's key ids, and made (Ed25519, 0600)."""

import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from securesystemslib.signer import CryptoSigner
from tuf.api import metadata as tuf
from tuf.api.metadata import Metadata, MetaFile, Root, Snapshot, TargetFile, Targets, Timestamp
from tuf.api.serialization.json import JSONSerializer

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model import pulled
from rocm_fleet.pull import sealed

#: How long each metadata is valid (a node role's bounds a freeze; publish re-signs it at half).
ROOT_DAYS = 365
TARGETS_DAYS = 90
NODE_DAYS = 30
DEFAULT_TIMESTAMP_HOURS = 24
SNAPSHOT_DAYS = 90
ONLINE = (Snapshot.type, Timestamp.type)
#: The key files of each top-level role: ``root.pem`` or ``root-N.pem`` (N of a threshold),
#: the same for targets; the online key signs the snapshot and the timestamp.
KEY_PATTERNS = {Root.type: re.compile(r"root(-[0-9]+)?\.pem"),
                Targets.type: re.compile(r"targets(-[0-9]+)?\.pem"),
                **dict.fromkeys(ONLINE, re.compile(r"online\.pem"))}  # fmt: skip
#: What ``rotate`` takes: a key file's name without ``.pem``.
ROTATABLE = re.compile(r"(root|targets)(-[0-9]+)?|online")
#: Where a node's key lives in a key directory, and its delegated role's name.
NODE_KEYS = "nodes"
ROLE_PREFIX = "node-"


class RepositoryError(Exception):
    """A problem with the repository or its keys the user can fix (one line)."""


def write_private_key(path: Path) -> CryptoSigner:
    """A new Ed25519 key in ``path`` (mode 0600 from its creation; never overwritten)."""
    signer = CryptoSigner(Ed25519PrivateKey.generate())
    write_atomically(path, signer.private_bytes, mode=0o600, exclusive=True)
    return signer


def role_of(node: str) -> str:
    """The delegated role that alone may sign ``node``'s target."""
    return f"{ROLE_PREFIX}{node}"


def expiry(days: float = 0, hours: float = 0) -> datetime:
    """Now plus ``days`` and ``hours``, to the second: a metadata's expiry."""
    return (datetime.now(UTC) + timedelta(days=days, hours=hours)).replace(microsecond=0)


@dataclass(frozen=True)
class Published:
    """A publication: its serial (the snapshot version), nodes changed and removed, and the
    signatures still missing (``waiting``: it is staged)."""

    version: int
    changed: list[str]
    removed: list[str]
    waiting: list[str] = field(default_factory=list)


def _role(name: str) -> str:
    """The role of a metadata file's name (``3.node-a.json`` -> ``node-a``)."""
    return name.split(".", 1)[1].removesuffix(".json")


class PullRepository:
    """A TUF repository in ``directory``, signed with keys from ``key_dirs`` (first wins)."""

    def __init__(self, directory: Path, key_dirs: list[Path]):
        self.directory, self.key_dirs = directory, key_dirs
        self.metadata = directory / "metadata"
        self.targets = directory / "targets"
        self.staged = directory / "staged"  # waiting for more signatures: never served
        self.plain = directory / "plain"
        self._serializer = JSONSerializer(compact=False)

    def root(self) -> Metadata[Root]:
        return Metadata[Root].from_bytes((self.metadata / "root.json").read_bytes())

    def current(self, role: str) -> Metadata[Any]:
        """The newest metadata of ``role`` (``N.role.json``), or the timestamp."""
        return Metadata.from_bytes((self.metadata / self._current_name(role)).read_bytes())

    def _current_name(self, role: str) -> str:
        if role == Timestamp.type:
            return "timestamp.json"
        names = [p.name.split(".", 1) for p in self.metadata.glob(f"*.{role}.json")]
        versions = [int(version) for version, rest in names if rest == f"{role}.json"]
        return f"{max(versions, default=0)}.{role}.json"

    def version(self, role: str) -> int:
        """The current version of ``role``'s metadata; 0 before the first."""
        if not (self.metadata / self._current_name(role)).is_file():
            return 0
        return self.current(role).signed.version

    def _write(self, metadata: Metadata[Any], name: str, directory: Path | None = None) -> None:
        """Written atomically (never half a file served) in ``directory`` (default: metadata/)."""
        write_atomically((directory or self.metadata) / name, metadata.to_bytes(self._serializer))

    def _snapshot(self, timestamp_hours: float, online: CryptoSigner) -> None:
        """A new snapshot naming the current targets and node roles (a removed node's at its last
        version), and its timestamp, signed with ``online``."""
        snapshot_version = self.version(Snapshot.type) + 1
        snapshot = Metadata(Snapshot(version=snapshot_version,
                                     expires=expiry(days=SNAPSHOT_DAYS)))  # fmt: skip
        if snapshot_version > 1:
            snapshot.signed.meta.update(self.current(Snapshot.type).signed.meta)
        targets = self.current(Targets.type).signed
        snapshot.signed.meta["targets.json"] = MetaFile(version=targets.version)
        roles = targets.delegations.roles if targets.delegations else None
        for role in roles or {}:
            snapshot.signed.meta[f"{role}.json"] = MetaFile(version=self.version(role))
        snapshot.sign(online)
        self._write(snapshot, f"{snapshot_version}.snapshot.json")
        self._timestamp(snapshot_version, timestamp_hours, online)

    def _timestamp(self, snapshot_version: int, hours: float, online: CryptoSigner) -> int:
        """A new timestamp naming ``snapshot_version``, valid ``hours``; its version."""
        version = self.version(Timestamp.type) + 1
        timestamp = Metadata(Timestamp(version=version, expires=expiry(hours=hours),
                                       snapshot_meta=MetaFile(snapshot_version)))  # fmt: skip
        timestamp.sign(online)
        self._write(timestamp, "timestamp.json")
        return version

    def absent(self, what: str) -> RepositoryError:
        """The error for ``what`` (a key file, what it is) found in no key directory."""
        where = ", ".join(str(d) for d in self.key_dirs)
        return RepositoryError(f"no {what} in {where}: bring the key directory that holds it "
                               "(--keys)")  # fmt: skip

    def key_file(self, name: str) -> Path | None:
        return next((d / name for d in self.key_dirs if (d / name).is_file()), None)

    @staticmethod
    def load(path: Path) -> CryptoSigner:
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            raise RepositoryError(f"{path} is mode {mode:04o}: a private key must be 0600")
        return CryptoSigner(load_pem_private_key(path.read_bytes(), None))

    def _loaded(self, role: str) -> Iterator[tuple[Path, CryptoSigner]]:
        """The key files for top-level ``role`` (first name wins), each loaded in turn."""
        found: dict[str, Path] = {}
        for directory in self.key_dirs:
            if directory.is_dir():
                for path in sorted(directory.iterdir()):
                    if KEY_PATTERNS[role].fullmatch(path.name) and path.is_file():
                        found.setdefault(path.name, path)
        for path in found.values():
            yield path, self.load(path)

    def signers(self, role: str, root: Root) -> list[CryptoSigner]:
        """The signers of top-level ``role`` at hand (``root`` names its keys); RepositoryError
        when none is, or a file of the role's name is not one of its keys or not 0600."""
        signers = {}
        for path, signer in self._loaded(role):
            if signer.public_key.keyid not in root.roles[role].keyids:
                raise RepositoryError(f"{path} is not a {role} key of {self.metadata}/root.json "
                                      f"(version {root.version})")  # fmt: skip
            signers[signer.public_key.keyid] = signer
        if not signers:
            name = "online.pem" if role in ONLINE else f"{role}.pem (or {role}-N.pem)"
            raise self.absent(f"{name} (the {role} key)")
        return list(signers.values())

    def signer(self, role: str) -> CryptoSigner:
        """One signer of top-level ``role`` (as ``signers``, of the current root)."""
        return self.signers(role, self.root().signed)[0]

    def at_hand(self, role: str, root: Root) -> list[CryptoSigner]:
        """The keys of ``role`` in ``root`` found in the key directories (others skipped)."""
        return [s for _, s in self._loaded(role) if s.public_key.keyid in root.roles[role].keyids]

    def node_signer(self, node: str, keyids: list[str] | None) -> CryptoSigner:
        """``node``'s key (``nodes/<node>.pem``); one of ``keyids`` (None: a new node, its key
        made in the first key directory when none exists)."""
        name = f"{NODE_KEYS}/{node}.pem"
        path = self.key_file(name)
        if path is None and keyids is None:
            directory = self.key_dirs[0] / NODE_KEYS
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            return write_private_key(directory / f"{node}.pem")
        if path is None:
            raise self.absent(f"{name} (node {node}'s key)")
        signer = self.load(path)
        if keyids is not None and signer.public_key.keyid not in keyids:
            raise RepositoryError(f"{path} is not the key of role {role_of(node)}")
        return signer

    @staticmethod
    def _add_signatures(metadata: Metadata[Any], signers: list[CryptoSigner]) -> None:
        for signer in signers:
            if signer.public_key.keyid not in metadata.signatures:
                metadata.sign(signer, append=True)

    def _missing(self, files: dict[str, Metadata[Any]]) -> list[str]:
        """What each of ``files`` (name -> metadata, in order) lacks to meet its threshold,
        checked as a node checks it."""
        root, targets, missing = self.root().signed, None, []
        for name, metadata in files.items():
            role = _role(name)
            payload, signatures = metadata.signed_bytes, metadata.signatures
            if role == Root.type:
                result = metadata.signed.get_root_verification_result(root, payload, signatures)
                lacks = result.first.missing + result.second.missing
                root = metadata.signed
            elif role == Targets.type:
                lacks = root.get_verification_result(role, payload, signatures).missing
                targets = metadata.signed
            else:
                targets = targets or self.current(Targets.type).signed
                lacks = targets.get_verification_result(role, payload, signatures).missing
            if lacks:
                missing.append(f"{name}: {lacks} more signature{'s' * (lacks > 1)}")
        return missing

    def _complete(self, files: dict[str, Metadata[Any]], hours: float) -> list[str]:
        """Write ``files``, a snapshot and a timestamp when each meets its threshold and the
        online key is at hand, else stage them; what is missing."""
        missing = self._missing(files)
        roots = [m.signed for n, m in files.items() if n.endswith(".root.json")]
        root = roots[-1] if roots else self.root().signed
        online = self.at_hand(Snapshot.type, root)
        if not missing and not online:
            missing = ["the online key (online.pem) to publish it"]
        if missing:
            self.staged.mkdir(mode=0o700, parents=True, exist_ok=True)
            for name, metadata in files.items():
                self._write(metadata, name, self.staged)
            return missing
        for name, metadata in files.items():
            self._write(metadata, name)
            if name.endswith(".root.json"):
                self._write(metadata, "root.json")
        self._snapshot(hours, online[0])
        shutil.rmtree(self.staged, ignore_errors=True)
        return []

    def staged_files(self) -> dict[str, Metadata[Any]]:
        """The staged publication (name -> metadata, roots first, then targets, then nodes)."""
        if not self.staged.is_dir():
            return {}
        order = {Root.type: 0, Targets.type: 1}
        paths = sorted(self.staged.glob("*.json"), key=lambda p: (order.get(_role(p.name), 2),
                                                                   p.name))  # fmt: skip
        return {p.name: Metadata.from_bytes(p.read_bytes()) for p in paths}

    def sign_staged(self, hours: float) -> list[str]:
        """Add the signatures of the keys at hand to the staged publication, published once each
        file meets its threshold; what is still missing."""
        files = self.staged_files()
        if not files:
            raise RepositoryError(f"{self.staged} holds no publication waiting for signatures")
        root = self.root().signed
        for name, metadata in files.items():
            role = _role(name)
            if role == Root.type:
                signers = self.at_hand(Root.type, root)
                signers += self.at_hand(Root.type, metadata.signed)
                root = metadata.signed
            elif role == Targets.type:
                signers = self.at_hand(Targets.type, root)
            else:
                continue  # node roles are staged signed by their own keys
            self._add_signatures(metadata, signers)
        return self._complete(files, hours)

    def _refuse_if_staged(self) -> None:
        if self.staged_files():
            raise RepositoryError(f"a publication waits for signatures in {self.staged}: add them "
                                  "with --sign (or remove that directory to drop it)")  # fmt: skip

    def exists(self) -> bool:
        return (self.metadata / "root.json").is_file()

    def create(self, key_dir: Path, root_keys: int = 1, root_threshold: int = 1,
               targets_keys: int = 1, targets_threshold: int = 1) -> list[str]:  # fmt: skip
        """A new repository, no node, with new keys in ``key_dir`` (0700, never overwritten):
        ``root_keys`` of which ``root_threshold`` must sign, the same for targets, and the online
        key. The key files made."""
        asked = ((Root.type, root_keys, root_threshold),
                 (Targets.type, targets_keys, targets_threshold))  # fmt: skip
        for role, count, threshold in asked:
            if not 1 <= threshold <= count:
                raise RepositoryError(f"{role}: a threshold of {threshold} of {count} keys: "
                                      f"expected 1 to {count}")  # fmt: skip
        if self.exists():
            raise RepositoryError(f"{self.directory} already holds a repository")
        names = {role: [f"{role}.pem"] if count == 1 else [f"{role}-{n}.pem" for n in
                 range(1, count + 1)] for role, count, _ in asked}  # fmt: skip
        names |= {role: ["online.pem"] for role in ONLINE}
        files = sorted({n for group in names.values() for n in group})
        for name in files:
            if (key_dir / name).exists():
                raise RepositoryError(f"{key_dir / name} exists: make the repository with a "
                                      "new key directory")  # fmt: skip
        key_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        signers = {name: write_private_key(key_dir / name) for name in files}
        self.metadata.mkdir(parents=True, exist_ok=True)
        self.targets.mkdir(parents=True, exist_ok=True)
        root = Metadata(Root(expires=expiry(days=ROOT_DAYS), consistent_snapshot=True))
        for role, group in names.items():
            for name in group:
                root.signed.add_key(signers[name].public_key, role)
        root.signed.roles[Root.type].threshold = root_threshold
        root.signed.roles[Targets.type].threshold = targets_threshold
        self._add_signatures(root, [signers[n] for n in names[Root.type]])
        self._write(root, "1.root.json")
        self._write(root, "root.json")
        targets = Metadata(Targets(expires=expiry(days=TARGETS_DAYS)))
        targets.signed.delegations = tuf.Delegations(keys={}, roles={})
        self._add_signatures(targets, [signers[n] for n in names[Targets.type]])
        self._write(targets, "1.targets.json")
        self._snapshot(DEFAULT_TIMESTAMP_HOURS, signers["online.pem"])
        return files

    def _nodes(self) -> dict[str, Metadata[Targets]]:
        """Node name -> its role's current metadata, as the snapshot names it."""
        snapshot = self.current(Snapshot.type).signed
        delegations = self.current(Targets.type).signed.delegations
        found = {}
        for role in delegations.roles if delegations and delegations.roles else {}:
            version = snapshot.meta[f"{role}.json"].version
            data = (self.metadata / f"{version}.{role}.json").read_bytes()
            found[role.removeprefix(ROLE_PREFIX)] = Metadata[Targets].from_bytes(data)
        return found

    def node_targets(self) -> dict[str, bytes]:
        """Node name -> its published target's content (a sealed one's from ``plain/``, the
        administrators' copy, never served)."""
        found = {}
        for node, role in self._nodes().items():
            content = self._stored(node, role).read_bytes()
            if sealed.is_sealed(content):  # the administrators' copy of what was sealed
                content = (self.plain / self._stored(node, role).name).read_bytes()
            found[node] = content
        return found

    def publish(
        self,
        nodes: Mapping[str, Mapping[str, Any]],
        timestamp_hours: float,
        matrix_data: Mapping[str, str] | None = None,
        recipients: Mapping[str, X25519PublicKey] | None = None,
    ) -> Published:
        """Publish ``nodes`` (name -> settings; site matrix texts, sealing keys) in a new snapshot,
        changed nodes signed by their own keys, unlisted ones removed, nothing when nothing
        changed; adding or removing a node needs the targets keys' threshold, else it is staged."""
        self._refuse_if_staged()
        matrix_data, recipients = matrix_data or {}, recipients or {}
        roles = self._nodes()
        old = {}
        for name, content in self.node_targets().items():
            state = pulled.parse(content, name, None)
            recipient = sealed.recipient_of(self._stored(name, roles[name]).read_bytes())
            old[name] = (state.settings, state.matrix_data, recipient)
        serial = self.current(Snapshot.type).signed.version
        stale = expiry(days=NODE_DAYS / 2)
        changed = sorted(n for n in nodes if old.get(n) != (
            dict(nodes[n]), matrix_data.get(n), sealed.raw(recipients.get(n))))  # fmt: skip
        removed = sorted(set(old) - set(nodes))
        resign = sorted(n for n in set(nodes) & set(roles)
                        if n not in changed and roles[n].signed.expires < stale)  # fmt: skip
        if not changed and not removed and not resign:
            return Published(serial, [], [])
        serial += 1
        current = self.current(Targets.type)
        delegations = current.signed.delegations
        assert delegations is not None and delegations.roles is not None  # create() makes them
        files: dict[str, Metadata[Any]] = {}
        added = sorted(set(nodes) - set(roles))
        if added or removed:  # the targets keys at hand before a new node's key is made
            targets_signers = self.signers(Targets.type, self.root().signed)
            targets = current
            targets.signed.version += 1
            targets.signed.expires = expiry(days=TARGETS_DAYS)
            targets.signatures.clear()
            for name in removed:
                for keyid in delegations.roles.pop(role_of(name)).keyids:
                    delegations.keys.pop(keyid, None)
            for name in added:
                key = self.node_signer(name, None).public_key
                delegations.keys[key.keyid] = key
                delegations.roles[role_of(name)] = tuf.DelegatedRole(
                    role_of(name), [key.keyid], 1, True, paths=[pulled.target_path(name)]
                )
            self._add_signatures(targets, targets_signers)
            files[f"{targets.signed.version}.targets.json"] = targets
        (self.targets / "nodes").mkdir(parents=True, exist_ok=True)
        for name in sorted({*changed, *resign}):
            keyids = delegations.roles[role_of(name)].keyids
            signer = self.node_signer(name, keyids)
            plain = pulled.render(name, serial, nodes[name], matrix_data.get(name))
            content = sealed.seal(plain, name, recipients[name]) if name in recipients else plain
            path = pulled.target_path(name)
            info = TargetFile.from_data(path, content, ["sha256"])
            stored = f"{info.hashes['sha256']}.{name}.json"
            if content is not plain:
                self.plain.mkdir(mode=0o700, exist_ok=True)
                if not (self.plain / stored).exists():
                    write_atomically(self.plain / stored, plain, mode=0o600)
            if not (self.targets / "nodes" / stored).exists():
                write_atomically(self.targets / "nodes" / stored, content)
            # After every version it ever had: a node put back may have seen them.
            version = self.version(role_of(name)) + 1
            metadata = Metadata(Targets(version=version, expires=expiry(days=NODE_DAYS)))
            metadata.signed.targets[path] = info
            metadata.sign(signer)
            files[f"{version}.{role_of(name)}.json"] = metadata
        waiting = self._complete(files, timestamp_hours)
        return Published(serial, changed, removed, waiting)

    def _stored(self, node: str, role: Metadata[Targets]) -> Path:
        """``node``'s target as ``role`` signs it, in targets/nodes (its name, in plain/)."""
        info = role.signed.targets[pulled.target_path(node)]
        return self.targets / "nodes" / f"{info.hashes['sha256']}.{node}.json"

    def refresh_timestamp(self, hours: float) -> int:
        """Sign a new timestamp for the current snapshot (online key); its version."""
        version = self.current(Snapshot.type).signed.version
        return self._timestamp(version, hours, self.signer(Timestamp.type))

    def rotate(self, name: str, timestamp_hours: float) -> tuple[int, list[str]]:
        """A new key for the key file ``name`` (``root``, ``targets-2``...; the old kept as
        ``.retired-vN``) in a new root version signed by the old and new root's keys at hand;
        the new root's version, and the signatures still missing (then it is staged)."""
        if not ROTATABLE.fullmatch(name):
            raise RepositoryError(f"--rotate {name}: expected root, targets or online, or a "
                                  "key file's name without .pem (root-2, targets-1)")  # fmt: skip
        self._refuse_if_staged()
        file_name = f"{name}.pem"
        old_path = self.key_file(file_name)
        if old_path is None:
            raise self.absent(file_name)
        old_root = self.root().signed
        old_keyid = self.load(old_path).public_key.keyid
        roles = [r for r, pattern in KEY_PATTERNS.items() if pattern.fullmatch(file_name)]
        for role in roles:
            self.signers(role, old_root)  # every key of the role at hand is this repository's
        old_root_signers = self.signers(Root.type, old_root)
        version = old_root.version
        retired = old_path.with_name(f"{file_name}.retired-v{version}")
        shutil.move(old_path, retired)
        new_signer = write_private_key(old_path)
        root = self.root()  # the new version, from the old
        for role in roles:
            root.signed.revoke_key(old_keyid, role)
            root.signed.add_key(new_signer.public_key, role)
        root.signed.version = version + 1
        root.signed.expires = expiry(days=ROOT_DAYS)
        root.signatures.clear()
        # Signed by the old root's keys (which the node checks it with), and the new one's.
        self._add_signatures(root, old_root_signers + self.at_hand(Root.type, root.signed))
        files: dict[str, Metadata[Any]] = {f"{version + 1}.root.json": root}
        # Re-signed in a new version: a node that has the old one must see a newer one.
        if Targets.type in roles:
            targets = self.current(Targets.type)
            targets.signed.version += 1
            targets.signatures.clear()
            self._add_signatures(targets, self.at_hand(Targets.type, root.signed))
            files[f"{targets.signed.version}.targets.json"] = targets
        return version + 1, self._complete(files, timestamp_hours)
