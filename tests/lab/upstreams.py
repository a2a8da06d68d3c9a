"""The upstreams the lab stands in for, each at its real name inside the lab's network:

* the Debian mirror the build machine's apt sources name (`_util.debian_mirror`; the lab's
  roots name it too), served from the sparse mirror (mirror.py);
* repo.radeon.com (amd_repo.py, signed with a throwaway key) and download.pytorch.org
  (pytorch_index.py), built per lab for its ROCm releases;

plus their TLS certificate from a throwaway CA (_tls.py) and the one server process that
serves them all (server.py).  The hosts resolve `names` to the server via /etc/hosts.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rocm_fleet.matrix import Release

from . import amd_repo, pytorch_index
from ._tls import Certs, make_certs
from ._util import PYTHON, Mirror, debian_mirror
from .server import Server

RADEON = "repo.radeon.com"
PYTORCH = "download.pytorch.org"


def gnupghome(workdir: Path) -> Path:
    """Where a lab's throwaway signing key lives (its gpg-agent is killed at teardown)."""
    return workdir / "gnupg"


class Upstreams:
    def __init__(self, workdir: Path, run_id: str):
        self._run_id = run_id
        self._www = workdir / "www"
        self._tls = workdir / "tls"
        self._server_dir = workdir / "server"
        self.gnupghome = gnupghome(workdir)
        #: the fingerprint of the key that signs the repo.radeon.com double
        self.key_fingerprint = ""
        self.server: Server | None = None
        self._certs: Certs | None = None

    @property
    def debian(self) -> Mirror:
        """Read when first needed: a lab that is never entered reads no apt sources."""
        return debian_mirror()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.debian.host, RADEON, PYTORCH)

    @property
    def ca_cert(self) -> Path:
        """The lab CA's certificate (written by `build`)."""
        return self._tls / "ca.crt"

    def build(self, releases: Sequence[Release]) -> None:
        """The AMD and PyTorch doubles for ``releases`` and the TLS certificates."""
        self.key_fingerprint = amd_repo.build(self._www / "radeon", list(releases), self.gnupghome)
        pytorch_index.build(self._www / "pytorch", list(releases))
        self._certs = make_certs(self._tls, self._run_id, self.names)

    def serve(self, netns: str, address: str, mirror_trees: Sequence[Path]) -> Server:
        """Start the server in ``netns`` on ``address`` (ports 80 and 443), after `build`."""
        assert self._certs is not None, "build() first"
        self.server = Server(
            self._server_dir,
            netns,
            address,
            {
                self.debian.host: list(mirror_trees),
                RADEON: [self._www / "radeon"],
                PYTORCH: [self._www / "pytorch"],
            },
            self._certs.server_cert,
            self._certs.server_key,
            python=str(PYTHON),
        )
        self.server.start()
        return self.server
