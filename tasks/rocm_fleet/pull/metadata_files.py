"""The pull repository's metadata files: each role's current version (``N.role.json``), written
atomically, and the online role's snapshot and timestamp signed over what is there."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import Metadata, MetaFile, Snapshot, Targets, Timestamp
from tuf.api.serialization.json import JSONSerializer

from rocm_fleet.atomic import write_atomically

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
