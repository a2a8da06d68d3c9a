"""Small helpers shared by the lab modules: commands, cache paths, cache keys, locks, and
the Debian mirror the build machine uses (`debian_mirror`).

The lab runs as root and shells out a lot; one place for running commands keeps error
messages useful (the failing command and its stderr) instead of bare CalledProcessError.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from rocm_fleet.facts.apt import DebianMirror

#: Root of the repository (tests/lab/_util.py -> repo). Used as default cwd for pyinfra.
REPO_ROOT = Path(__file__).resolve().parents[2]

#: The interpreter running the lab; its bin dir holds pyinfra/pytest of the dev venv.
#: Not resolved: resolving a venv's python symlink would leave the venv.
PYTHON = Path(sys.executable)
VENV_BIN = PYTHON.parent

#: A clean PATH for everything the lab starts (the caller's PATH may hold pyenv shims).
CLEAN_PATH = f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class LabError(RuntimeError):
    """Raised when the lab itself (not the product under test) fails."""


#: Characters apt's URItoFileName escapes as %xx in a list file's name (apt-pkg/strutl.cc).
_APT_QUOTED = '\\|{}[]<>"^~_=!@#$%^&*'


@dataclass(frozen=True)
class Mirror:
    """The Debian mirror the lab builds its roots and sparse mirror from, and impersonates
    inside its network namespaces at its real name (``url`` as apt sources write it)."""

    url: str  #: "http://deb.debian.org/debian"

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def path(self) -> str:
        """The archive's path on its host, without slashes around it: "debian"."""
        return urlsplit(self.url).path.strip("/")

    @property
    def list_prefix(self) -> str:
        """How apt names the list files of this mirror in /var/lib/apt/lists:
        "deb.debian.org_debian_" (URItoFileName: no scheme, escapes, "/" -> "_")."""
        bare = f"{self.host}/{self.path}/" if self.path else f"{self.host}/"
        quoted = "".join(f"%{ord(c):02x}" if c in _APT_QUOTED else c for c in bare)
        return quoted.replace("/", "_")


@functools.cache
def debian_mirror() -> Mirror:
    """The Debian archive the build machine's own apt sources name, read the way the
    product's ``DebianMirror`` fact reads a host's (so the lab's hosts name the same
    mirror the deploy then finds in their sources)."""
    fact = DebianMirror()
    proc = subprocess.run(
        ["sh", "-c", fact.command()], env=clean_env(), capture_output=True, text=True
    )
    url = fact.process(proc.stdout.splitlines())
    if url is None:
        raise LabError(
            "the build machine's apt sources name no Debian archive (a `URIs:` line in "
            "/etc/apt/sources.list.d/debian.sources or a `deb` line in /etc/apt/sources.list "
            "ending in /debian): the lab builds its roots and mirror from that archive"
        )
    parts = urlsplit(url)
    # Minimal roots have no CA bundle before the deploy installs ca-certificates (from this
    # very mirror), and the lab server answers on ports 80 and 443 only.
    if parts.scheme != "http" or parts.port is not None or parts.username is not None:
        raise LabError(
            f"the build machine's Debian mirror {url} cannot be impersonated by the lab: "
            "it needs a plain http://HOST/PATH mirror (no https, port or user)"
        )
    return Mirror(url)


def cache_dir() -> Path:
    """The persistent cache (debootstrap tarballs, mirror); shared between labs."""
    path = Path(os.environ.get("RF_LAB_CACHE", "/var/cache/rocm-fleet-lab"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(*parts: object) -> str:
    """A short stable hash of the inputs of a cached artefact, so changed inputs rebuild."""
    blob = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def clean_env(**extra: str) -> dict[str, str]:
    """A minimal environment: the caller's PIP_*, PYTHON*, proxies etc. must not leak."""
    env = {"PATH": CLEAN_PATH, "LANG": "C.UTF-8", "HOME": "/root"}
    env.update(extra)
    return env


def run(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    check: bool = True,
    env: dict[str, str] | None = None,
    capture: bool = True,
    **kw: object,
) -> subprocess.CompletedProcess[str]:
    """Run a command with a clean environment; on failure raise LabError with its output."""
    args = [str(c) for c in cmd]
    proc = subprocess.run(
        args,
        env=clean_env() if env is None else env,
        text=True,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.PIPE if capture else None,
        check=False,
        **kw,  # type: ignore[arg-type]
    )
    if check and proc.returncode != 0:
        raise LabError(
            f"command failed ({proc.returncode}): {' '.join(args)}\n"
            f"stdout: {(proc.stdout or '')[-3000:]}\nstderr: {(proc.stderr or '')[-3000:]}"
        )
    return proc


def chroot(root: Path, *cmd: str, **kw: object) -> subprocess.CompletedProcess[str]:
    """Run a command inside a root with a Debian-friendly non-interactive environment."""
    env = clean_env(DEBIAN_FRONTEND="noninteractive", HOME="/root")
    return run(["chroot", str(root), *cmd], env=env, **kw)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Serialise cache builds between concurrent labs (two CI jobs, xdist workers)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def rmtree(path: Path) -> None:
    """Remove a tree that may hold root-owned read-only files; refuses to follow mounts."""
    if not path.exists() and not path.is_symlink():
        return
    run(["rm", "-rf", "--one-file-system", "--", str(path)])
