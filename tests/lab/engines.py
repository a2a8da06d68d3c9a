"""What a site does around Debian's container engines on a lab host (a ``HostSpec`` with
``containers=True``), before and beside the deploy: nothing here is doubled.

* `site_storage`: the storage driver the site picks. A lab root is an overlayfs and the lab
  has no /dev/fuse, so neither engine's default (overlay2 / overlay on an overlayfs upper, or
  fuse-overlayfs) can mount; both get ``vfs``, Docker in /etc/docker/daemon.json (which
  AMD's ``amd-ctk runtime configure`` and the deploy must keep), Podman in
  /etc/containers/storage.conf (rootless Podman reads its driver there too).
* `DEFAULT_DOCKER`: Debian's /etc/init.d/docker (what ``service docker restart`` runs on a host
  without systemd, as lab hosts are) raises the open-files limit to 1048576 under ``set -e``;
  the build machine's root lacks CAP_SYS_RESOURCE (``CapEff`` without bit 24), so no lab
  process may raise its hard limit and the script would stop there. The script sources
  /etc/default/docker first: a ``ulimit`` function there (functions come before regular
  builtins in dash) keeps the limits it has when raising them is refused. The script's
  ``restart`` of a stopped Docker (the first restart after the install: the lab's invoke-rc.d
  starts nothing, there being no init) reads its start-stop-daemon pidfile with
  ``docker_pid=$(cat FILE)`` under ``set -e`` and exits when the file is missing; a real host's
  ``service`` goes through systemctl instead. The file made empty when missing lets it start.
* `image_tar` / `load_image`: a tiny image, no registry: busybox from Debian's
  ``busybox-static`` in the lab's own mirror, ``docker import``/``podman import``-ed on the
  host under a name in the site's registry (`IMAGE`), as root or as a rootless user, as a site
  that pulled it from its registry would have it.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from . import mirror
from ._util import LabError

#: The image a site's registry would serve (the lab has none): what the deploy's pre-pull and
#: the node check name.
IMAGE = "registry.site.example/lab/busybox:1.35"
#: The applets the image links to busybox.
APPLETS = ("sh", "ls", "cat", "id", "grep", "wc", "sleep", "true")
DOCKER_SITE_CONFIG = {"storage-driver": "vfs"}
PODMAN_STORAGE_CONF = (
    '[storage]\ndriver = "vfs"\nrunroot = "/run/containers/storage"\n'
    'graphroot = "/var/lib/containers/storage"\n'
)


DEFAULT_DOCKER = (
    "# rocm-fleet lab: the machine refuses to raise a hard limit (no CAP_SYS_RESOURCE)\n"
    'ulimit() { command ulimit "$@" 2>/dev/null || true; }\n'
    "# rocm-fleet lab: restart of a stopped docker reads this pidfile under set -e\n"
    '[ -e "$DOCKER_SSD_PIDFILE" ] || : > "$DOCKER_SSD_PIDFILE"\n'
)


def site_storage(root: Path) -> None:
    """Write the site's storage choice (``vfs``) for both engines into a host root, and
    /etc/default/docker (`DEFAULT_DOCKER`)."""
    (root / "etc/default").mkdir(parents=True, exist_ok=True)
    (root / "etc/default/docker").write_text(DEFAULT_DOCKER)
    docker = root / "etc/docker"
    docker.mkdir(parents=True, exist_ok=True)
    (docker / "daemon.json").write_text(json.dumps(DOCKER_SITE_CONFIG, indent=4) + "\n")
    containers = root / "etc/containers"
    containers.mkdir(parents=True, exist_ok=True)
    (containers / "storage.conf").write_text(PODMAN_STORAGE_CONF)


def image_tar(suite: str = "bookworm") -> bytes:
    """The image's root as a tar: /bin/busybox from the mirror's busybox-static .deb and a
    link per applet."""
    debs = sorted((mirror.mirror_dir(suite)).rglob("busybox-static_*.deb"))
    if not debs:
        raise LabError(f"no busybox-static in the {suite} mirror (mirror.CONTAINER_PACKAGES)")
    with tempfile.TemporaryDirectory(prefix="rflab-image-") as tmp:
        subprocess.run(["dpkg-deb", "-x", debs[-1], tmp], check=True)
        # bookworm's at /bin, trixie's at /usr/bin
        found = [Path(tmp) / d / "busybox" for d in ("bin", "usr/bin")]
        busybox = next(p for p in found if p.is_file()).read_bytes()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name in ("bin", "dev", "proc", "sys", "tmp"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name == "tmp" else 0o755
            tar.addfile(info)
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(busybox), 0o755
        tar.addfile(info, io.BytesIO(busybox))
        for applet in APPLETS:
            link = tarfile.TarInfo(f"bin/{applet}")
            link.type, link.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(link)
    return out.getvalue()


def load_image(lab: Any, name: str, engine: str, user: str | None = None) -> None:
    """Import `IMAGE` into ``engine``'s store on host ``name``, as root or as ``user``
    (rootless Podman), over SSH."""
    root = lab.root(name)
    (root / "tmp/rflab-image.tar").write_bytes(image_tar(lab.suite(name)))
    (root / "tmp/rflab-image.tar").chmod(0o644)
    command = f"{engine} import /tmp/rflab-image.tar {IMAGE} >/dev/null"
    if user:
        command = f"su -s /bin/sh {user} -c 'cd && {command}'"
    done = lab.ssh(name, command, timeout=300)
    if done.returncode != 0:
        raise LabError(f"{engine} import on {name}: {done.stdout}{done.stderr}")
