"""An ``InRelease`` checked as apt does: gpgv with the pinned key alone, Valid-Until, suite."""

import datetime
import email.utils
import subprocess
import tempfile
from pathlib import Path


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
