"""Debian roots for lab hosts: debootstrap minbase, then an "sshbase", and for the hosts of a
Slurm cluster (slurm.py) a "slurmbase" on top of it, all cached as tar.zst.

Built from the Debian mirror the build machine's apt sources name (`_util.debian_mirror`),
so the roots' sources.list names that mirror, which the lab then serves at its real name.

Why two layers: debootstrap is the slow step (~30 s per suite) and changes only when the
suite does; sshbase adds just what the lab needs to reach a host (openssh-server, a normal
user).  Everything the product's deploy installs itself (ca-certificates, curl, gnupg,
python3, ...) is deliberately NOT in the base, so the deploy is tested from a minimal host.

Cache file names carry a hash of their inputs (suite, package list, recipe version), so
editing a list below rebuilds on the next run and stale tarballs are simply never read.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ._util import (
    LabError,
    cache_dir,
    cache_key,
    chroot,
    debian_mirror,
    file_lock,
    rmtree,
    run,
)

SUITES = ("bookworm", "trixie")

#: Packages on top of minbase.  Keep this minimal: the deploy must install the rest.
SSHBASE_PACKAGES = ("openssh-server",)

#: What a Slurm site has installed on its controller and nodes (Debian's own Slurm and
#: MUNGE); a host gets them with ``HostSpec(base="slurm")``.  The product never installs
#: Slurm: the site does.
SLURMBASE_PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")

#: The root a host's overlay lies on (``HostSpec.base``).
BASES = ("sshbase", "slurm")

#: The unprivileged user the deploy is expected to add to video/render.
LAB_USER = "alice"
LAB_UID = 1001

#: Bump when the build recipe below changes in a way the inputs don't capture.
RECIPE = 3

POLICY_RC_D = "#!/bin/sh\n# rocm-fleet lab: never start services inside a lab root.\nexit 101\n"


def _check_suite(suite: str) -> None:
    if suite not in SUITES:
        raise LabError(f"unsupported suite {suite!r}; known: {', '.join(SUITES)}")


def minbase_key(suite: str) -> str:
    return cache_key("minbase", suite, debian_mirror().url, RECIPE)


def sshbase_key(suite: str) -> str:
    return cache_key("sshbase", minbase_key(suite), SSHBASE_PACKAGES, LAB_USER, LAB_UID, RECIPE)


def slurmbase_key(suite: str) -> str:
    return cache_key("slurmbase", sshbase_key(suite), SLURMBASE_PACKAGES, RECIPE)


def minbase_tarball(suite: str) -> Path:
    """Path of the cached `debootstrap --variant=minbase` root, building it if missing."""
    _check_suite(suite)
    target = cache_dir() / f"minbase-{suite}-{minbase_key(suite)}.tar.zst"
    with file_lock(cache_dir() / f".lock-minbase-{suite}"):
        if not target.exists():
            with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="build-") as tmp:
                root = Path(tmp) / "root"
                try:
                    run(
                        ["debootstrap", "--variant=minbase", suite, root, debian_mirror().url],
                        timeout=900,
                    )
                    chroot(root, "apt-get", "clean")
                    install_policy_rc_d(root)
                    pack(root, target)
                finally:
                    rmtree(root)
    return target


def sshbase_tarball(suite: str) -> Path:
    """Path of the cached sshbase root (minbase + openssh-server + alice), building it."""
    _check_suite(suite)
    target = cache_dir() / f"sshbase-{suite}-{sshbase_key(suite)}.tar.zst"
    base = minbase_tarball(suite)
    with file_lock(cache_dir() / f".lock-sshbase-{suite}"):
        if not target.exists():
            with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="build-") as tmp:
                root = Path(tmp) / "root"
                try:
                    unpack(base, root)
                    _build_sshbase(root)
                    pack(root, target)
                finally:
                    rmtree(root)
    return target


def slurmbase_tarball(suite: str) -> Path:
    """Path of the cached slurmbase root (sshbase + Debian's Slurm and MUNGE), building it."""
    _check_suite(suite)
    target = cache_dir() / f"slurmbase-{suite}-{slurmbase_key(suite)}.tar.zst"
    base = sshbase_tarball(suite)
    with file_lock(cache_dir() / f".lock-slurmbase-{suite}"):
        if not target.exists():
            with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="build-") as tmp:
                root = Path(tmp) / "root"
                try:
                    unpack(base, root)
                    _install(root, SLURMBASE_PACKAGES)
                    # Each cluster writes its own key (slurm.py); one cached in the base
                    # would be every lab's.
                    (root / "etc/munge/munge.key").unlink(missing_ok=True)
                    pack(root, target)
                finally:
                    rmtree(root)
    return target


def _install(root: Path, packages: tuple[str, ...]) -> None:
    """apt-get install into a root from the machine's Debian mirror, leaving no lists
    behind (a fresh host has none; the deploy runs apt update itself)."""
    (root / "etc/resolv.conf").unlink(missing_ok=True)
    (root / "etc/resolv.conf").write_text(Path("/etc/resolv.conf").read_text())
    chroot(root, "apt-get", "update", timeout=600)
    chroot(root, "apt-get", "install", "-y", "--no-install-recommends", *packages, timeout=900)
    chroot(root, "apt-get", "clean")
    for entry in (root / "var/lib/apt/lists").iterdir():
        if entry.is_file():
            entry.unlink()
    (root / "etc/resolv.conf").write_text("nameserver 127.0.0.1\n")


def _build_sshbase(root: Path) -> None:
    # The build chroot shares the machine's network, so it can reach the Debian mirror.
    _install(root, SSHBASE_PACKAGES)
    chroot(
        root, "useradd", "--create-home", "--uid", str(LAB_UID), "--shell", "/bin/bash", LAB_USER
    )
    # Per-host keys are generated at host creation; cached keys would be shared by all hosts.
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()


def install_policy_rc_d(root: Path) -> None:
    """Make invoke-rc.d refuse to start services (the lab has no init in its roots)."""
    path = root / "usr/sbin/policy-rc.d"
    path.write_text(POLICY_RC_D)
    path.chmod(0o755)


def pack(root: Path, target: Path) -> None:
    """tar.zst a root atomically (write to a temp name, then rename)."""
    tmp = target.with_name(target.name + ".part")
    run(["tar", "-C", root, "--numeric-owner", "--xattrs", "--zstd", "-cf", tmp, "."])
    tmp.rename(target)


def unpack(tarball: Path, root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    run(["tar", "-C", root, "--numeric-owner", "--xattrs", "--zstd", "-xf", tarball])


def sshbase_dir(suite: str) -> Path:
    """An extracted sshbase in the cache, used read-only as the overlayfs lower layer of
    every host of that suite (no per-lab extraction; concurrent labs may share it)."""
    return _extracted(sshbase_tarball(suite), f".lock-sshbase-{suite}")


def base_dir(suite: str, base: str) -> Path:
    """The extracted root a host of ``HostSpec(suite=suite, base=base)`` lies on."""
    if base not in BASES:
        raise LabError(f"unknown host base {base!r}; known: {', '.join(BASES)}")
    if base == "slurm":
        return _extracted(slurmbase_tarball(suite), f".lock-slurmbase-{suite}")
    return sshbase_dir(suite)


def _extracted(tarball: Path, lock: str) -> Path:
    target = tarball.with_name(tarball.name.removesuffix(".tar.zst") + ".d")
    with file_lock(cache_dir() / lock):
        if not target.exists():
            tmp = Path(tempfile.mkdtemp(dir=cache_dir(), prefix="build-"))
            try:
                unpack(tarball, tmp / "root")
                (tmp / "root").rename(target)
            finally:
                rmtree(tmp)
    return target
