"""A node's target sealed to its own X25519 key with HPKE (RFC 9180 base mode), the node's name
as HPKE's ``info``; TUF signs the sealed file (docs/pull-mode.md)."""

import base64
import json
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hpke, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model.pulled import PullRefused, seal_key_file

FORMAT = "rocm-fleet-pull-sealed/1"
SUITE = hpke.Suite(hpke.KEM.X25519, hpke.KDF.HKDF_SHA256, hpke.AEAD.CHACHA20_POLY1305)


def _info(node: str) -> bytes:
    return f"{FORMAT} {node}".encode()


def raw(key: X25519PublicKey | None) -> bytes | None:
    """``key``'s 32 bytes (None for None), to compare recipients."""
    if key is None:
        return None
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def seal(content: bytes, node: str, recipient: X25519PublicKey) -> bytes:
    """``content`` (a target) sealed to ``recipient``, the key of ``node`` alone."""
    document = {
        "format": FORMAT,
        "node": node,
        "recipient": base64.b64encode(raw(recipient) or b"").decode(),
        "sealed": base64.b64encode(SUITE.encrypt(content, recipient, _info(node))).decode(),
    }
    return (json.dumps(document, indent=1, sort_keys=True) + "\n").encode()


def _document(content: bytes) -> dict | None:
    try:
        document = json.loads(content)
    except ValueError:
        return None
    return document if isinstance(document, dict) and document.get("format") == FORMAT else None


def is_sealed(content: bytes) -> bool:
    return _document(content) is not None


def recipient_of(content: bytes) -> bytes | None:
    """The raw key a sealed target is sealed to; None for a plain one."""
    document = _document(content)
    return base64.b64decode(document["recipient"]) if document else None


def open_sealed(content: bytes, node: str, key: X25519PrivateKey | None) -> bytes:
    """The target inside ``content`` when it is sealed (to ``node``, with ``key``); a plain
    target as it is. PullRefused (``sealed``) when it can't be opened."""
    document = _document(content)
    if document is None:
        return content
    if key is None:
        raise PullRefused("sealed", "the target is sealed to a node key this node doesn't have "
                          "(a push installs it: rocm_pull_seal_keys)")  # fmt: skip
    try:
        return SUITE.decrypt(base64.b64decode(document["sealed"]), key, _info(node))
    except (InvalidTag, ValueError, KeyError, TypeError) as exc:
        raise PullRefused("sealed", f"the target can't be opened with this node's key "
                          f"({type(exc).__name__}): sealed to another key") from None  # fmt: skip


def load_key(path: Path) -> X25519PrivateKey:
    """The X25519 private key in PEM file ``path``."""
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    if not isinstance(key, X25519PrivateKey):
        raise ValueError(f"{path} holds no X25519 private key")
    return key


def node_key(directory: Path, node: str) -> X25519PrivateKey:
    """``node``'s sealing key in ``directory`` (``<node>.pem``, 0600), made when missing."""
    path = Path(seal_key_file(str(directory), node))
    if not path.exists():
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        key = X25519PrivateKey.generate()
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())  # fmt: skip
        write_atomically(path, pem, mode=0o600, exclusive=True)
    return load_key(path)
