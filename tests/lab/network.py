"""The lab's network: network namespaces, the bridge and the veths; nothing else.

* a client netns ``rflab-<run id>-c`` with bridge ``rf<run id>br`` (10.213.0.1/24); the
  doubles' server listens there, and pyinfra/pytest run there (client.py);
* one netns per host ``rflab-<run id>-h<i>`` whose ``eth0`` (10.213.0.(10+i)) is the peer of
  a veth on the bridge; no default route, so anything unexpected fails fast and nothing
  leaves the box;
* each upstream double has its own address on the bridge (the Debian mirror the server's,
  10.213.0.1; repo.radeon.com .2, repo.amd.com .3, stable.repo.amd.com .4,
  download.pytorch.org .5), so `close_route` can take one
  away from a host (an ``unreachable`` route: connecting fails at once, "No route to host")
  while the others stay reachable: an air gap, or a site where only a proxy gets out;
* the client netns resolves the upstreams' names to those addresses too
  (``/etc/netns/<client netns>/hosts``, which ``ip netns exec`` mounts over /etc/hosts), so
  a command run there (``rocm-fleet bundle``, ``rocm-fleet matrix check``) fetches from the
  doubles at their real URLs.

veths are created inside the client netns with the peer moved straight into the host
netns: no lab interface ever exists in the root namespace.  Every netns is recorded when
added, and `delete` removes it by name (teardown.py deletes them newest first).

The client netns resolves the upstreams' names to the doubles' server too (`name_upstreams`),
so a tool run there (``rocm-fleet matrix check``) reaches them at their real URLs: `ip netns
exec` bind-mounts ``/etc/netns/<netns>/hosts`` over /etc/hosts for what it runs, and only
for that (iproute2's ip-netns(8)); the directory goes with the netns.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ._util import rmtree, run

SUBNET = "10.213.0"
SERVER_ADDRESS = f"{SUBNET}.1"
#: Addresses on the bridge for upstreams a route can be closed to (hosts are .11 and up).
UPSTREAM_ADDRESSES = (f"{SUBNET}.2", f"{SUBNET}.3", f"{SUBNET}.4", f"{SUBNET}.5")
#: Where iproute2 keeps per-netns files it mounts over /etc for `ip netns exec`.
NETNS_ETC = Path("/etc/netns")


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

    def up(self, names: dict[str, str]) -> None:
        """The client netns with its bridge at SERVER_ADDRESS and UPSTREAM_ADDRESSES, and
        ``names`` (host name -> address) in its /etc/hosts."""
        self._add_netns(self.client_netns)
        self._ip_client("link", "add", self.bridge, "type", "bridge")
        for address in (SERVER_ADDRESS, *UPSTREAM_ADDRESSES):
            self._ip_client("addr", "add", f"{address}/24", "dev", self.bridge)
        self._ip_client("link", "set", self.bridge, "up")
        self._ip_client("link", "set", "lo", "up")
        etc = NETNS_ETC / self.client_netns
        etc.mkdir(parents=True, exist_ok=True)
        (etc / "hosts").write_text(hosts_file("localhost", names))

    def close_route(self, index: int, address: str) -> None:
        """Host ``index`` can no longer reach ``address`` (connecting fails at once)."""
        route = ["route", "replace", "unreachable", f"{address}/32"]
        run(["ip", "-n", self.host_netns(index), *route])

    def open_route(self, index: int, address: str) -> None:
        run(["ip", "-n", self.host_netns(index), "route", "del", "unreachable", f"{address}/32"],
            check=False)  # fmt: skip

    def closed_routes(self, index: int) -> list[str]:
        """The addresses host ``index`` has no route to."""
        shown = run(["ip", "-n", self.host_netns(index), "route", "show", "type", "unreachable"])
        return [line.split()[1].removesuffix("/32") for line in shown.stdout.splitlines()]

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
        """Delete one netns (its veth end and, for the client's, the bridge go with it) and
        its files under /etc/netns."""
        run(["ip", "netns", "del", name])
        rmtree(NETNS_ETC / name)
        with self._lock:
            self.netns.remove(name)

    def _add_netns(self, name: str) -> None:
        run(["ip", "netns", "add", name])
        with self._lock:
            self.netns.append(name)

    def _ip_client(self, *args: str) -> None:
        run(["ip", "-n", self.client_netns, *args])


def hosts_file(name: str, upstreams: dict[str, str]) -> str:
    """An /etc/hosts naming the machine and each upstream (name -> address) at its address."""
    by_address: dict[str, list[str]] = {}
    for upstream, address in upstreams.items():
        by_address.setdefault(address, []).append(upstream)
    lines = ["127.0.0.1\tlocalhost"]
    if name != "localhost":
        lines.append(f"127.0.1.1\t{name}")
    lines += [f"{address}\t{' '.join(names)}" for address, names in by_address.items()]
    return "\n".join(lines) + "\n"
