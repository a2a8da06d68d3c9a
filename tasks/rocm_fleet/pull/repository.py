"""The fleet's TUF repository for pull mode (``rocm-fleet publish``): each pull node's settings
a target ``nodes/<name>.json``, signed with ``root.pem``, ``targets.pem`` and ``online.pem``
(their custody: docs/pull-mode.md).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from securesystemslib.signer import CryptoSigner, Signer
from tuf.api.metadata import (
    Metadata,
    MetaFile,
    Root,
    Snapshot,
    TargetFile,
    Targets,
    Timestamp,
)
from tuf.api.serialization.json import JSONSerializer

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model import pulled

#: The roles and the key file that signs each.
KEY_FILES = {
    Root.type: "root.pem",
    Targets.type: "targets.pem",
    Snapshot.type: "online.pem",
    Timestamp.type: "online.pem",
}
#: What ``rotate`` takes: the key file names without ``.pem``.
ROTATABLE = ("root", "targets", "online")
#: How long each metadata is valid (the timestamp's expiry is the freeze bound).
ROOT_DAYS = 365
TARGETS_DAYS = 90
DEFAULT_TIMESTAMP_HOURS = 24


class RepositoryError(Exception):
    """A problem with the repository or its keys the user can fix (one line)."""


@dataclass(frozen=True)
class Published:
    """A publication: the targets version (every node's serial), nodes changed and removed."""

    version: int
    changed: list[str]
    removed: list[str]


def _expiry(days: float = 0, hours: float = 0) -> datetime:
    return (datetime.now(UTC) + timedelta(days=days, hours=hours)).replace(microsecond=0)


def _write_private_key(path: Path) -> CryptoSigner:
    """A new Ed25519 key in ``path`` (mode 0600 from its creation; never overwritten)."""
    signer = CryptoSigner(Ed25519PrivateKey.generate())
    write_atomically(path, signer.private_bytes, mode=0o600, exclusive=True)
    return signer


class PullRepository:
    """A TUF repository in ``directory``, signed with keys from ``key_dirs`` (first wins)."""

    def __init__(self, directory: Path, key_dirs: list[Path]):
        self.directory = directory
        self.metadata = directory / "metadata"
        self.targets = directory / "targets"
        self.key_dirs = key_dirs
        self._serializer = JSONSerializer(compact=False)

    # --- keys ---------------------------------------------------------------------------------

    def _key_file(self, name: str) -> Path | None:
        for directory in self.key_dirs:
            if (directory / name).is_file():
                return directory / name
        return None

    def signer(self, role: str) -> Signer:
        """The signer of ``role``; RepositoryError when its file is missing, not 0600 or not
        the root's key for the role."""
        name = KEY_FILES[role]
        path = self._key_file(name)
        if path is None:
            where = ", ".join(str(d) for d in self.key_dirs)
            raise RepositoryError(f"no {name} (the {role} key) in {where}: bring the key "
                                  "directory that holds it (--keys)")  # fmt: skip
        mode = path.stat().st_mode & 0o777
        if mode & 0o077:
            raise RepositoryError(f"{path} is mode {mode:04o}: a private key must be 0600")
        signer = CryptoSigner(load_pem_private_key(path.read_bytes(), None))
        root = self.root().signed
        if signer.public_key.keyid not in root.roles[role].keyids:
            raise RepositoryError(
                f"{path} is not a {role} key of {self.metadata / 'root.json'} (version "
                f"{root.version})"
            )
        return signer

    # --- reading and writing metadata ---------------------------------------------------------

    def root(self) -> Metadata[Root]:
        return Metadata[Root].from_bytes((self.metadata / "root.json").read_bytes())

    def _current(self, role: str) -> Metadata[Any]:
        """The newest targets or snapshot (``N.role.json``), or the timestamp."""
        return Metadata.from_bytes((self.metadata / self._current_name(role)).read_bytes())

    def _current_name(self, role: str) -> str:
        if role == Timestamp.type:
            return "timestamp.json"
        versions = [int(p.name.split(".", 1)[0]) for p in self.metadata.glob(f"*.{role}.json")]
        return f"{max(versions, default=0)}.{role}.json"

    def _version(self, role: str) -> int:
        """The current version of ``role``'s metadata; 0 before the first."""
        if not (self.metadata / self._current_name(role)).is_file():
            return 0
        return self._current(role).signed.version

    def _write(self, metadata: Metadata[Any], name: str) -> None:
        """Written atomically (never half a file served)."""
        write_atomically(self.metadata / name, metadata.to_bytes(self._serializer))

    def _sign(self, metadata: Metadata[Any], role: str) -> None:
        metadata.signatures.clear()
        metadata.sign(self.signer(role), append=True)

    def _write_root(self, root: Metadata[Root]) -> None:
        self._write(root, f"{root.signed.version}.root.json")
        self._write(root, "root.json")

    # --- making, publishing, rotating ---------------------------------------------------------

    def exists(self) -> bool:
        return (self.metadata / "root.json").is_file()

    def create(self, key_dir: Path) -> None:
        """A new repository, no node, with new keys in ``key_dir`` (0700; never overwritten)."""
        if self.exists():
            raise RepositoryError(f"{self.directory} already holds a repository")
        key_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        signers: dict[str, CryptoSigner] = {}
        for name in sorted(set(KEY_FILES.values())):
            if (key_dir / name).exists():
                raise RepositoryError(f"{key_dir / name} exists: make the repository with a "
                                      "new key directory")  # fmt: skip
            signers[name] = _write_private_key(key_dir / name)
        self.metadata.mkdir(parents=True, exist_ok=True)
        self.targets.mkdir(parents=True, exist_ok=True)
        root = Metadata(Root(expires=_expiry(days=ROOT_DAYS), consistent_snapshot=True))
        for role, name in KEY_FILES.items():
            root.signed.add_key(signers[name].public_key, role)
        root.sign(signers["root.pem"])
        self._write_root(root)
        targets = Metadata(Targets(expires=_expiry(days=TARGETS_DAYS)))
        self._publish_targets(targets, DEFAULT_TIMESTAMP_HOURS)

    def node_targets(self) -> dict[str, bytes]:
        """Node name -> its published target's content."""
        found = {}
        targets = self._current(Targets.type).signed
        for path, info in targets.targets.items():
            node = path.removeprefix("nodes/").removesuffix(".json")
            digest = info.hashes["sha256"]
            found[node] = (self.targets / "nodes" / f"{digest}.{node}.json").read_bytes()
        return found

    def publish(
        self,
        nodes: Mapping[str, Mapping[str, Any]],
        timestamp_hours: float,
        matrix_data: Mapping[str, str] | None = None,
    ) -> Published:
        """Publish ``nodes`` (name -> settings; ``matrix_data``: name -> site matrix text) as a
        new targets version, removing unlisted nodes; signs nothing when nothing changed."""
        matrix_data = matrix_data or {}
        current = self._current(Targets.type)
        old = {}
        for name, content in self.node_targets().items():
            state = pulled.parse(content, name, None)
            old[name] = (state.settings, state.matrix_data)
        changed = sorted(n for n in nodes if old.get(n) != (dict(nodes[n]), matrix_data.get(n)))
        removed = sorted(set(old) - set(nodes))
        if not changed and not removed:
            return Published(current.signed.version, [], [])
        version = current.signed.version + 1
        targets = Metadata(Targets(version=version, expires=_expiry(days=TARGETS_DAYS)))
        (self.targets / "nodes").mkdir(parents=True, exist_ok=True)
        for name in sorted(nodes):
            content = pulled.render(name, version, nodes[name], matrix_data.get(name))
            path = pulled.target_path(name)
            info = TargetFile.from_data(path, content, ["sha256"])
            stored = self.targets / "nodes" / f"{info.hashes['sha256']}.{name}.json"
            if not stored.exists():
                write_atomically(stored, content)
            targets.signed.targets[path] = info
        self._publish_targets(targets, timestamp_hours)
        return Published(version, changed, removed)

    def _publish_targets(self, targets: Metadata[Targets], timestamp_hours: float) -> None:
        """Sign and write ``targets`` and the snapshot and timestamp that name it."""
        self._sign(targets, Targets.type)
        self._write(targets, f"{targets.signed.version}.targets.json")
        snapshot_version = self._version(Snapshot.type) + 1
        snapshot = Metadata(Snapshot(version=snapshot_version,
                                     expires=_expiry(days=TARGETS_DAYS)))  # fmt: skip
        snapshot.signed.meta["targets.json"] = MetaFile(version=targets.signed.version)
        self._sign(snapshot, Snapshot.type)
        self._write(snapshot, f"{snapshot_version}.snapshot.json")
        self._timestamp(snapshot_version, timestamp_hours)

    def _timestamp(self, snapshot_version: int, hours: float) -> None:
        version = self._version(Timestamp.type) + 1
        meta = MetaFile(version=snapshot_version)
        timestamp = Metadata(Timestamp(version=version, expires=_expiry(hours=hours),
                                       snapshot_meta=meta))  # fmt: skip
        self._sign(timestamp, Timestamp.type)
        self._write(timestamp, "timestamp.json")

    def refresh_timestamp(self, hours: float) -> int:
        """Sign a new timestamp for the current snapshot (online key); its version."""
        self._timestamp(self._current(Snapshot.type).signed.version, hours)
        return self._current(Timestamp.type).signed.version

    def rotate(self, name: str, timestamp_hours: float) -> int:
        """A new key for ``name`` (root, targets, online; the old kept as ``.retired-vN``) in a
        new root version signed by the old root key (and the new one, for root), what it signs
        re-signed; the new root's version."""
        if name not in ROTATABLE:
            raise RepositoryError(f"--rotate {name}: expected one of {', '.join(ROTATABLE)}")
        file_name = f"{name}.pem"
        old_root_signer = self.signer(Root.type)
        roles = [role for role, key_file in KEY_FILES.items() if key_file == file_name]
        for role in roles:
            self.signer(role)  # the old key is there, and this repository's
        old_path = self._key_file(file_name)
        assert old_path is not None  # signer() found it
        root = self.root()
        version = root.signed.version
        retired = old_path.with_name(f"{file_name}.retired-v{version}")
        shutil.move(old_path, retired)
        new_signer = _write_private_key(old_path)
        for role in roles:
            for keyid in list(root.signed.roles[role].keyids):
                root.signed.revoke_key(keyid, role)
            root.signed.add_key(new_signer.public_key, role)
        root.signed.version = version + 1
        root.signed.expires = _expiry(days=ROOT_DAYS)
        root.signatures.clear()
        # Signed by the old root's keys (which the client checks it with), and the new one's.
        root.sign(old_root_signer, append=True)
        if name == "root":
            root.sign(new_signer, append=True)
        self._write_root(root)
        # Re-signed in new versions: a client that has the old ones must see newer ones.
        if name in ("targets", "online"):
            targets = self._current(Targets.type)
            targets.signed.version += 1
            self._publish_targets(targets, timestamp_hours)
        return version + 1
