"""OpenPGP keys read (RFC 9580: primary fingerprints, binary form) and an InRelease checked as
apt does: gpgv with the pinned key alone, Valid-Until, suite."""

import base64
import datetime
import email.utils
import hashlib
import subprocess
import tempfile
from pathlib import Path

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


class SignatureError(Exception):
    """An InRelease that does not verify under apt's policy; names the URL and the reason."""


# RFC 9580 §9.5 hash algorithm ids.
HASH_NAMES = {1: "MD5", 2: "SHA-1", 3: "RIPEMD-160", 8: "SHA-256", 9: "SHA-384", 10: "SHA-512",
              11: "SHA-224", 12: "SHA3-256", 14: "SHA3-512"}  # fmt: skip
ACCEPTED_HASHES = frozenset({8, 9, 10, 11, 12, 14})

# Status keywords that make a signature worthless (apt: WorthlessSigners) or bad.
_WORTHLESS = {"EXPKEYSIG": "made by a key that has expired",
              "REVKEYSIG": "made by a key that is revoked", "EXPSIG": "expired"}  # fmt: skip
_BAD = {"BADSIG": "bad (the text or the signature was changed)"}


def verified_text(inrelease: bytes, key: bytes, url: str) -> str:
    """The text gpgv verifies with ``key`` alone under apt's policy; else SignatureError."""
    with tempfile.TemporaryDirectory(prefix="rocm-fleet-gpg-") as home:
        keyring = Path(home) / "keyring.gpg"
        keyring.write_bytes(key)
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
