"""The lab fleet: `Lab` brings up hosts, doubles and network; `__exit__` removes them all.

`Lab` is the one handle tests use (its API: tests/lab/README.md).  It owns the order of
bring-up and teardown and hands each piece to the module that knows it:

* network.py: the client netns with its bridge, one netns per host;
* upstreams.py: the doubles of the Debian mirror, repo.radeon.com and download.pytorch.org,
  their certificate and the server process;
* hosts.py: the hosts' overlay roots, their sshd in private namespaces, reboots;
* client.py: inventory, ssh_config and key, and running commands in the client netns;
* teardown.py: releasing it all (also on exceptions and Ctrl-C), `cleanup_stale`.

Every resource is recorded when created and released in reverse order by PID/name, and
`Lab.resources()` lists them so a test can check teardown.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from . import converged, machine, mirror, roots, teardown, upstreams
from ._util import LabError, rmtree
from .client import Client, PyinfraResult
from .hosts import Hosts, HostSpec, RootSetup, check_specs
from .network import NETNS_ETC, Network
from .server import Server
from .timers import Timers
from .upstreams import DOUBLES, Upstreams, lab_release


class Lab:
    """A disposable fleet of SSH hosts with doubles of AMD's and PyTorch's servers.

    Use as a context manager; see tests/lab/README.md for the full API.
    """

    def __init__(
        self,
        hosts: Sequence[HostSpec],
        rocm_releases: Sequence[str] = ("6.4.3",),
        workdir: str | os.PathLike[str] | None = None,
        keep_workdir: bool = False,
        catalog: bool = False,
        timer_scale: float | None = None,
    ):
        check_specs(hosts)
        self.run_id = secrets.token_hex(3)
        self._own_workdir = workdir is None
        self.workdir = (
            Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"rflab-{self.run_id}-"))
        )
        self._keep_workdir = keep_workdir
        self._release_versions = list(rocm_releases)
        self._catalog = catalog
        #: seconds per bring-up phase
        self.timings: dict[str, float] = {}
        self._network = Network(self.run_id)
        self._upstreams = Upstreams(self.workdir, self.run_id)
        self._client = Client(
            self.workdir, self.run_id, self._network.client_netns, [h.name for h in hosts]
        )
        self._hosts = Hosts(hosts, self.run_id, self.workdir, self._network, self._client.check_ssh)
        #: the double of systemd's timers (timers.py), with every time span times timer_scale;
        #: None (the default): no host's timer ever fires
        self.timers = Timers(self._hosts, timer_scale) if timer_scale is not None else None

    # --- what a test reads ------------------------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        """The host names, in the order of the specs (and of the inventory)."""
        return self._hosts.names

    @property
    def inventory(self) -> Path:
        return self._client.inventory

    @property
    def ssh_config(self) -> Path:
        return self._client.ssh_config

    @property
    def ssh_key(self) -> Path:
        return self._client.ssh_key

    @property
    def known_hosts(self) -> Path:
        return self._client.known_hosts

    @property
    def home(self) -> Path:
        return self._client.home

    @property
    def client_netns(self) -> str:
        return self._network.client_netns

    @property
    def server(self) -> Server | None:
        """The doubles' server (faults, request log); None before the lab is up."""
        return self._upstreams.server

    @property
    def ca_cert(self) -> Path:
        return self._upstreams.ca_cert

    @property
    def lab_key_fingerprint(self) -> str:
        return self._upstreams.key_fingerprint

    @property
    def debian_mirror(self) -> str:
        """The Debian mirror URL the roots were built from and the hosts' sources name
        (the build machine's own, served by the lab at its real name)."""
        return self._upstreams.debian.url

    @property
    def boots(self) -> dict[str, list[dict[str, str]]]:
        """Host name -> what each lab "boot" did (kernel chosen, MOK outcome, when it was
        requested and when it booted), oldest first."""
        return self._hosts.boots

    def root(self, name: str) -> Path:
        """The host's root directory (an overlay mount; writable from the outside)."""
        return self._hosts[name].root

    def address(self, name: str) -> str:
        return self._hosts[name].address

    def suite(self, name: str) -> str:
        """The Debian/Ubuntu suite the host's root is of (``bookworm``, ``noble``, ...)."""
        return self._hosts[name].spec.suite

    def spawn(
        self, name: str, argv: Sequence[str], *, log: Path, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start a daemon on the host as its init would: in its namespaces and root, output
        appended to ``log`` (outside the root). The caller ends it; a restart of the host
        (``restart_host``, ``stop_host``) ends it too. LabError while the host is down."""
        with open(log, "ab") as out:
            process = self._hosts[name].spawn(
                argv, env or {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}, out
            )
        if process is None:
            raise LabError(f"{name} is down: cannot start {argv[0]}")
        return process

    # --- commands (client.py) ---------------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of every lab command plus ``extra`` (see Client.env)."""
        return self._client.env(**extra)

    def run(
        self,
        cmd: Sequence[str | os.PathLike[str]],
        *,
        env: dict[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        check: bool = False,
        timeout: float | None = None,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in the client netns (see Client.run)."""
        return self._client.run(cmd, env=env, cwd=cwd, check=check, timeout=timeout, input=input)

    def pyinfra(
        self,
        *args: str | os.PathLike[str],
        json: bool = False,
        check: bool = True,
        limit: str | Iterable[str] | None = None,
        yes: bool | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = 1800,
    ) -> PyinfraResult:
        """Run the dev venv's pyinfra in the client netns (see Client.pyinfra)."""
        return self._client.pyinfra(
            *args, json=json, check=check, limit=limit, yes=yes, env=env, timeout=timeout
        )

    def ssh(
        self, name: str, command: str, *, check: bool = False, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run a shell command on a host over real SSH (as root)."""
        return self._client.ssh(name, command, check=check, timeout=timeout)

    # --- hosts and their machines (hosts.py, machine.py) ------------------------------------

    def stop_host(self, name: str) -> None:
        """Stop the host's sshd and everything in its pid namespace (connections refused)."""
        self._hosts.stop(name)

    def start_host(self, name: str) -> None:
        """Start (or restart after stop_host) the host's sshd in fresh namespaces."""
        self._hosts.start(name)

    def restart_host(self, name: str) -> None:
        """Like a reboot: all processes die, /proc, devpts and /run are fresh, uptime starts
        at 0, the newest installed kernel runs; other files persist."""
        self._hosts.restart(name)

    def set_profile(self, name: str, profile_name: str) -> None:
        """Swap the host's GPUs (takes effect on the next rocminfo/torch call)."""
        self._hosts.set_profile(name, profile_name)

    def plant_matrix_drift(self, planted: bool = True) -> None:
        """Make the AMD and PyTorch doubles disagree with the product's matrix (a lab built
        with ``catalog=True``): stable.repo.amd.com also publishes 10.2.0, and
        download.pytorch.org/whl/rocm7.14 no longer lists torchvision 0.29.1+rocm7.14.
        ``planted=False`` takes both back."""
        self._upstreams.plant_drift(planted)

    def confirm_mok_at_console(self, name: str, password: str) -> None:
        """Someone at the console types ``password`` into MokManager at the next boot (kept
        in the lab process only, never in the host root)."""
        self._hosts.confirm_mok_at_console(name, password)

    # --- the network (network.py) -----------------------------------------------------------

    def close_upstreams(
        self, names: Iterable[str] = DOUBLES, hosts: Iterable[str] | None = None
    ) -> None:
        """Take ``hosts``' (default: every host's) route to the doubles of ``names`` away:
        connecting fails at once ("No route to host"); the Debian mirror, the other hosts
        and the client stay reachable. For an air gap, or a site where only a proxy (a lab
        host whose route stays open) gets out."""
        for host in [self._hosts[h] for h in hosts] if hosts is not None else self._hosts:
            for name in names:
                self._network.close_route(host.index, self._upstream_address(name))

    def open_upstreams(
        self, names: Iterable[str] = DOUBLES, hosts: Iterable[str] | None = None
    ) -> None:
        """Give the routes `close_upstreams` took back."""
        for host in [self._hosts[h] for h in hosts] if hosts is not None else self._hosts:
            for name in names:
                self._network.open_route(host.index, self._upstream_address(name))

    def closed_upstreams(self, name: str) -> list[str]:
        """The upstreams (by name) host ``name`` has no route to."""
        closed = self._network.closed_routes(self._hosts[name].index)
        return [n for n, address in self._upstreams.addresses.items() if address in closed]

    def _upstream_address(self, name: str) -> str:
        addresses = self._upstreams.addresses
        if name not in addresses or addresses[name] == addresses[self._upstreams.debian.host]:
            closable = [
                n for n in addresses if addresses[n] != addresses[self._upstreams.debian.host]
            ]
            raise LabError(f"no route to close to {name!r}; upstreams: {', '.join(closable)}")
        return addresses[name]

    def running_kernel(self, name: str) -> str:
        return machine.running_kernel(self.root(name))

    def set_returns_after_reboot(self, name: str, returns: bool) -> None:
        """False: the host's next reboot leaves it down for good."""
        machine.set_returns(self.root(name), returns)

    def mokutil_calls(self, name: str) -> list[str]:
        """Every mokutil command line the host ran, oldest first."""
        return machine.mokutil_calls(self.root(name))

    # --- bring-up -----------------------------------------------------------------------------

    def __enter__(self) -> Lab:
        try:
            self._up()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _timed(self, what: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.timings[what] = round(time.monotonic() - start, 2)

    def _up(self) -> None:
        start = time.monotonic()
        if os.geteuid() != 0:
            raise LabError("the lab needs root (netns, mounts, chroot)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        teardown.register(self.run_id, self.workdir)
        suites = sorted({host.spec.suite for host in self._hosts})
        layers = sorted({(host.spec.suite, host.spec.base) for host in self._hosts})
        with self._timed("matrix"):
            releases = [lab_release(v) for v in self._release_versions]
        with ThreadPoolExecutor(4) as pool, self._timed("artefacts"):
            bases = {layer: pool.submit(roots.base_dir, *layer) for layer in layers}
            trees = {s: pool.submit(mirror.mirror_dir, s) for s in suites}
            converging = [host.spec for host in self._hosts if host.spec.converged]
            identity = upstreams.identity() if converging else None
            doubles = pool.submit(self._upstreams.build, releases, self._catalog, identity)
            key = pool.submit(self._client.make_key)
            base_dirs = {layer: f.result() for layer, f in bases.items()}
            mirror_trees = {s: f.result() for s, f in trees.items()}
            doubles.result()
            key.result()
        with self._timed("network"):
            self._network.up(self._upstreams.addresses)
        with self._timed("server"):
            self._upstreams.serve(self.client_netns, list(mirror_trees.values()))
        self._client.ca_cert = self.ca_cert
        setup = RootSetup(
            upstreams=self._upstreams.addresses,
            ca_cert=self.ca_cert,
            authorized_key=self.ssh_key.with_suffix(".pub"),
            bases=base_dirs,
            packages_indexes={s: mirror.packages_index(t, s) for s, t in mirror_trees.items()},
            converged={
                spec.name: saved
                for spec in converging
                if (saved := self._converged_path(identity, spec, releases)).exists()
            },
        )
        with self._timed("hosts"):
            self._hosts.create(setup)
        self._client.write_inventory(self._hosts, self.lab_key_fingerprint)
        self._client.write_ssh_config(self._hosts)
        with self._timed("sshd"):
            self._hosts.start_all()
        missing = [spec.name for spec in converging if spec.name not in setup.converged]
        if missing:
            with self._timed("converge"):
                self._converge(missing, identity, releases)  # type: ignore[arg-type]
        if self.timers is not None:
            self.timers.start()
        self.timings["total_up"] = round(time.monotonic() - start, 2)

    def _converged_path(self, identity: Path | None, spec: HostSpec, releases: list) -> Path:
        assert identity is not None
        return converged.path(identity, spec, releases, self._catalog)

    def _converge(self, names: list[str], identity: Path, releases: list) -> None:
        """The deploy on hosts whose converged root isn't cached yet, then each saved
        (converged.py) with its sshd stopped for the copy."""
        self.pyinfra(self.inventory, "deploy.py", limit=names, check=True)
        for name in names:
            host = self._hosts[name]
            host.stop_sshd()
            converged.save(host.dir / "upper", self._converged_path(identity, host.spec, releases))
            self._hosts.start(name)

    # --- teardown (teardown.py) ---------------------------------------------------------------

    def resources(self) -> dict[str, list[Any]]:
        """What the lab holds right now: pids, netns names, mount points, gnupg home."""
        pids = self._hosts.pids() + (self.timers.pids() if self.timers else [])
        if self.server and self.server.pid:
            pids.append(self.server.pid)
        return {
            "pids": pids,
            "netns": list(self._network.netns),
            "netns_etc": [str(NETNS_ETC / ns) for ns in self._network.netns],
            "mounts": self._hosts.mounts(),
            "workdir": [str(self.workdir)],
            "gnupghome": [str(self._upstreams.gnupghome)],
        }

    def close(self) -> None:
        """Tear everything down (idempotent).  Ctrl-C is held off until it is done."""
        in_main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
        steps = teardown.Steps()
        try:
            steps.attempt("supervisor", self._hosts.stop_supervisor)
            if self.timers is not None:
                steps.attempt("timers", self.timers.stop)
            for host in self._hosts:
                steps.attempt(f"stop sshd {host.name}", host.stop_sshd)
            if self.server:
                steps.attempt("stop server", self.server.stop)
            for host in self._hosts:
                if host.mounted:
                    steps.attempt(f"umount {host.root}", host.umount)
            for ns in list(reversed(self._network.netns)):
                steps.attempt(f"netns {ns}", self._network.delete, ns)
            steps.attempt("gpg-agent", teardown.kill_gpg_agent, self._upstreams.gnupghome)
            if not self._keep_workdir and not steps.errors:
                # A workdir the caller gave is theirs: only the hosts' roots go.
                owned = self.workdir if self._own_workdir else self.workdir / "hosts"
                steps.attempt("workdir", rmtree, owned)
            if not steps.errors:
                teardown.unregister(self.run_id)
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
        steps.raise_errors()
