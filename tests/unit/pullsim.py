"""Pull mode's repository on a simulated mirror, as python-tuf's own tests do it
(tests/repository_simulator.py, github.com/theupdateframework/python-tuf: a
``FetcherInterface`` serving metadata and targets from memory): what ``pull.repository``
published (the product's own publisher makes the metadata), served from a dict that a test
edits as whoever writes the mirror would, and fetched by the node's client
(``pull.client.fetch``, its ``fetcher``). No socket, no file outside the test's tmp."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

from cryptography.hazmat.primitives.serialization import load_pem_private_key
from securesystemslib.signer import CryptoSigner
from tuf.api.exceptions import DownloadHTTPError
from tuf.api.metadata import Metadata, MetaFile, Snapshot, TargetFile
from tuf.ngclient import FetcherInterface

from rocm_fleet.model import pulled
from rocm_fleet.pull import client as pull_client
from unit.pullrepo import Fleet

#: The repository's URL on the simulated mirror (a name that resolves nowhere).
URL = "https://mirror.invalid/fleet"
#: The size of what the simulator hands TUF at a time, as the HTTP fetcher's chunks.
CHUNK = 64 * 1024


class RepositorySimulator(FetcherInterface):
    """The mirror in memory: ``files`` (a path under ``URL``, ``metadata/2.snapshot.json``,
    ``targets/nodes/<sha256>.node1.json`` -> its bytes) is what it serves, anything else
    answers 404; ``fetched`` lists the paths asked for, in order."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.fetched: list[str] = []

    def serve(self, directory: Path) -> None:
        """Serve what a repository in ``directory`` published (its metadata and targets, as
        the mirror is given them), and nothing else."""
        self.files = {
            path.relative_to(directory).as_posix(): path.read_bytes()
            for top in ("metadata", "targets")
            for path in sorted((directory / top).rglob("*"))
            if path.is_file()
        }

    def _fetch(self, url: str) -> Iterator[bytes]:
        path = url.removeprefix(f"{URL}/")
        self.fetched.append(path)
        data = self.files.get(path) if path != url else None
        if data is None:
            raise DownloadHTTPError(f"{url} answered HTTP 404", 404)
        return (data[i : i + CHUNK] for i in range(0, len(data), CHUNK))

    # --- what an attacker who writes the mirror does with it --------------------------------

    def metadata(self, name: str) -> Metadata:
        """The served metadata file ``name`` (``timestamp.json``, ``2.node-node1.json``)."""
        return Metadata.from_bytes(self.files[f"metadata/{name}"])

    def newest(self, role: str) -> Metadata:
        """The served metadata of ``role`` of the highest version."""
        names = [p.split("/", 1)[1] for p in self.files if p.startswith("metadata/")]
        versions = [int(n.split(".", 1)[0]) for n in names if n.split(".", 1)[1] == f"{role}.json"]
        return self.metadata(f"{max(versions)}.{role}.json")

    def put(self, name: str, metadata: Metadata) -> None:
        self.files[f"metadata/{name}"] = metadata.to_bytes()

    def put_target(self, node: str, content: bytes) -> TargetFile:
        """``content`` served as ``node``'s target (under its hashed name, as the publisher
        stores it); the target's info for a role to name."""
        info = TargetFile.from_data(pulled.target_path(node), content, ["sha256"])
        self.files[f"targets/nodes/{info.hashes['sha256']}.{node}.json"] = content
        return info

    def target(self, node: str) -> str:
        """The path of the served target of ``node`` (one alone)."""
        nodes = (p for p in self.files if p.startswith("targets/nodes/"))
        (path,) = (p for p in nodes if p.endswith(f".{node}.json"))
        return path

    def forge(
        self, files: dict[str, Metadata], online: CryptoSigner, expires: datetime | None = None
    ) -> None:
        """Serve ``files`` (name -> metadata, signed as the attacker could) with a new snapshot
        and timestamp naming them (valid until ``expires``, else as before), signed by the online
        key (kept on the mirror: the attacker has it)."""
        snapshot = self.newest(Snapshot.type)
        snapshot.signed.version += 1
        snapshot.signed.expires = expires or snapshot.signed.expires
        for name, metadata in files.items():
            self.put(name, metadata)
            snapshot.signed.meta[name.split(".", 1)[1]] = MetaFile(version=metadata.signed.version)
        snapshot.signatures.clear()
        snapshot.sign(online)
        self.put(f"{snapshot.signed.version}.snapshot.json", snapshot)
        timestamp = self.metadata("timestamp.json")
        timestamp.signed.version += 1
        timestamp.signed.snapshot_meta = MetaFile(version=snapshot.signed.version)
        timestamp.signed.expires = expires or timestamp.signed.expires
        timestamp.signatures.clear()
        timestamp.sign(online)
        self.put("timestamp.json", timestamp)


class SimulatedFleet(Fleet):
    """The administrators' repository served by a ``RepositorySimulator`` (``sim``), the node
    fetching from it with the product's client."""

    def __init__(
        self, tmp: Path, root: tuple[int, int] = (1, 1), targets: tuple[int, int] = (1, 1)
    ):
        super().__init__(tmp, root, targets)
        self.sim = RepositorySimulator()
        self.mirror()

    def mirror(self) -> None:
        """The repository as published copied to the mirror (an rsync of the directory)."""
        self.sim.serve(self.repository.directory)

    def fetch(self, node: str, seal_key: Path | None) -> pulled.PulledState:
        return pull_client.fetch(URL, self.metadata, self.trusted_root, node, None, seal_key,
                                 fetcher=self.sim)  # fmt: skip


def unsynced(monkeypatch) -> None:
    """For the test: files written whole as ever (``atomic.write_atomically``, tested in
    test_atomic.py) but never flushed to the disk (``os.fsync``, a no-op): no case here
    survives a crash, and the ~20 fsyncs a publication makes were most of its time (the
    pure tier keeps to its minute)."""
    monkeypatch.setattr(os, "fsync", lambda descriptor: None)


def signer(path: Path) -> CryptoSigner:
    """The key in ``path`` (a key file the publisher made), as a thief of it signs with it."""
    return CryptoSigner(load_pem_private_key(path.read_bytes(), None))


def tuf_now(monkeypatch, when: datetime) -> None:
    """TUF's client reads ``when`` as now (its expiry checks: trusted_metadata_set's
    ``datetime.datetime.now(datetime.timezone.utc)``)."""

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return when if tz is None else when.astimezone(tz)

    import tuf.ngclient._internal.trusted_metadata_set as trusted

    monkeypatch.setattr(trusted, "datetime", SimpleNamespace(datetime=Clock, timezone=UTC))
