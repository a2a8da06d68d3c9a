"""Secure Boot and DKMS: the module signing key exists and is enrolled as a MOK (or queued).

Only with ``driver: dkms`` (the distro's inbox driver is signed by the distro) and only when
``mokutil --sb-state`` says Secure Boot is enabled. Then:

1. the DKMS signing certificate exists (Debian ``/var/lib/dkms/mok.pub``, Ubuntu
   ``/var/lib/shim-signed/mok/MOK.der``), made the way DKMS makes it when missing
   (dkms.in ``prepare_mok``: ``openssl req -new -x509 -nodes -days 36500 -subj
   "/CN=DKMS module signing key" -newkey rsa:2048 ... -outform DER``, with the codeSigning
   EKU DKMS >= 3.1.7 adds; Ubuntu: ``update-secureboot-policy --new-key``; fact sheet §5);
2. enrolled (``mokutil --test-key``, text parsed: the exit codes flipped between releases)
   or already queued (``mokutil --list-new`` lists its SHA1): nothing to do;
3. otherwise queued with ``mokutil --import <cert> --hash-file <file>``. The one-time
   password (typed at the console in MokManager on the next boot) comes from the
   environment variable ``mok_password_env`` names, or a prompt, on the machine running
   pyinfra. Only its SHA-512 crypt hash (what ``mokutil --generate-hash`` prints and
   ``--hash-file`` reads: lcp/mokutil get_hash_from_file/decode_pass, method SHA-512, 16
   character salt) is computed here, in Python, and uploaded to a 0700 directory on /run
   (a tmpfs) and removed after the import: the password is never on the host, in a log or
   in any process's arguments.

Secure Boot, shim validation and existing keys are never touched.
"""

from __future__ import annotations

import getpass
import hashlib
import io
import logging
import os
import re
import secrets
import sys
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import (
    FileUploadCommand,
    FunctionCommand,
    QuoteString,
    StringCommand,
    deploy,
    operation,
)
from pyinfra.api.operation import OperationMeta
from pyinfra.facts.files import File

from tasks import matrix, reboot, settings
from tasks.facts import MokKeyState, MokPending, SecureBoot
from tasks.kernel import MARK_REBOOT
from tasks.operations import debian_packages, failure

if TYPE_CHECKING:
    from tasks.config import Config

logger = logging.getLogger("pyinfra")


def env_name(value: object) -> str | None:
    valid = isinstance(value, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value)
    return None if valid else "an environment variable name"


SETTINGS = (
    settings.Setting(
        "mok_password_env", "ROCM_FLEET_MOK_PASSWORD",
        "Environment variable (where pyinfra runs) with the one-time MOK password to type at "
        "the console; unset: asked once when pyinfra runs in a terminal",
        env_name,
    ),
)  # fmt: skip

# (certificate, private key) DKMS signs with, per distro (fact sheet §5).
SIGNING_KEYS = {
    "debian": ("/var/lib/dkms/mok.pub", "/var/lib/dkms/mok.key"),
    "ubuntu": ("/var/lib/shim-signed/mok/MOK.der", "/var/lib/shim-signed/mok/MOK.priv"),
}
HASH_DIR = "/run/rocm-fleet"
HASH_PATH = f"{HASH_DIR}/mok-import.hash"
PENDING = "MOK enrollment pending: confirm it at the console on the next boot"
# mokutil's PASSWORD_MIN / PASSWORD_MAX (lcp/mokutil src/mokutil.c).
PASSWORD_MIN, PASSWORD_MAX = 1, 256

# --- SHA-512 crypt ($6$), as glibc crypt(3) and mokutil --generate-hash produce it ------------

_B64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ORDER = [
    (0, 21, 42), (22, 43, 1), (44, 2, 23), (3, 24, 45), (25, 46, 4), (47, 5, 26), (6, 27, 48),
    (28, 49, 7), (50, 8, 29), (9, 30, 51), (31, 52, 10), (53, 11, 32), (12, 33, 54),
    (34, 55, 13), (56, 14, 35), (15, 36, 57), (37, 58, 16), (59, 17, 38), (18, 39, 60),
    (40, 61, 19), (62, 20, 41),
]  # fmt: skip


def sha512_crypt(password: str, salt: str | None = None) -> str:
    """``$6$<salt>$<hash>`` by Ulrich Drepper's SHA-crypt spec (5000 rounds, the default
    mokutil uses), so no crypt(3) binding is needed (Python's ``crypt`` is gone in 3.13)."""
    if salt is None:
        salt = "".join(secrets.choice(_B64) for _ in range(16))
    key, s = password.encode(), salt.encode()[:16]
    b = hashlib.sha512(key + s + key).digest()
    a = hashlib.sha512(key + s)
    n = len(key)
    while n > 64:
        a.update(b)
        n -= 64
    a.update(b[:n])
    n = len(key)
    while n:
        a.update(b if n & 1 else key)
        n >>= 1
    da = a.digest()
    dp = hashlib.sha512(key * len(key)).digest()
    p = (dp * (len(key) // 64 + 1))[: len(key)]
    ds = hashlib.sha512(s * (16 + da[0])).digest()
    ss = (ds * (len(s) // 64 + 1))[: len(s)]
    c = da
    for i in range(5000):
        h = hashlib.sha512(p if i & 1 else c)
        if i % 3:
            h.update(ss)
        if i % 7:
            h.update(p)
        h.update(c if i & 1 else p)
        c = h.digest()
    out = []
    for x, y, z in _ORDER:
        w = (c[x] << 16) | (c[y] << 8) | c[z]
        for _ in range(4):
            out.append(_B64[w & 0x3F])
            w >>= 6
    w = c[63]
    for _ in range(2):
        out.append(_B64[w & 0x3F])
        w >>= 6
    return f"$6${s.decode()}${''.join(out)}"


# --- the password ---------------------------------------------------------------------------

_prompted: dict[str, str] = {}


def mok_password(env: str) -> tuple[str | None, str]:
    """(password, problem): from the environment, else one prompt per run in a terminal."""
    password = os.environ.get(env)
    if password is None and env in _prompted:
        password = _prompted[env]
    if password is None and sys.stdin.isatty() and not host.state.is_executing:
        first = getpass.getpass(f"One-time MOK password (to type at the console; ${env}): ")
        if first != getpass.getpass("Again: "):
            return None, "the two MOK passwords typed differ"
        password = _prompted[env] = first
    if password is None:
        return None, (
            f"Secure Boot is on and the DKMS key must be enrolled, but no MOK password: set the "
            f"environment variable {env} where pyinfra runs (or run it in a terminal to be asked)"
        )
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        return None, f"the MOK password in ${env} must be {PASSWORD_MIN}-{PASSWORD_MAX} characters"
    return password, ""


# --- operations -----------------------------------------------------------------------------


def _sb_enabled() -> tuple[bool, str]:
    sb = host.get_fact(SecureBoot) or SecureBoot.default()
    return sb["state"] == "enabled", sb["state"]


@operation()
def signing_key(cert: str, key: str, distro_id: str):
    """
    Create the DKMS module signing key and certificate, as DKMS would, when Secure Boot is
    on and they are missing. An existing key is never replaced.

    + cert: the DER certificate DKMS signs with
    + key: its private key
    + distro_id: "debian" or "ubuntu" (Ubuntu's DKMS uses update-secureboot-policy)
    """
    enabled, state = _sb_enabled()
    if not enabled:
        host.noop(f"Secure Boot {state}: no signing key needed")
        return
    if host.get_fact(File, path=cert):
        host.noop(f"{cert} exists")
        return
    if distro_id == "ubuntu":
        yield "update-secureboot-policy --new-key"
        return
    directory = cert.rsplit("/", 1)[0]
    script = f"""
set -eu
if test -e {key}; then
    echo "{key} exists without {cert}; not replacing a signing key" >&2
    exit 1
fi
install -d -m 0755 {directory}
umask 077
openssl req -new -x509 -nodes -days 36500 -subj "/CN=DKMS module signing key" \\
    -newkey rsa:2048 -keyout {key} -addext "extendedKeyUsage=codeSigning" \\
    -outform DER -out {cert} 2>/dev/null
chmod 0644 {cert}
"""
    yield StringCommand("sh", "-c", QuoteString(script.strip()))


def _announce_pending(state, host) -> bool:
    host.log_styled(PENDING, fg="yellow", log_func=logger.warning)
    reboot.note(host.name, PENDING)
    return True


@operation()
def mok_enrolled(cert: str, password_env: str):
    """
    Queue the signing certificate for MOK enrollment unless it is enrolled or queued.

    + cert: the DER certificate
    + password_env: environment variable holding the one-time password (or a prompt)
    """
    enabled, state = _sb_enabled()
    if not enabled:
        host.noop(f"Secure Boot {state}: nothing to enrol")
        return
    key_state = (host.get_fact(MokKeyState, path=cert) or MokKeyState.default())["state"]
    pending = host.get_fact(MokPending, path=cert)
    if key_state == "enrolled":
        host.noop(f"{cert} is enrolled")
        return
    if key_state == "pending" or (pending and pending["pending"]):
        host.noop(f"{cert} is queued; {PENDING}")
        if host.state.is_executing:
            _announce_pending(host.state, host)
        return
    if key_state == "blocked":
        yield failure(f"{cert} is blocked (dbx/MokListX); make a new signing key")
        return
    if key_state not in ("not_enrolled", "missing"):
        yield failure(f"cannot tell whether {cert} is enrolled: mokutil says {key_state}")
        return
    password, problem = mok_password(password_env)
    if password is None:
        yield failure(problem)
        return
    hashed = sha512_crypt(password)
    del password
    yield StringCommand("install", "-d", "-m", "0700", HASH_DIR)
    yield FileUploadCommand(io.StringIO(hashed + "\n"), HASH_PATH)
    script = f"""
set -eu
trap 'rm -f {HASH_PATH}' EXIT
chmod 0600 {HASH_PATH}
{MARK_REBOOT}
mokutil --import {cert} --hash-file {HASH_PATH}
mark_reboot "MOK enrollment pending (confirm it at the console)"
"""
    yield StringCommand("sh", "-c", QuoteString(script.strip()))
    yield FunctionCommand(_announce_pending, (), {})


@deploy("Secure Boot")
def configure_secure_boot(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """Returns (reboot reason, operation) pairs for tasks.reboot."""
    if config.driver != "dkms":
        return []
    cert, key = SIGNING_KEYS[row.id]
    packages = ["mokutil", "openssl"] + (["shim-signed"] if row.id == "ubuntu" else [])
    debian_packages(name="Install mokutil and openssl", packages=packages)
    signing_key(name="Create the DKMS signing key if missing", cert=cert, key=key,
                distro_id=row.id)  # fmt: skip
    queued = mok_enrolled(
        name="Queue the DKMS signing key for MOK enrollment",
        cert=cert,
        password_env=config.mok_password_env,
    )
    return [("MOK enrollment pending", queued)]
