"""The lab's network: network namespaces, the bridge and the veths; nothing else.

* a client netns ``rflab-<run id>-c`` with bridge ``rf<run id>br`` (10.213.0.1/24); the
  doubles' server listens there, and pyinfra/pytest run there (client.py);
* one netns per host ``rflab-<run id>-h<i>`` whose ``eth0`` (10.213.0.(10+i)) is the peer of
  a veth on the bridge; no default route, so anything unexpected fails fast and nothing
  leaves the box.

veths are created inside the client netns with the peer moved straight into the host
netns: no lab interface ever exists in the root namespace.  Every netns is recorded when
added, and `delete` removes it by name (teardown.py deletes them newest first).
"""

from __future__ import annotations

import threading

from ._util import run

SUBNET = "10.213.0"
SERVER_ADDRESS = f"{SUBNET}.1"


def netns_prefix(run_id: str) -> str:
    """Every netns of one lab starts with this (cleanup_stale finds a dead lab's by it)."""
    return f"rflab-{run_id}-"


class Network:
    """The namespaces and links of one lab run."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.client_netns = netns_prefix(run_id) + "c"
        self.bridge = f"rf{run_id}br"
        #: every netns this lab added and has not deleted yet, oldest first
        self.netns: list[str] = []
        self._lock = threading.Lock()

    @staticmethod
    def host_address(index: int) -> str:
        return f"{SUBNET}.{10 + index}"

    def host_netns(self, index: int) -> str:
        return netns_prefix(self.run_id) + f"h{index}"

    def host_veth(self, index: int) -> str:
        return f"rf{self.run_id}h{index}"

    def up(self) -> None:
        """The client netns with its bridge at SERVER_ADDRESS."""
        self._add_netns(self.client_netns)
        self._ip_client("link", "add", self.bridge, "type", "bridge")
        self._ip_client("addr", "add", f"{SERVER_ADDRESS}/24", "dev", self.bridge)
        self._ip_client("link", "set", self.bridge, "up")
        self._ip_client("link", "set", "lo", "up")

    def add_host(self, index: int) -> None:
        """Host ``index``'s netns, its eth0 on the bridge at ``host_address(index)``."""
        netns, veth = self.host_netns(index), self.host_veth(index)
        self._add_netns(netns)
        self._ip_client("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns)
        self._ip_client("link", "set", veth, "master", self.bridge, "up")
        ip_host = ["ip", "-n", netns]
        run([*ip_host, "addr", "add", f"{self.host_address(index)}/24", "dev", "eth0"])
        run([*ip_host, "link", "set", "eth0", "up"])
        run([*ip_host, "link", "set", "lo", "up"])

    def delete(self, name: str) -> None:
        """Delete one netns (its veth end and, for the client's, the bridge go with it)."""
        run(["ip", "netns", "del", name])
        with self._lock:
            self.netns.remove(name)

    def _add_netns(self, name: str) -> None:
        run(["ip", "netns", "add", name])
        with self._lock:
            self.netns.append(name)

    def _ip_client(self, *args: str) -> None:
        run(["ip", "-n", self.client_netns, *args])
