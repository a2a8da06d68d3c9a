"""Just enough OpenPGP (RFC 4880 / RFC 9580) to read a published key's primary fingerprints
and its binary form, so ``rocm-fleet matrix check``, ``rocm-fleet bundle`` and the hosts'
keyring fact can check AMD's keys against the matrix in whichever form AMD serves them.

Reads armored keys, binary keys, and a binary key followed by an armored copy of it (which
stable.repo.amd.com is reported to serve): packets are read until a byte that can't start
one. Fingerprints: v4 = SHA-1 over 0x99, the two-byte length and the key packet (RFC 4880
§12.2); v5 / v6 = SHA-256 over 0x9a / 0x9b, a four-byte length and the packet (RFC 9580
§5.5.4).

Why not gpg or a library (measured on a 2-core machine, an armored RSA-4096 key with a
subkey, as AMD's are; issue 18): the controller reads every host's keyrings while planning
(``facts.apt.KeyringFingerprints``: the survey brings each keyring back as base64 in its
one round trip), two per host. This reads a key in 160 us; ``gpg --show-keys --with-colons``
with a throwaway home took 27.8 ms (173x: 2.8 s of a 50-host plan), and would make gpg a
requirement of the machine that runs pyinfra, which needs none today (the hosts' gpg
checks the keys they install: files/scripts/verified-keyring.sh). pysequoia 0.1.35 (Sequoia,
maintained) took 590 us in a 9.2 MB native wheel; PGPy's last release is 0.6.0 (2022-11).
And neither gpg 2.2.40 nor Sequoia reads the binary-plus-armored form as a whole (gpg: exit 2,
"invalid packet (ctb=2d)"; Sequoia: "Malformed packet: Truncated packet"), so the framing
here would stay anyway. The tests check these answers against the fingerprints gpg itself
gives for keys it made (tests/integration/test_matrix_check.py).
"""

from __future__ import annotations

import base64
import hashlib

PUBLIC_KEY = 6  # packet tag of a primary public key (subkeys are 14)


def dearmor(data: bytes) -> bytes:
    """The binary form of an ASCII-armored block (armor headers and checksum skipped);
    ``data`` unchanged when it isn't armored."""
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
    """The key's packets in binary form, as gpgv reads a keyring: dearmored, or the binary
    part of a binary key followed by an armored copy."""
    binary = dearmor(data)
    ends = [end for _tag, _body, end in _packets(binary)]
    return binary[: ends[-1] if ends else 0]


def primary_fingerprints(data: bytes) -> list[str]:
    """The fingerprints (upper-case hex) of the primary keys in a published key file."""
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
