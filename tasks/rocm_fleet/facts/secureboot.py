"""Secure Boot facts: the Secure Boot state and whether a certificate is (or will be) a MOK."""

import re

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import ABSENT, MISSING, RC_PREFIX, joined, quote, split_rc
from rocm_fleet.model.answers import MokKeyStateDict, MokPendingDict, SecureBootDict

# mokutil --sb-state's answers (lowercased), in the order they are looked for.
_SB_STATE = (
    ("no_efi", "efi variables are not supported"),
    ("unsupported", "doesn't support secure boot"),
    ("enabled", "^secureboot enabled$"),
    ("disabled", "^secureboot disabled$"),
)


class SecureBoot(FactBase[SecureBootDict]):
    """Secure Boot ``state`` (enabled, disabled, no_efi, unsupported: EFI without the variable,
    absent: no mokutil, unknown), shim validation and setup mode, from ``mokutil --sb-state``'s
    text (its exit status is ignored)."""

    @staticmethod
    def default() -> SecureBootDict:
        return {
            "state": "unknown",
            "shim_validation_disabled": False,
            "setup_mode": False,
            "message": "",
        }

    def command(self) -> str:
        return (
            "if command -v mokutil >/dev/null 2>&1; then "
            f'mokutil --sb-state </dev/null 2>&1; echo "{RC_PREFIX}$?"; '
            f"else echo {ABSENT}; fi"
        )

    def process(self, output: list[str]) -> SecureBootDict:
        lines, rc = split_rc(output)
        if rc is None and any(line.strip() == ABSENT for line in lines):
            return self.default() | {"state": "absent"}
        text = joined(lines)
        lowered = text.lower()
        return {
            "state": _said(_SB_STATE, lowered),
            "shim_validation_disabled": "validation is disabled in shim" in lowered,
            "setup_mode": "setup mode" in lowered,
            "message": text,
        }


def _said(answers: tuple[tuple[str, str], ...], text: str) -> str:
    """The state of the first of ``answers`` whose pattern ``text`` matches, else unknown."""
    return next((state for state, said in answers if re.search(said, text, re.M)), "unknown")


# mokutil --test-key's answers, in the order they are looked for.
_TEST_KEY = (
    ("pending", "is already in the enrollment request"),
    ("not_enrolled", "is not enrolled"),
    ("enrolled", "is already enrolled|is already in db"),
    ("blocked", "is blocked in (dbx|MokListX)"),
)


class MokKeyState(FactBase[MokKeyStateDict]):
    """Whether a certificate is a MOK (``state`` enrolled, pending, not_enrolled, blocked,
    missing: no file, absent: no mokutil, unknown), from ``mokutil --test-key``'s text (its exit
    codes differ between releases)."""

    @staticmethod
    def default() -> MokKeyStateDict:
        return {"state": "unknown", "message": ""}

    def command(self, path: str) -> str:
        cert = quote(path)
        return (
            f"if ! command -v mokutil >/dev/null 2>&1; then echo {ABSENT}; "
            f"elif ! test -e {cert}; then echo {MISSING}; "
            f'else mokutil --test-key {cert} </dev/null 2>&1; echo "{RC_PREFIX}$?"; fi'
        )

    def process(self, output: list[str]) -> MokKeyStateDict:
        lines, rc = split_rc(output)
        markers = {line.strip() for line in lines}
        if rc is None and ABSENT in markers:
            return {"state": "absent", "message": ""}
        if rc is None and MISSING in markers:
            return {"state": "missing", "message": ""}
        text = joined(lines)
        return {"state": _said(_TEST_KEY, text), "message": text}


class MokPending(FactBase[MokPendingDict | None]):
    """Whether a certificate's SHA1 is among the pending MOK request's (``mokutil
    --list-new``); None without mokutil or the certificate."""

    def command(self, path: str) -> str:
        cert = quote(path)
        return (
            f"if ! command -v mokutil >/dev/null 2>&1 || ! test -e {cert}; then "
            f"echo {ABSENT}; else "
            f'echo "__sha1=$(sha1sum {cert} | cut -c1-40)"; '
            "mokutil --list-new </dev/null 2>&1 || true; fi"
        )

    def process(self, output: list[str]) -> MokPendingDict | None:
        if any(line.strip() == ABSENT for line in output):
            return None
        fingerprint, requests = None, []
        for line in output:
            line = line.strip()
            if line.startswith("__sha1="):
                raw = line[len("__sha1=") :].lower()
                fingerprint = ":".join(raw[i : i + 2] for i in range(0, len(raw), 2))
            elif line.lower().startswith("sha1 fingerprint:"):
                requests.append(line.split(":", 1)[1].strip().lower())
        return {
            "pending": fingerprint is not None and fingerprint in requests,
            "fingerprint": fingerprint,
            "requests": requests,
        }
