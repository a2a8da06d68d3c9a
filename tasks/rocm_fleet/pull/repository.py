"""The fleet's TUF repository for pull mode (``rocm-fleet publish``): each pull node's settings
the target ``nodes/<name>.json`` of its own delegated role ``node-<name>``, published, staged
short of a threshold, signed and rotated; its metadata files each role's ``N.role.json``,
written atomically (docs/pull-mode.md); its keys in ``pull.keyring``."""

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from securesystemslib.signer import CryptoSigner
from tuf.api import metadata as tuf
from tuf.api.metadata import Metadata, MetaFile, Root, Snapshot, TargetFile, Targets, Timestamp
from tuf.api.serialization.json import JSONSerializer

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model import pulled
from rocm_fleet.pull import keyring, sealed
from rocm_fleet.pull.keyring import Keyring, RepositoryError, role_of

#: How long each metadata is valid (a node role's bounds a freeze; publish re-signs it at half).
ROOT_DAYS = 365
TARGETS_DAYS = 90
NODE_DAYS = 30
DEFAULT_TIMESTAMP_HOURS = 24
SNAPSHOT_DAYS = 90


def expiry(days: float = 0, hours: float = 0) -> datetime:
    """Now plus ``days`` and ``hours``, to the second: a metadata's expiry."""
    return (datetime.now(UTC) + timedelta(days=days, hours=hours)).replace(microsecond=0)


class MetadataFiles:
    """The metadata in ``directory`` (the repository's ``metadata/``)."""

    def __init__(self, directory: Path):
        self.directory, self._serializer = directory, JSONSerializer(compact=False)

    def current(self, role: str) -> Metadata[Any]:
        """The newest metadata of ``role`` (``N.role.json``), or the timestamp."""
        return Metadata.from_bytes((self.directory / self._current_name(role)).read_bytes())

    def _current_name(self, role: str) -> str:
        if role == Timestamp.type:
            return "timestamp.json"
        names = [p.name.split(".", 1) for p in self.directory.glob(f"*.{role}.json")]
        versions = [int(version) for version, rest in names if rest == f"{role}.json"]
        return f"{max(versions, default=0)}.{role}.json"

    def version(self, role: str) -> int:
        """The current version of ``role``'s metadata; 0 before the first."""
        if not (self.directory / self._current_name(role)).is_file():
            return 0
        return self.current(role).signed.version

    def write(self, metadata: Metadata[Any], name: str, directory: Path | None = None) -> None:
        """Written atomically (never half a file served) in ``directory`` (default: here)."""
        write_atomically((directory or self.directory) / name, metadata.to_bytes(self._serializer))

    def snapshot(self, timestamp_hours: float, online: CryptoSigner) -> None:
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
        self.write(snapshot, f"{snapshot_version}.snapshot.json")
        self.timestamp(snapshot_version, timestamp_hours, online)

    def timestamp(self, snapshot_version: int, hours: float, online: CryptoSigner) -> int:
        """A new timestamp naming ``snapshot_version``, valid ``hours``; its version."""
        version = self.version(Timestamp.type) + 1
        timestamp = Metadata(Timestamp(version=version, expires=expiry(hours=hours),
                                       snapshot_meta=MetaFile(snapshot_version)))  # fmt: skip
        timestamp.sign(online)
        self.write(timestamp, "timestamp.json")
        return version


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
        self.directory = directory
        self.metadata = directory / "metadata"
        self.targets = directory / "targets"
        self.staged = directory / "staged"  # waiting for more signatures: never served
        self.plain = directory / "plain"
        self.keys = Keyring(key_dirs, self.metadata / "root.json")
        self.files = MetadataFiles(self.metadata)

    def root(self) -> Metadata[Root]:
        return Metadata[Root].from_bytes((self.metadata / "root.json").read_bytes())

    def signer(self, role: str) -> CryptoSigner:
        """One signer of top-level ``role`` (as ``Keyring.signers``, of the current root)."""
        return self.keys.signers(role, self.root().signed)[0]

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
                targets = targets or self.files.current(Targets.type).signed
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
        online = self.keys.at_hand(Snapshot.type, root)
        if not missing and not online:
            missing = ["the online key (online.pem) to publish it"]
        if missing:
            self.staged.mkdir(mode=0o700, parents=True, exist_ok=True)
            for name, metadata in files.items():
                self.files.write(metadata, name, self.staged)
            return missing
        for name, metadata in files.items():
            self.files.write(metadata, name)
            if name.endswith(".root.json"):
                self.files.write(metadata, "root.json")
        self.files.snapshot(hours, online[0])
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
                signers = self.keys.at_hand(Root.type, root)
                signers += self.keys.at_hand(Root.type, metadata.signed)
                root = metadata.signed
            elif role == Targets.type:
                signers = self.keys.at_hand(Targets.type, root)
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
        names |= {role: ["online.pem"] for role in keyring.ONLINE}
        files = sorted({n for group in names.values() for n in group})
        for name in files:
            if (key_dir / name).exists():
                raise RepositoryError(f"{key_dir / name} exists: make the repository with a "
                                      "new key directory")  # fmt: skip
        key_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        signers = {name: keyring.write_private_key(key_dir / name) for name in files}
        self.metadata.mkdir(parents=True, exist_ok=True)
        self.targets.mkdir(parents=True, exist_ok=True)
        root = Metadata(Root(expires=expiry(days=ROOT_DAYS), consistent_snapshot=True))
        for role, group in names.items():
            for name in group:
                root.signed.add_key(signers[name].public_key, role)
        root.signed.roles[Root.type].threshold = root_threshold
        root.signed.roles[Targets.type].threshold = targets_threshold
        self._add_signatures(root, [signers[n] for n in names[Root.type]])
        self.files.write(root, "1.root.json")
        self.files.write(root, "root.json")
        targets = Metadata(Targets(expires=expiry(days=TARGETS_DAYS)))
        targets.signed.delegations = tuf.Delegations(keys={}, roles={})
        self._add_signatures(targets, [signers[n] for n in names[Targets.type]])
        self.files.write(targets, "1.targets.json")
        self.files.snapshot(DEFAULT_TIMESTAMP_HOURS, signers["online.pem"])
        return files

    def _nodes(self) -> dict[str, Metadata[Targets]]:
        """Node name -> its role's current metadata, as the snapshot names it."""
        snapshot = self.files.current(Snapshot.type).signed
        delegations = self.files.current(Targets.type).signed.delegations
        found = {}
        for role in delegations.roles if delegations and delegations.roles else {}:
            version = snapshot.meta[f"{role}.json"].version
            data = (self.metadata / f"{version}.{role}.json").read_bytes()
            found[role.removeprefix(keyring.ROLE_PREFIX)] = Metadata[Targets].from_bytes(data)
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
        serial = self.files.current(Snapshot.type).signed.version
        stale = expiry(days=NODE_DAYS / 2)
        changed = sorted(n for n in nodes if old.get(n) != (
            dict(nodes[n]), matrix_data.get(n), sealed.raw(recipients.get(n))))  # fmt: skip
        removed = sorted(set(old) - set(nodes))
        resign = sorted(n for n in set(nodes) & set(roles)
                        if n not in changed and roles[n].signed.expires < stale)  # fmt: skip
        if not changed and not removed and not resign:
            return Published(serial, [], [])
        serial += 1
        current = self.files.current(Targets.type)
        delegations = current.signed.delegations
        assert delegations is not None and delegations.roles is not None  # create() makes them
        files: dict[str, Metadata[Any]] = {}
        added = sorted(set(nodes) - set(roles))
        if added or removed:  # the targets keys at hand before a new node's key is made
            targets_signers = self.keys.signers(Targets.type, self.root().signed)
            targets = current
            targets.signed.version += 1
            targets.signed.expires = expiry(days=TARGETS_DAYS)
            targets.signatures.clear()
            for name in removed:
                for keyid in delegations.roles.pop(role_of(name)).keyids:
                    delegations.keys.pop(keyid, None)
            for name in added:
                key = self.keys.node_signer(name, None).public_key
                delegations.keys[key.keyid] = key
                delegations.roles[role_of(name)] = tuf.DelegatedRole(
                    role_of(name), [key.keyid], 1, True, paths=[pulled.target_path(name)]
                )
            self._add_signatures(targets, targets_signers)
            files[f"{targets.signed.version}.targets.json"] = targets
        (self.targets / "nodes").mkdir(parents=True, exist_ok=True)
        for name in sorted({*changed, *resign}):
            keyids = delegations.roles[role_of(name)].keyids
            signer = self.keys.node_signer(name, keyids)
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
            version = self.files.version(role_of(name)) + 1
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
        version = self.files.current(Snapshot.type).signed.version
        return self.files.timestamp(version, hours, self.signer(Timestamp.type))

    def rotate(self, name: str, timestamp_hours: float) -> tuple[int, list[str]]:
        """A new key for the key file ``name`` (``root``, ``targets-2``...; the old kept as
        ``.retired-vN``) in a new root version signed by the old and new root's keys at hand;
        the new root's version, and the signatures still missing (then it is staged)."""
        if not keyring.ROTATABLE.fullmatch(name):
            raise RepositoryError(f"--rotate {name}: expected root, targets or online, or a "
                                  "key file's name without .pem (root-2, targets-1)")  # fmt: skip
        self._refuse_if_staged()
        file_name = f"{name}.pem"
        old_path = self.keys.key_file(file_name)
        if old_path is None:
            raise self.keys.absent(file_name)
        old_root = self.root().signed
        old_keyid = self.keys.load(old_path).public_key.keyid
        roles = [r for r, pattern in keyring.KEY_PATTERNS.items() if pattern.fullmatch(file_name)]
        for role in roles:
            self.keys.signers(role, old_root)  # every key of the role at hand is this repository's
        old_root_signers = self.keys.signers(Root.type, old_root)
        version = old_root.version
        retired = old_path.with_name(f"{file_name}.retired-v{version}")
        shutil.move(old_path, retired)
        new_signer = keyring.write_private_key(old_path)
        root = self.root()  # the new version, from the old
        for role in roles:
            root.signed.revoke_key(old_keyid, role)
            root.signed.add_key(new_signer.public_key, role)
        root.signed.version = version + 1
        root.signed.expires = expiry(days=ROOT_DAYS)
        root.signatures.clear()
        # Signed by the old root's keys (which the node checks it with), and the new one's.
        self._add_signatures(root, old_root_signers + self.keys.at_hand(Root.type, root.signed))
        files: dict[str, Metadata[Any]] = {f"{version + 1}.root.json": root}
        # Re-signed in a new version: a node that has the old one must see a newer one.
        if Targets.type in roles:
            targets = self.files.current(Targets.type)
            targets.signed.version += 1
            targets.signatures.clear()
            self._add_signatures(targets, self.keys.at_hand(Targets.type, root.signed))
            files[f"{targets.signed.version}.targets.json"] = targets
        return version + 1, self._complete(files, timestamp_hours)
