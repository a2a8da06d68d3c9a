"""The upstreams the lab stands in for, each at its real name inside the lab's network:

* the Debian mirror the build machine's apt sources name (`_util.debian_mirror`; the lab's
  roots name it too), served from the sparse mirror (mirror.py);
* repo.radeon.com (amd_repo.py; its amd-container-toolkit repository: container_toolkit.py),
  repo.amd.com and stable.repo.amd.com (core_sdk_repo.py),
  all signed with one throwaway key made the way AMD's classic key is (SHA-1 binding, then a
  SHA-256 one; each release signed at its recorded time), and download.pytorch.org
  (pytorch_index.py), built per lab for its ROCm releases from the recorded upstream facts
  (tests/fixtures/upstream/, upstream_facts.py), never from the product's matrix; with
  ``catalog``, every other recorded release is published too (signed indexes, no packages
  to install), and the drift overlays `Lab.plant_matrix_drift` serves are built;

plus their TLS certificate from a throwaway CA (_tls.py) and the one server process that
serves them all (server.py), each on its own address (`addresses`; network.py says why).
The hosts resolve the names to those addresses via /etc/hosts.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from rocm_fleet.model.matrix import Release, release
from rocm_fleet.model.streams import CORE_SDK, MULTI_ARCH_REPOSITORY, STABLE_REPOSITORY

from . import amd_repo, amd_wheels, container_toolkit, core_sdk_repo, pytorch_index
from . import upstream_facts as facts
from ._tls import Certs, make_ca, make_certs
from ._util import PYTHON, Mirror, cache_dir, cache_key, debian_mirror, file_lock, rmtree
from .network import SERVER_ADDRESS, UPSTREAM_ADDRESSES
from .server import Server

RADEON = "repo.radeon.com"
AMD, STABLE_AMD = core_sdk_repo.HOSTS
PYTORCH = "download.pytorch.org"
#: The doubles of AMD's and PyTorch's servers (each on its own address: closable per host).
DOUBLES = (RADEON, AMD, STABLE_AMD, PYTORCH)

#: What `plant_matrix_drift` makes upstream say that the product's matrix doesn't: a
#: release it lacks (10.2.0, which AMD's pages don't list yet) and a pinned wheel gone.
DRIFT_RELEASE = Release("10.2.0", CORE_SDK, STABLE_REPOSITORY, None)
DRIFT_WHEEL = ("rocm7.14", "torchvision", "0.29.1+rocm7.14")


def lab_release(version: str) -> Release:
    """The matrix's row for ``version``; for the synthetic future release (upstream_facts,
    which the product doesn't know), the row its facts give: what the doubles build from."""
    try:
        return release(version)
    except KeyError:
        fact = facts.synthetic_core_releases().get(version)
        if fact is None:
            raise
    repository = STABLE_REPOSITORY if fact.repository == "stable" else MULTI_ARCH_REPOSITORY
    return Release(version, CORE_SDK, repository, None)


#: Bump to make the cached identity anew (converged roots then converge afresh).
IDENTITY_RECIPE = 1


def identity() -> Path:
    """The lab's cached identity (``identity-<key>/`` in the cache: ``gnupg/``, a signing key
    made as `amd_repo.Signer` makes one, and ``tls/``, a CA valid ten years), made once. A lab
    with converged hosts (converged.py) signs its doubles and their TLS with it, so a root
    converged by one lab trusts the next lab's upstreams, as a real node keeps trusting AMD's
    key. Throwaway, root-only like the rest of the cache."""
    key = cache_key("identity", IDENTITY_RECIPE, amd_repo.KEY_UID, amd_repo.MODERN_UID)
    target = cache_dir() / f"identity-{key}"
    with file_lock(cache_dir() / ".lock-identity"):
        if not target.exists():
            tmp = Path(tempfile.mkdtemp(dir=cache_dir(), prefix="build-"))
            try:
                amd_repo.Signer(tmp / "id" / "gnupg").close()
                make_ca(tmp / "id" / "tls", "cached", days=3650)
                (tmp / "id").rename(target)
            finally:
                rmtree(tmp)
    return target


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
        #: the fingerprint of the key that signs the AMD doubles
        self.key_fingerprint = ""
        self.server: Server | None = None
        self._certs: Certs | None = None
        self._drift: dict[str, Path] = {}  # upstream -> its drift overlay

    @property
    def debian(self) -> Mirror:
        """Read when first needed: a lab that is never entered reads no apt sources."""
        return debian_mirror()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.debian.host, *DOUBLES)

    @property
    def addresses(self) -> dict[str, str]:
        """Each upstream's name -> its address on the lab's bridge."""
        return dict(zip(self.names, (SERVER_ADDRESS, *UPSTREAM_ADDRESSES), strict=True))

    @property
    def ca_cert(self) -> Path:
        """The lab CA's certificate (written by `build`)."""
        return self._tls / "ca.crt"

    def build(
        self, releases: Sequence[Release], catalog: bool = False, identity: Path | None = None
    ) -> None:
        """The AMD and PyTorch doubles for ``releases`` (``catalog``: and every release of
        the matrix, without packages), the drift overlays, and the TLS certificates; signed
        with a new key and CA, or ``identity``'s (see `identity`)."""
        releases = list(releases)
        signer = amd_repo.Signer(self.gnupghome, identity / "gnupg" if identity else None)
        try:
            amd_repo.build(self._www / "radeon", releases, signer, catalog)
            container_toolkit.build(self._www / "radeon", signer)
            cores = facts.core_releases()
            # a synthetic release is served only to a lab that asks for it
            asked = {**cores, **facts.synthetic_core_releases()}
            core = [r for r in releases if r.version in asked]
            listed = list(cores.values()) if catalog else []
            core_sdk_repo.build(self._www / "amd", core, signer, listed)
            # AMD's wheel index for 10.x torch, on its real host's double
            assert amd_wheels.HOST == STABLE_AMD, amd_wheels.HOST
            synthetic = [r for r in core if r.version not in cores]
            served = [*cores.values(), *synthetic] if catalog else core
            amd_wheels.build(self._www / "amd" / STABLE_AMD, served)
            everything = [*facts.classic_releases().values(), *cores.values()]
            pytorch_index.build(self._www / "pytorch", everything if catalog else releases)
            if catalog:
                drift = self._www.parent / "drift"
                self._drift[STABLE_AMD] = core_sdk_repo.build_drift(
                    self._www / "amd", drift / "amd", signer, DRIFT_RELEASE
                )
                self._drift[PYTORCH] = pytorch_index.build_drift(
                    self._www / "pytorch", drift / "pytorch", *DRIFT_WHEEL
                )
            self.key_fingerprint = signer.fingerprint
        finally:
            signer.close()
        ca = identity / "tls" if identity else None
        self._certs = make_certs(self._tls, self._run_id, self.names, ca)

    def plant_drift(self, planted: bool) -> None:
        """Serve the drift overlays in front of the doubles (or stop): upstream then also
        publishes DRIFT_RELEASE and no longer lists DRIFT_WHEEL."""
        if not self._drift:
            raise RuntimeError("the lab was built without catalog=True: no drift to plant")
        assert self.server is not None
        for host, tree in self._drift.items():
            self.server.set_overlay(host, tree if planted else None)

    def serve(self, netns: str, mirror_trees: Sequence[Path]) -> Server:
        """Start the server in ``netns`` on every upstream's address (ports 80 and 443),
        after `build`."""
        assert self._certs is not None, "build() first"
        self.server = Server(
            self._server_dir,
            netns,
            sorted(set(self.addresses.values())),
            {
                self.debian.host: list(mirror_trees),
                RADEON: [self._www / "radeon"],
                AMD: [self._www / "amd" / AMD],
                STABLE_AMD: [self._www / "amd" / STABLE_AMD],
                PYTORCH: [self._www / "pytorch"],
            },
            self._certs.server_cert,
            self._certs.server_key,
            python=str(PYTHON),
        )
        self.server.start()
        return self.server
