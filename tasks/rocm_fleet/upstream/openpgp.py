"""Just enough OpenPGP (RFC 9580) to read a key's primary fingerprints and binary form."""

import base64
import hashlib

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
