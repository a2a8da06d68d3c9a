"""Secure Boot operations: the DKMS signing key exists and is enrolled as a MOK (or queued).
Only the one-time password's SHA-512 crypt hash reaches the host, never the password."""

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
from rocm_fleet.operations.reboot import NOTES

logger = logging.getLogger("pyinfra")

PENDING = "MOK enrollment pending: confirm it at the console on the next boot"
# mokutil's PASSWORD_MIN / PASSWORD_MAX (lcp/mokutil src/mokutil.c).
PASSWORD_MIN, PASSWORD_MAX = 1, 256

_B64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# The hash's byte triples, in SHA-crypt's output order.
_ORDER = [(i, i + 21, i + 42)[i % 3 :] + (i, i + 21, i + 42)[: i % 3] for i in range(21)]


def sha512_crypt(password: str, salt: str | None = None) -> str:
    """``$6$<salt>$<hash>`` by the SHA-crypt spec, 5000 rounds (as ``mokutil --generate-hash``); a
    random 16-character salt by default."""
    if salt is None:
        salt = "".join(secrets.choice(_B64) for _ in range(16))
    key, s = password.encode(), salt.encode()[:16]
    b = hashlib.sha512(key + s + key).digest()
    a = hashlib.sha512(key + s + _repeated(b, len(key)))
    n = len(key)
    while n:
        a.update(b if n & 1 else key)
        n >>= 1
    da = a.digest()
    p = _repeated(hashlib.sha512(key * len(key)).digest(), len(key))
    ss = _repeated(hashlib.sha512(s * (16 + da[0])).digest(), len(s))
    c = da
    for i in range(5000):
        h = hashlib.sha512(p if i & 1 else c)
        if i % 3:
            h.update(ss)
        if i % 7:
            h.update(p)
        h.update(c if i & 1 else p)
        c = h.digest()
    out = "".join(_b64((c[x] << 16) | (c[y] << 8) | c[z], 4) for x, y, z in _ORDER)
    return f"$6${s.decode()}${out}{_b64(c[63], 2)}"


def _repeated(data: bytes, length: int) -> bytes:
    return (data * (length // len(data) + 1))[:length]


def _b64(word: int, chars: int) -> str:
    return "".join(_B64[(word >> 6 * i) & 0x3F] for i in range(chars))


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
    if PENDING not in NOTES.setdefault(host.name, []):
        NOTES[host.name].append(PENDING)
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
