"""Secure Boot operations: the DKMS signing key exists and is enrolled as a MOK (or queued).
Only the one-time password's SHA-512 crypt hash reaches the host, never the password."""

from __future__ import annotations

import getpass
import hashlib
import io
import logging
import os
import secrets
import sys

from pyinfra import host
from pyinfra.api import FileUploadCommand, FunctionCommand, StringCommand, operation

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.run import executing
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.secureboot import MokKeyState, MokPending, SecureBoot
from rocm_fleet.model import paths
from rocm_fleet.operations._script import failure, script
from rocm_fleet.operations.reboot import note

logger = logging.getLogger("pyinfra")

PENDING = "MOK enrollment pending: confirm it at the console on the next boot"
# mokutil's PASSWORD_MIN / PASSWORD_MAX (lcp/mokutil src/mokutil.c).
PASSWORD_MIN, PASSWORD_MAX = 1, 256

_B64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ORDER = [
    (0, 21, 42), (22, 43, 1), (44, 2, 23), (3, 24, 45), (25, 46, 4), (47, 5, 26), (6, 27, 48),
    (28, 49, 7), (50, 8, 29), (9, 30, 51), (31, 52, 10), (53, 11, 32), (12, 33, 54),
    (34, 55, 13), (56, 14, 35), (15, 36, 57), (37, 58, 16), (59, 17, 38), (18, 39, 60),
    (40, 61, 19), (62, 20, 41),
]  # fmt: skip


def sha512_crypt(password: str, salt: str | None = None) -> str:
    """``$6$<salt>$<hash>`` by the SHA-crypt spec, 5000 rounds (as ``mokutil --generate-hash``); a
    random 16-character salt by default."""
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


_prompted: dict[str, str] = {}


def mok_password(env: str) -> tuple[str | None, str]:
    """(password, problem): from the environment, else one prompt per run in a terminal."""
    password = os.environ.get(env, _prompted.get(env))
    if password is None and sys.stdin.isatty():
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


def _sb_enabled() -> tuple[bool, str]:
    sb = read_fact(SecureBoot) or SecureBoot.default()
    return sb["state"] == "enabled", sb["state"]


@operation()
def signing_key(cert: str, key: str, distro_id: str):
    """Create the DKMS signing ``key`` and ``cert`` when Secure Boot is on and they are missing
    (Ubuntu: ``update-secureboot-policy``); never replaces one."""
    enabled, state = _sb_enabled()
    if not enabled:
        host.noop(f"Secure Boot {state}: no signing key needed")
        return
    if read_fact(FileDigest, path=cert):
        host.noop(f"{cert} exists")
        return
    if distro_id == "ubuntu":
        yield "update-secureboot-policy --new-key"
        return
    yield script("signing-key", cert, key)


def _announce_pending(state, host) -> bool:
    host.log_styled(PENDING, fg="yellow", log_func=logger.warning)
    note(host.name, PENDING)
    return True


@operation()
def mok_enrolled(cert: str, password_env: str):
    """Queue ``cert`` for MOK enrollment unless it is enrolled or queued; the one-time password
    comes from the environment variable ``password_env``, else a prompt."""
    enabled, state = _sb_enabled()
    if not enabled:
        host.noop(f"Secure Boot {state}: nothing to enrol")
        return
    key_state = (read_fact(MokKeyState, path=cert) or MokKeyState.default())["state"]
    pending = read_fact(MokPending, path=cert)
    if key_state == "enrolled":
        host.noop(f"{cert} is enrolled")
        return
    if key_state == "pending" or (pending and pending["pending"]):
        host.noop(f"{cert} is queued; {PENDING}")
        if executing():
            _announce_pending(None, host)
        return
    if key_state == "blocked":
        yield failure(f"{cert} is blocked (dbx/MokListX); make a new signing key")
        return
    if key_state not in ("not_enrolled", "missing"):
        yield failure(f"cannot tell whether {cert} is enrolled: mokutil says {key_state}")
        return
    # A command before the password: planning stops at the first, so it never prompts.
    yield StringCommand("install", "-d", "-m", "0700", paths.RUN_DIR)
    password, problem = mok_password(password_env)
    if password is None:
        yield failure(problem)
        return
    hashed = sha512_crypt(password)
    del password
    yield FileUploadCommand(io.StringIO(hashed + "\n"), paths.MOK_HASH)
    yield script("mok-import", cert, paths.MOK_HASH)
    yield FunctionCommand(_announce_pending, (), {})
