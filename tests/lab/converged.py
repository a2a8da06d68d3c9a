"""Converged roots, cached like the base roots: a host of ``HostSpec(converged=True)`` starts
as the product's first deploy left a host of its kind, without running that deploy again.

The first lab that asks for a kind of host (its suite, base, hardware profile, machine and
inventory data: what shapes the converge; never its name) runs the deploy on it once and
saves what the deploy changed (the host's overlay upper dir, sshd stopped) as
``converged-<digest>-<kind>.d`` in the cache; every later lab mounts that as a lower layer
between the host's own upper dir and its base root, a restore that copies nothing. The
digest hashes the lab's code and fixtures, the product (``tasks/``, ``files/``,
``deploy.py``, ``pyproject.toml``), pyinfra's version and the lab's identity (the signing key
and CA every converged root trusts, `upstreams.identity`), so any change converges afresh;
``rocm-fleet-lab prune-cache`` removes entries of other digests.

What customises a host (name, host keys, /etc/hosts, the lab CA file, hardware profile,
machine state) is written again on every lab, over the restored root. The first deploy of a
fresh node is not covered here: modules that assert its output keep ``converged=False``.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pyinfra

from rocm_fleet.model.matrix import Release

from ._util import REPO_ROOT, cache_dir, cache_key, file_lock, rmtree, run
from .amd_repo import is_classic
from .mirror import mirror_key
from .roots import slurmbase_key, sshbase_key

#: Bump when what is saved, or how, changes in a way the inputs don't capture.
RECIPE = 1

REPO = Path(REPO_ROOT)
#: What the digest hashes (files under them; of tests/lab only the lab's code, not its tests
#: or README), relative to the repository.
INPUTS = ("tasks", "files", "deploy.py", "pyproject.toml", "tests/lab", "tests/fixtures")


@functools.cache
def _tree_digest() -> str:
    digest = hashlib.sha256()
    for top in INPUTS:
        path = REPO / top
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for file in files:
            built = any(p == "__pycache__" or p.endswith(".egg-info") for p in file.parts)
            lab_text = file.parent == REPO / "tests/lab" and (
                file.suffix != ".py" or file.name.startswith("test_")
            )
            if file.is_file() and not built and not lab_text:
                digest.update(str(file.relative_to(REPO)).encode() + b"\0")
                digest.update(file.read_bytes())
    return digest.hexdigest()


def digest(identity: Path) -> str:
    """What every converged root of this checkout and lab identity shares."""
    return cache_key("converged", RECIPE, _tree_digest(), pyinfra.__version__, identity.name)


def kind_key(spec: object, suite: str, base: str, served: Sequence[Release], catalog: bool) -> str:
    """A host's kind: what the converge depends on besides the digest (not its name). Of
    the releases the lab serves, the Core SDK ones count: they share one flat repository
    per distro, whose index the converged root's apt lists hold (a classic release has a
    folder of its own)."""
    base_key = slurmbase_key(suite) if base == "slurm" else sshbase_key(suite)
    fields = {
        "served": sorted(r.version for r in served if not is_classic(r)),
        "catalog": catalog,
        "suite": suite,
        "base": base_key,
        "mirror": mirror_key(suite),
        "profile": spec.profile,  # type: ignore[attr-defined]
        "machine": dataclasses.asdict(spec.machine),  # type: ignore[attr-defined]
        "data": json.dumps(spec.data, sort_keys=True, default=repr),  # type: ignore[attr-defined]
    }
    return cache_key(fields)


def path(identity: Path, spec: object, served: Sequence[Release], catalog: bool) -> Path:
    """Where the converged root of ``spec``'s kind, in a lab serving ``served`` (and with
    ``catalog``), is (or will be) cached."""
    kind = kind_key(spec, spec.suite, spec.base, served, catalog)  # type: ignore[attr-defined]
    return cache_dir() / f"converged-{digest(identity)}-{kind}.d"


def save(upper: Path, target: Path) -> None:
    """Copy a stopped host's overlay upper dir (whiteouts and overlay xattrs kept) to
    ``target`` atomically; a root another lab saved first wins."""
    with file_lock(cache_dir() / f".lock-{target.name}"):
        if target.exists():
            return
        tmp = Path(tempfile.mkdtemp(dir=cache_dir(), prefix="build-"))
        try:
            run(["cp", "-a", "--preserve=all", f"{upper}/.", tmp / "root"])
            (tmp / "root").rename(target)
        finally:
            rmtree(tmp)


def is_current(name: str, identity: Path) -> bool:
    """Whether a cache entry's name is of this checkout's digest (prune-cache)."""
    return name.startswith(f"converged-{digest(identity)}-")
