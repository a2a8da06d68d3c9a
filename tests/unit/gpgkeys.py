"""Throwaway OpenPGP keys for the unit tests, made by gpg itself in a private home."""

from __future__ import annotations

import subprocess
from pathlib import Path


def run_gpg(home: Path, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    """gpg in ``home``, non-interactive, with no passphrase; fails the test on an error."""
    return subprocess.run(
        ["gpg", "--homedir", str(home), "--batch", "--yes", "--pinentry-mode", "loopback",
         "--passphrase", "", *args],
        input=data, capture_output=True, check=True, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip


class Gpg:
    """A throwaway ed25519 signing key in a private home (its daemons stopped by close)."""

    def __init__(self, home: Path, uid: str = "rocm-fleet test <test@invalid>"):
        self.home = home
        home.mkdir(mode=0o700, exist_ok=True)
        home.chmod(0o700)
        self(*("--quick-gen-key", uid, "ed25519", "sign", "never"))
        listing = self("--with-colons", "--list-keys").stdout.decode()
        self.fingerprint = next(
            line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:")
        )

    def __call__(self, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
        return run_gpg(self.home, *args, data=data)

    def clearsign(self, text: str) -> bytes:
        return self("--clearsign", data=text.encode()).stdout

    def close(self) -> None:
        subprocess.run(["gpgconf", "--homedir", str(self.home), "--kill", "all"], check=False)
