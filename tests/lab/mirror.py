"""A sparse local Debian mirror: real signed indexes, only the .debs the deploy needs.

Why sparse and real: lab hosts are offline, and apt must verify Debian's own signatures
exactly as on a production host.  So the InRelease/Packages files are the real ones,
copied from a throwaway root after `apt-get update`, and the pool holds only what
`apt-get install --download-only` (the normal apt client, run in a copy of the host base)
fetched for MIRROR_PACKAGES (with Recommends, since the deploy may install them).
apt asks for Packages.xz/.gz first; those 404 and it falls back to the uncompressed file
listed in the (real) InRelease, so nothing needs re-signing.

The tree mirrors the URL layout of the Debian mirror the build machine uses
(`_util.debian_mirror`, e.g. `debian/dists`, `debian/pool` for http://deb.debian.org/debian),
so the lab server serves it under that mirror's host name.  The result is cached per base
suite, keyed on the sshbase (which carries the mirror URL) and the package lists.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import unquote

from . import roots
from ._util import LabError, cache_dir, cache_key, chroot, debian_mirror, file_lock, rmtree

#: What the product's deploy installs from Debian (their dependencies come along); nginx
#: serves the fleet mirror (tasks/rocm_fleet/deploy/mirror.py).
MIRROR_PACKAGES = ["ca-certificates", "curl", "gnupg", "python3-venv", "python3-pip", "nginx"]

#: Extra Debian suites per base suite: {base suite: {extra suite: [packages]}}.  Packages
#: are fetched with `-t <extra suite>`, e.g. {"bookworm": {"bookworm-backports":
#: ["linux-image-amd64", "linux-headers-amd64"]}}.
MIRROR_EXTRA_SUITES: dict[str, dict[str, list[str]]] = {"bookworm": {}, "trixie": {}}

#: Extra packages from the base suite itself, per base suite (on top of MIRROR_PACKAGES).
MIRROR_SUITE_PACKAGES: dict[str, list[str]] = {"bookworm": [], "trixie": []}

# Kernel, driver and Secure Boot (tasks/rocm_fleet/deploy/kernel.py, driver.py, secureboot.py): the
# bookworm-backports kernel a Debian 12 host with an RDNA4 GPU gets, and what a DKMS host
# needs from bookworm itself: headers for the stock kernel (the lab's running-kernel
# double reports that kernel, see machine.py), mokutil and openssl (the signing cert).
MIRROR_EXTRA_SUITES["bookworm"]["bookworm-backports"] = ["linux-image-amd64", "linux-headers-amd64"]
MIRROR_SUITE_PACKAGES["bookworm"] += ["linux-headers-amd64", "mokutil", "openssl"]
# The site proxy of the proxy tests (tests/e2e/test_offline.py): Debian's tinyproxy on a
# lab host whose route to the upstream doubles stays open.
MIRROR_SUITE_PACKAGES["bookworm"] += ["tinyproxy"]

# Preflight on hosts that carry Debian's own ROCm (tests/e2e/test_preflight.py): trixie's
# libucx0 depends on Debian's HIP runtime (libamdhip64-5, libhsa-runtime64-1), as Ubuntu
# 24.04's does for OpenMPI, and trixie's rocminfo puts /usr/bin/rocminfo ahead of AMD's.
MIRROR_SUITE_PACKAGES["trixie"] += ["libucx0", "rocminfo"]

# GPU containers (tests/e2e/test_containers.py): Debian's own engines, which the deploy installs
# (docker.io, podman with crun), runc for AMD's runtime double to exec, uidmap for rootless
# Podman, jq (AMD's container toolkit depends on it) and busybox-static, the root of the tiny
# image the lab imports into each engine (lab/engines.py).
CONTAINER_PACKAGES = ["docker.io", "podman", "crun", "runc", "uidmap", "jq", "busybox-static"]
MIRROR_SUITE_PACKAGES["bookworm"] += CONTAINER_PACKAGES
MIRROR_SUITE_PACKAGES["trixie"] += CONTAINER_PACKAGES

RECIPE = 3


def mirror_key(suite: str) -> str:
    return cache_key(
        "mirror",
        roots.sshbase_key(suite),
        sorted(MIRROR_PACKAGES),
        MIRROR_EXTRA_SUITES.get(suite, {}),
        *([sorted(MIRROR_SUITE_PACKAGES[suite])] if MIRROR_SUITE_PACKAGES.get(suite) else []),
        RECIPE,
    )


def mirror_dir(suite: str) -> Path:
    """Path of the cached mirror tree for one base suite: the mirror's URL path (``debian``)
    holding ``dists`` and ``pool``, served as the root of the mirror's host."""
    target = cache_dir() / f"mirror-{suite}-{mirror_key(suite)}"
    base = roots.sshbase_tarball(suite)
    with file_lock(cache_dir() / f".lock-mirror-{suite}"):
        if not target.exists():
            with tempfile.TemporaryDirectory(dir=cache_dir(), prefix="build-") as tmp:
                root = Path(tmp) / "root"
                out = Path(tmp) / "mirror"
                try:
                    roots.unpack(base, root)
                    _build(suite, root, out / debian_mirror().path)
                    os.rename(out, target)
                finally:
                    rmtree(root)
    return target


def packages_index(tree: Path, suite: str) -> Path:
    """The suite's real ``main`` Packages index in a tree made by ``mirror_dir``."""
    dists = tree / debian_mirror().path / "dists"
    return dists / suite / "main" / "binary-amd64" / "Packages"


def _build(suite: str, root: Path, debian: Path) -> None:
    url = debian_mirror().url
    (root / "etc/resolv.conf").write_text(Path("/etc/resolv.conf").read_text())
    extras = MIRROR_EXTRA_SUITES.get(suite, {})
    if extras:
        lines = "".join(f"deb {url} {extra} main\n" for extra in extras)
        (root / "etc/apt/sources.list.d/rflab-extra.list").write_text(lines)
    chroot(root, "apt-get", "update", timeout=600)
    jobs: list[tuple[str | None, list[str]]] = [
        (None, MIRROR_PACKAGES + MIRROR_SUITE_PACKAGES.get(suite, []))
    ]
    jobs += [(extra, pkgs) for extra, pkgs in extras.items() if pkgs]
    for target_release, pkgs in jobs:
        args = ["apt-get", "install", "-y", "--download-only"]
        if target_release:
            args += ["-t", target_release]
        uris = chroot(root, *args, "--print-uris", "-qq", *pkgs).stdout
        chroot(root, *args, *pkgs, timeout=900)
        for line in uris.splitlines():
            if not line.startswith("'"):
                continue
            uri, fname = line.split()[:2]
            uri = uri.strip("'")
            if not uri.startswith(url + "/"):
                raise LabError(f"unexpected download URI {uri}")
            # The pool path is URL-encoded in the URI (g%2b%2b -> g++); store it decoded.
            dest = debian / unquote(uri[len(url) + 1 :])
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / "var/cache/apt/archives" / fname, dest)
    _copy_indexes(root / "var/lib/apt/lists", debian)


def _copy_indexes(lists: Path, debian: Path) -> None:
    """Copy apt's list files back into dists/ layout and add by-hash links."""
    prefix = debian_mirror().list_prefix
    inreleases = []
    for src in sorted(lists.iterdir()):
        if not src.name.startswith(prefix) or not src.is_file():
            continue
        rel = src.name[len(prefix) :].replace("_", "/")
        dest = debian / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        if dest.name == "InRelease":
            inreleases.append(dest)
    if not inreleases:
        raise LabError(f"no InRelease found in {lists}")
    for inrelease in inreleases:
        _link_by_hash(inrelease)


def _link_by_hash(inrelease: Path) -> None:
    """Add dir/by-hash/SHA256/<sha> for each index we hold whose hash InRelease lists."""
    dist = inrelease.parent
    in_sha256 = False
    for line in inrelease.read_text().splitlines():
        if not line.startswith(" "):
            in_sha256 = line.startswith("SHA256:")
            continue
        if not in_sha256:
            continue
        parts = line.split()
        if len(parts) != 3:
            continue
        sha, _size, name = parts
        path = dist / name
        if not path.is_file():
            continue
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            raise LabError(f"{path} does not match its InRelease hash")
        link = path.parent / "by-hash" / "SHA256" / sha
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            os.link(path, link)
