"""Small helpers shared by the lab modules: commands, cache paths, cache keys, locks.

The lab runs as root and shells out a lot; one place for running commands keeps error
messages useful (the failing command and its stderr) instead of bare CalledProcessError.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

#: Root of the repository (tests/lab/_util.py -> repo). Used as default cwd for pyinfra.
REPO_ROOT = Path(__file__).resolve().parents[2]

#: The interpreter running the lab; its bin dir holds pyinfra/pytest of the dev venv.
#: Not resolved: resolving a venv's python symlink would leave the venv.
PYTHON = Path(sys.executable)
VENV_BIN = PYTHON.parent

#: A clean PATH for everything the lab starts (the caller's PATH may hold pyenv shims).
CLEAN_PATH = f"{VENV_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

DEBIAN_MIRROR = "http://deb.debian.org/debian"


class LabError(RuntimeError):
    """Raised when the lab itself (not the product under test) fails."""


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


def copy_tree(src: Path, dst: Path) -> None:
    """cp -a keeps device nodes, owners, xattrs and hard links, which a root needs."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    run(["cp", "-a", "--", str(src), str(dst)])


def which(name: str) -> str:
    found = shutil.which(name, path=CLEAN_PATH)
    if not found:
        raise LabError(f"{name} not found; install it (see tests/lab/README.md)")
    return found
