"""The pull repository's private keys: found in the key directories (first wins), loaded (0600
only), checked against a root's key ids, and made (Ed25519, 0600)."""

import re
from collections.abc import Iterator
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from securesystemslib.signer import CryptoSigner
from tuf.api.metadata import Root, Snapshot, Targets, Timestamp

from rocm_fleet.atomic import write_atomically

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


class Keyring:
    """The keys in ``key_dirs`` (first name wins) of the repository whose root is ``root_file``."""

    def __init__(self, key_dirs: list[Path], root_file: Path):
        self.key_dirs, self.root_file = key_dirs, root_file

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
                raise RepositoryError(f"{path} is not a {role} key of {self.root_file} (version "
                                      f"{root.version})")  # fmt: skip
            signers[signer.public_key.keyid] = signer
        if not signers:
            name = "online.pem" if role in ONLINE else f"{role}.pem (or {role}-N.pem)"
            raise self.absent(f"{name} (the {role} key)")
        return list(signers.values())

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
