"""A pull-mode TUF repository for the tests: the administrators' repository made by
``pull.repository`` (``rocm-fleet publish``'s) in a temporary directory and one node's client
state; served by a loopback web server as the fleet mirror's nginx would (``PullFleet``), or
from memory (``unit.pullsim``)."""

from __future__ import annotations

import functools
import shutil
import ssl
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from rocm_fleet.model import pulled
from rocm_fleet.model.pulled import PullRefused
from rocm_fleet.pull import client as pull_client
from rocm_fleet.pull.repository import PullRepository

NODE = "node1"
OTHER = "node2"
SETTINGS = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_pull": True}


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class Redirecting(Quiet):
    """A host that answers every request with a redirect to plain http elsewhere."""

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", "http://127.0.0.1:9/elsewhere")
        self.end_headers()


def serve(directory: Path, handler: type = Quiet, tls: ssl.SSLContext | None = None):
    """``directory`` served on a loopback port by ``handler`` (over TLS with ``tls``)."""
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(directory))
    )
    if tls:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    # Polled every 50 ms for its shutdown (not the default 0.5 s: each test waits for it).
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


class Fleet:
    """The administrators' repository (their keys in ``keys``) and one node's client state (the
    root a push installed, the metadata it verified); how the mirror serves the repository
    (``mirror``) and the node fetches from it (``fetch``) are a subclass's."""

    def __init__(
        self, tmp: Path, root: tuple[int, int] = (1, 1), targets: tuple[int, int] = (1, 1)
    ):
        """``root``, ``targets``: (keys, threshold), as ``publish --init`` takes them."""
        self.keys = tmp / "keys"
        self.repository = PullRepository(tmp / "repository", [self.keys])
        self.repository.create(self.keys, *root, *targets)
        self.node_dir = tmp / "node"
        self.node_dir.mkdir()
        self.trusted_root = self.node_dir / "trusted-root.json"
        shutil.copy(self.repository.metadata / "root.json", self.trusted_root)  # the push
        self.metadata = self.node_dir / "tuf"

    def publish(self, nodes: dict, hours: float = 24, matrix_data: dict | None = None) -> int:
        version = self.repository.publish(nodes, hours, matrix_data).version
        self.mirror()
        return version

    def mirror(self) -> None:
        """The repository as published copied to the mirror."""
        raise NotImplementedError

    def fetch(self, node: str, seal_key: Path | None) -> pulled.PulledState:
        raise NotImplementedError

    def pull(self, node: str = NODE, seal_key: Path | None = None) -> pulled.PulledState:
        state = self.fetch(node, seal_key)
        pull_client.record_applied(self.metadata, state.serial)
        return state

    def applied(self) -> int | None:
        return pull_client.read_applied(self.metadata)


class PullFleet(Fleet):
    """The repository served by the mirror (a loopback web server over ``served``: what the
    mirror's nginx serves), fetched over HTTP."""

    def __init__(
        self, tmp: Path, root: tuple[int, int] = (1, 1), targets: tuple[int, int] = (1, 1)
    ):
        super().__init__(tmp, root, targets)
        self.served = tmp / "served"
        self.server = serve(self.served)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.ca: str | None = None  # the CA an https repository is trusted by

    def mirror(self) -> None:
        """The repository copied to the mirror (an rsync of the directory)."""
        shutil.rmtree(self.served, ignore_errors=True)
        shutil.copytree(self.repository.directory, self.served)

    def fetch(self, node: str, seal_key: Path | None) -> pulled.PulledState:
        return pull_client.fetch(
            self.url, self.metadata, self.trusted_root, node, self.ca, seal_key
        )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def refused(fleet: Fleet, result: str, node: str = NODE, seal_key: Path | None = None) -> str:
    """The node's pull refused with ``result`` (the metric's label), nothing recorded as
    applied; the reason."""
    applied = fleet.applied()
    with pytest.raises(PullRefused) as caught:
        fleet.pull(node, seal_key)
    assert caught.value.result == result, str(caught.value)
    assert fleet.applied() == applied  # nothing recorded: nothing applied
    return str(caught.value)
