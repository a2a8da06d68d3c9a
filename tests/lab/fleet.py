"""The lab fleet: `Lab` brings up hosts, doubles and network; `__exit__` removes them all.

Layout (all inside network namespaces the lab creates; nothing in the root namespace):

* a client netns with bridge 10.213.0.1/24; the doubles' server listens there, and
  pyinfra/pytest run there (`lab.run`, `lab.pyinfra`);
* one netns per host, veth into the bridge (10.213.0.11, .12, ...), no default route,
  resolv.conf -> 127.0.0.1, so anything unexpected fails fast and nothing leaves the box;
* per host an overlayfs root over the cached sshbase, and sshd chrooted into it inside
  private mount/pid/uts namespaces (its /proc and devpts die with it).

Every resource is recorded when created and released in reverse order by PID/name, also
on exceptions and Ctrl-C, and `Lab.resources()` lists them so a test can check teardown.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocm_fleet.matrix import Release, release

from . import amd_repo, machine, mirror, profiles, pytorch_index, roots
from ._tls import make_certs
from ._util import CLEAN_PATH, PYTHON, REPO_ROOT, VENV_BIN, LabError, rmtree, run
from .server import Server

SUBNET = "10.213.0"
SERVER_ADDRESS = f"{SUBNET}.1"
CA_PATH_IN_ROOT = "usr/local/share/ca-certificates/rocm-fleet-lab-ca.crt"
UPSTREAMS = ("deb.debian.org", "repo.radeon.com", "download.pytorch.org")
#: One small file per running lab (owner pid, run id, workdir), so `cleanup_stale` can
#: remove the leftovers of a lab whose process was killed -9.  /run is a tmpfs: a reboot,
#: which also drops every netns and mount, clears it.
REGISTRY = Path("/run/rocm-fleet-lab")


@dataclass
class HostSpec:
    """One lab host.  `sshd=False` gives a host that is in the inventory but unreachable
    (its sshd can be started later with `lab.start_host`)."""

    name: str
    suite: str = "bookworm"
    profile: str = "rx7900xtx"
    data: dict[str, Any] = field(default_factory=dict)
    sshd: bool = True
    #: running kernel, EFI / Secure Boot / MOK state, whether it comes back after a reboot
    machine: machine.Machine = field(default_factory=machine.Machine)


@dataclass
class _Host:
    spec: HostSpec
    index: int
    address: str
    netns: str
    veth: str
    dir: Path
    sshd: subprocess.Popen[bytes] | None = None
    mounted: bool = False

    @property
    def root(self) -> Path:
        return self.dir / "root"

    @property
    def log(self) -> Path:
        return self.dir / "sshd.log"


class PyinfraResult(subprocess.CompletedProcess[str]):
    """CompletedProcess plus `.json` (parsed stdout of `pyinfra --json`, else None)."""

    json: Any = None


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
    ):
        names = [h.name for h in hosts]
        if len(set(names)) != len(names):
            raise LabError(f"duplicate host names: {names}")
        for h in hosts:
            profiles.gpus(h.profile)  # fail early on a typo
        self.specs = list(hosts)
        self.rocm_release_versions = list(rocm_releases)
        self.run_id = secrets.token_hex(3)
        self._own_workdir = workdir is None
        self.workdir = (
            Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix=f"rflab-{self.run_id}-"))
        )
        self.keep_workdir = keep_workdir
        self.client_netns = f"rflab-{self.run_id}-c"
        self.bridge = f"rf{self.run_id}br"
        self.hosts: dict[str, _Host] = {}
        self.releases: list[Release] = []
        self.server: Server | None = None
        self.lab_key_fingerprint = ""
        self.timings: dict[str, float] = {}
        self._netns: list[str] = []
        self._gnupghome = self.workdir / "gnupg"
        self._lock = threading.Lock()
        self._entered = False
        self._mirror_by_suite: dict[str, Path] = {}
        #: name -> the MOK password someone types at the console on the next boot
        self._console: dict[str, str] = {}
        self._supervisor: threading.Thread | None = None
        self._supervising = threading.Event()
        #: name -> what each lab "boot" did (kernel chosen, MOK outcome), oldest first
        self.boots: dict[str, list[dict[str, str]]] = {}
        self._requested: dict[str, float] = {}  # host -> when its reboot was noticed

    # --- public paths ---------------------------------------------------------------------

    @property
    def _registry_file(self) -> Path:
        return REGISTRY / f"{self.run_id}.json"

    @property
    def inventory(self) -> Path:
        return self.workdir / "inventory.py"

    @property
    def ssh_config(self) -> Path:
        return self.workdir / "ssh_config"

    @property
    def ssh_key(self) -> Path:
        return self.workdir / "ssh" / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.workdir / "ssh" / "known_hosts"

    @property
    def ca_cert(self) -> Path:
        return self.workdir / "tls" / "ca.crt"

    @property
    def home(self) -> Path:
        return self.workdir / "home"

    def root(self, name: str) -> Path:
        """The host's root directory (an overlay mount; writable from the outside)."""
        return self._host(name).root

    def address(self, name: str) -> str:
        return self._host(name).address

    def host_netns(self, name: str) -> str:
        return self._host(name).netns

    def _host(self, name: str) -> _Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise LabError(f"no lab host {name!r}; hosts: {', '.join(self.hosts)}") from None

    # --- context manager ------------------------------------------------------------------

    def __enter__(self) -> Lab:
        self._entered = True
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
        REGISTRY.mkdir(parents=True, exist_ok=True)
        self._registry_file.write_text(
            json.dumps({"pid": os.getpid(), "run_id": self.run_id, "workdir": str(self.workdir)})
        )
        suites = sorted({h.suite for h in self.specs})
        with self._timed("matrix"):
            self.releases = [release(v) for v in self.rocm_release_versions]
        with ThreadPoolExecutor(4) as pool, self._timed("artefacts"):
            bases = {s: pool.submit(roots.sshbase_dir, s) for s in suites}
            mirrors = {s: pool.submit(mirror.mirror_dir, s) for s in suites}
            doubles = pool.submit(self._build_doubles)
            keys = pool.submit(self._make_client_files)
            base_dirs = {s: f.result() for s, f in bases.items()}
            self._mirror_by_suite = {s: f.result() for s, f in mirrors.items()}
            mirror_dirs = list(self._mirror_by_suite.values())
            doubles.result()
            keys.result()
        with self._timed("network"):
            self._add_netns(self.client_netns)
            self._ip_client("link", "add", self.bridge, "type", "bridge")
            self._ip_client("addr", "add", f"{SERVER_ADDRESS}/24", "dev", self.bridge)
            self._ip_client("link", "set", self.bridge, "up")
            self._ip_client("link", "set", "lo", "up")
        with self._timed("server"):
            www = self.workdir / "www"
            self.server = Server(
                self.workdir / "server",
                self.client_netns,
                SERVER_ADDRESS,
                {
                    "deb.debian.org": mirror_dirs,
                    "repo.radeon.com": [www / "radeon"],
                    "download.pytorch.org": [www / "pytorch"],
                },
                self.workdir / "tls" / "server.crt",
                self.workdir / "tls" / "server.key",
                python=str(PYTHON),
            )
            self.server.start()
        for i, spec in enumerate(self.specs, start=1):
            self.hosts[spec.name] = _Host(
                spec,
                i,
                f"{SUBNET}.{10 + i}",
                f"rflab-{self.run_id}-h{i}",
                f"rf{self.run_id}h{i}",
                self.workdir / "hosts" / spec.name,
            )
        with ThreadPoolExecutor(4) as pool, self._timed("hosts"):
            list(
                pool.map(
                    lambda h: self._create_host(h, base_dirs[h.spec.suite]), self.hosts.values()
                )
            )
        self._write_inventory()
        self._write_ssh_config()
        with ThreadPoolExecutor(4) as pool, self._timed("sshd"):
            list(pool.map(self._start_sshd, [h for h in self.hosts.values() if h.spec.sshd]))
        self._start_supervisor()
        self.timings["total_up"] = round(time.monotonic() - start, 2)

    # --- artefacts --------------------------------------------------------------------------

    def _build_doubles(self) -> None:
        www = self.workdir / "www"
        self.lab_key_fingerprint = amd_repo.build(www / "radeon", self.releases, self._gnupghome)
        pytorch_index.build(www / "pytorch", self.releases)
        make_certs(self.workdir / "tls", self.run_id)

    def _make_client_files(self) -> None:
        self.ssh_key.parent.mkdir(parents=True, exist_ok=True)
        run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                f"rflab-{self.run_id}",
                "-f",
                self.ssh_key,
            ]
        )
        self.known_hosts.touch()
        self.home.mkdir(parents=True, exist_ok=True)

    # --- network ------------------------------------------------------------------------------

    def _add_netns(self, name: str) -> None:
        run(["ip", "netns", "add", name])
        with self._lock:
            self._netns.append(name)

    def _ip_client(self, *args: str) -> None:
        run(["ip", "-n", self.client_netns, *args])

    # --- hosts ------------------------------------------------------------------------------

    def _create_host(self, host: _Host, base: Path) -> None:
        self._add_netns(host.netns)
        # Created inside the client netns with its peer moved straight into the host netns:
        # no lab interface ever exists in the root namespace.
        self._ip_client(
            "link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns
        )
        self._ip_client("link", "set", host.veth, "master", self.bridge, "up")
        ip_host = ["ip", "-n", host.netns]
        run([*ip_host, "addr", "add", f"{host.address}/24", "dev", "eth0"])
        run([*ip_host, "link", "set", "eth0", "up"])
        run([*ip_host, "link", "set", "lo", "up"])
        for sub in ("upper", "work", "root"):
            (host.dir / sub).mkdir(parents=True, exist_ok=True)
        run(
            [
                "mount",
                "-t",
                "overlay",
                "overlay",
                "-o",
                f"lowerdir={base},upperdir={host.dir / 'upper'},workdir={host.dir / 'work'}",
                host.root,
            ]
        )
        host.mounted = True
        self._customise_root(host)

    def _customise_root(self, host: _Host) -> None:
        root, name = host.root, host.spec.name
        (root / "etc/hostname").write_text(name + "\n")
        (root / "etc/hosts").write_text(
            f"127.0.0.1\tlocalhost\n127.0.1.1\t{name}\n{SERVER_ADDRESS}\t{' '.join(UPSTREAMS)}\n"
        )
        (root / "etc/resolv.conf").unlink(missing_ok=True)
        (root / "etc/resolv.conf").write_text("nameserver 127.0.0.1\n")
        ca = root / CA_PATH_IN_ROOT
        ca.parent.mkdir(parents=True, exist_ok=True)
        ca.write_bytes(self.ca_cert.read_bytes())
        ca.chmod(0o644)
        ssh_dir = root / "root/.ssh"
        ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        auth = ssh_dir / "authorized_keys"
        auth.write_text(self.ssh_key.with_suffix(".pub").read_text())
        auth.chmod(0o600)
        for old in (root / "etc/ssh").glob("ssh_host_*"):
            old.unlink()
        run(["ssh-keygen", "-A", "-f", root])
        (root / "run/sshd").mkdir(parents=True, exist_ok=True)
        profiles.write(root, host.spec.profile)
        stock = machine.stock_kernel(self._mirror_by_suite[host.spec.suite], host.spec.suite)
        machine.write(root, host.spec.machine, stock)

    def _start_sshd(self, host: _Host, timeout: float = 15.0) -> None:
        if host.sshd is not None and host.sshd.poll() is None:
            return
        r = host.root
        script = (
            f"hostname {host.spec.name} && "
            f"mount -t proc proc {r}/proc && "
            f"mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts {r}/dev/pts && "
            f"mount --bind {r}/dev/pts/ptmx {r}/dev/ptmx && "
            f"exec chroot {r} /usr/sbin/sshd -D -e -o UseDNS=no -o MaxStartups=64:30:200"
        )
        log_offset = host.log.stat().st_size if host.log.exists() else 0
        with open(host.log, "ab") as log:
            # `ip netns exec` execs unshare, so Popen.pid is unshare's pid; unshare ignores
            # SIGTERM, so stopping signals its child (sshd, pid 1 of the host's pid ns).
            host.sshd = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    host.netns,
                    "unshare",
                    "--mount",
                    "--pid",
                    "--uts",
                    "--fork",
                    "--kill-child",
                    *_fresh_uptime(),
                    "--",
                    "sh",
                    "-c",
                    script,
                ],
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            if host.sshd.poll() is not None:
                raise LabError(f"sshd of {host.spec.name} exited: {host.log.read_text()[-2000:]}")
            with open(host.log, "rb") as fh:
                fh.seek(log_offset)
                if b"Server listening on" in fh.read():
                    break
            if time.monotonic() > deadline:
                raise LabError(
                    f"sshd of {host.spec.name} not listening: {host.log.read_text()[-2000:]}"
                )
            time.sleep(0.02)
        proc = self.run(
            ["ssh", "-F", str(self.ssh_config), "-o", "ConnectTimeout=5", host.spec.name, "true"],
            timeout=30,
        )
        if proc.returncode != 0:
            raise LabError(f"cannot ssh into {host.spec.name}: {proc.stderr}")

    def _stop_sshd(self, host: _Host) -> None:
        proc = host.sshd
        if proc is None:
            return
        if proc.poll() is None:
            for child in _children(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()  # --kill-child: the namespace's pid 1 gets SIGKILL too
                proc.wait(5)
        host.sshd = None

    def stop_host(self, name: str) -> None:
        """Stop the host's sshd and everything in its pid namespace (connections refused)."""
        self._stop_sshd(self._host(name))

    def start_host(self, name: str) -> None:
        """Start (or restart after stop_host) the host's sshd in fresh namespaces."""
        self._start_sshd(self._host(name))

    def restart_host(self, name: str) -> None:
        """Like a reboot: all processes die, /proc, devpts and /run are fresh, uptime starts
        at 0, the newest installed kernel runs; other files persist."""
        self.stop_host(name)
        self._boot(self._host(name))
        self.start_host(name)

    # --- the simulated machine (machine.py) -------------------------------------------------

    def _boot(self, host: _Host) -> None:
        happened = machine.boot(host.root, self._console.pop(host.spec.name, None))
        happened["at"] = f"{time.monotonic():.2f}"
        requested = self._requested.pop(host.spec.name, None)
        if requested is not None:
            happened["requested"] = f"{requested:.2f}"
        self.boots.setdefault(host.spec.name, []).append(happened)

    def _start_supervisor(self) -> None:
        """Watch for hosts that ran the reboot double and power-cycle them (or not)."""
        self._supervising.set()
        self._supervisor = threading.Thread(
            target=self._supervise, name=f"rflab-{self.run_id}-supervisor", daemon=True
        )
        self._supervisor.start()

    def _supervise(self) -> None:
        while self._supervising.is_set():
            due = []
            for host in list(self.hosts.values()):
                proc = host.sshd
                if proc is None or proc.poll() is None or not machine.reboot_requested(host.root):
                    continue
                # Stamped for every host noticed in this pass before any is power-cycled
                # (one after the other, below), so tests can see which reboots overlapped.
                self._requested.setdefault(host.spec.name, time.monotonic())
                due.append(host)
            for host in due:
                host.sshd = None
                if not machine.returns_after_reboot(host.root):
                    (host.root / machine.MACHINE_DIR / "reboot-requested").unlink(missing_ok=True)
                    requested = self._requested.pop(host.spec.name, 0.0)
                    self.boots.setdefault(host.spec.name, []).append(
                        {"boot": "never came back", "requested": f"{requested:.2f}"}
                    )
                    continue
                time.sleep(REBOOT_SECONDS)
                try:
                    self._boot(host)
                    self._start_sshd(host)
                except Exception as exc:  # report in boots; the test sees a host that is down
                    self.boots.setdefault(host.spec.name, []).append({"boot": f"failed: {exc}"})
            time.sleep(0.2)

    def _stop_supervisor(self) -> None:
        self._supervising.clear()
        if self._supervisor is not None:
            self._supervisor.join(10)
            self._supervisor = None

    def confirm_mok_at_console(self, name: str, password: str) -> None:
        """Someone at the console types ``password`` into MokManager at the next boot (kept
        in the lab process only, never in the host root)."""
        self._host(name)
        self._console[name] = password

    def running_kernel(self, name: str) -> str:
        return machine.running_kernel(self._host(name).root)

    def set_running_kernel(self, name: str, release: str) -> None:
        machine.set_running_kernel(self._host(name).root, release)

    def set_returns_after_reboot(self, name: str, returns: bool) -> None:
        machine.set_returns(self._host(name).root, returns)

    def mokutil_calls(self, name: str) -> list[str]:
        return machine.mokutil_calls(self._host(name).root)

    def set_profile(self, name: str, profile_name: str) -> None:
        """Swap the host's GPUs (takes effect on the next rocminfo/torch call)."""
        host = self._host(name)
        profiles.write(host.root, profile_name)
        host.spec.profile = profile_name

    # --- client side ------------------------------------------------------------------------

    def _write_inventory(self) -> None:
        lines = [
            f"# Generated by the rocm-fleet test lab (run {self.run_id}); do not edit.",
            "",
            "lab = [",
        ]
        for host in self.hosts.values():
            data: dict[str, Any] = {
                "ssh_hostname": host.address,
                "ssh_user": "root",
                "ssh_key": str(self.ssh_key),
                "ssh_known_hosts_file": str(self.known_hosts),
                "ssh_strict_host_key_checking": "no",
                "rocm_key_fingerprint": self.lab_key_fingerprint,
            }
            data.update(host.spec.data)
            lines.append(f"    ({host.spec.name!r}, {{")
            lines += [f"        {k!r}: {v!r}," for k, v in data.items()]
            lines.append("    }),")
        lines += ["]", ""]
        self.inventory.write_text("\n".join(lines))

    def _write_ssh_config(self) -> None:
        blocks = []
        for host in self.hosts.values():
            blocks.append(
                f"Host {host.spec.name}\n    HostName {host.address}\n    User root\n"
                f"    IdentityFile {self.ssh_key}\n    IdentitiesOnly yes\n"
                f"    StrictHostKeyChecking no\n    UserKnownHostsFile /dev/null\n"
                f"    LogLevel ERROR\n"
            )
        self.ssh_config.write_text("\n".join(blocks))

    def env(self, **extra: str) -> dict[str, str]:
        """The whole environment of a lab command: nothing of the caller's (PIP_*, pyenv)
        leaks in, and values (a MOK password) travel in the environment, never in an argv."""
        return {"PATH": CLEAN_PATH, "HOME": str(self.home), "LANG": "C.UTF-8", **extra}

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
        """Run a command in the client netns (where the hosts and doubles are reachable)."""
        args = ["ip", "netns", "exec", self.client_netns, *(str(c) for c in cmd)]
        proc = subprocess.run(
            args,
            cwd=cwd or REPO_ROOT,
            text=True,
            capture_output=True,
            timeout=timeout,
            input=input,
            check=False,
            env=self.env(**(env or {})),
        )
        if check and proc.returncode != 0:
            raise LabError(
                f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
            )
        return proc

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
        """Run the dev venv's pyinfra in the client netns; the caller passes the inventory
        and deploy.  With json=True, stdout is parsed into `.json`.  `limit` is a host/group
        name, a comma-separated string of them, or an iterable.  `-y` is passed unless
        `yes=False` or the args hold --dry (with -y, --dry skips change detection); stdin is
        empty, so a prompt answers "no" instead of hanging."""
        if yes is None:
            yes = "--dry" not in [str(a) for a in args]
        cmd: list[str | os.PathLike[str]] = [VENV_BIN / "pyinfra"]
        if yes:
            cmd.append("-y")
        if json:
            cmd.append("--json")
        for pattern in _limit_patterns(limit):
            if not any(c in pattern for c in "*?[") and pattern not in (*self.hosts, "lab"):
                raise LabError(f"--limit {pattern!r} matches no lab host or group")
            cmd += ["--limit", pattern]
        cmd += list(args)
        proc = self.run(cmd, env=env, timeout=timeout, input="")
        result = PyinfraResult(proc.args, proc.returncode, proc.stdout, proc.stderr)
        if json:
            try:
                result.json = _json_loads(proc.stdout)
            except ValueError as exc:
                if check:
                    raise LabError(
                        f"pyinfra --json printed no JSON ({exc}):\n"
                        f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
                    ) from None
        if check and proc.returncode != 0:
            raise LabError(
                f"pyinfra failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
            )
        return result

    def ssh(
        self, name: str, command: str, *, check: bool = False, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run a shell command on a host over real SSH (as root)."""
        return self.run(
            ["ssh", "-F", str(self.ssh_config), name, command], check=check, timeout=timeout
        )

    # --- teardown -------------------------------------------------------------------------

    def resources(self) -> dict[str, list[Any]]:
        """What the lab holds right now: pids, netns names, mount points, gnupg home."""
        pids = [h.sshd.pid for h in self.hosts.values() if h.sshd and h.sshd.poll() is None]
        pids += [c for p in list(pids) for c in _children(p)]
        if self.server and self.server.pid:
            pids.append(self.server.pid)
        return {
            "pids": pids,
            "netns": list(self._netns),
            "mounts": [str(h.root) for h in self.hosts.values() if h.mounted],
            "workdir": [str(self.workdir)],
            "gnupghome": [str(self._gnupghome)],
        }

    def close(self) -> None:
        """Tear everything down (idempotent).  Ctrl-C is held off until it is done."""
        in_main = threading.current_thread() is threading.main_thread()
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
        errors: list[str] = []

        def attempt(what: str, fn: Any, *a: Any) -> None:
            try:
                fn(*a)
            except Exception as exc:  # keep tearing down the rest
                errors.append(f"{what}: {exc}")

        try:
            attempt("supervisor", self._stop_supervisor)
            for host in self.hosts.values():
                attempt(f"stop sshd {host.spec.name}", self._stop_sshd, host)
            if self.server:
                attempt("stop server", self.server.stop)
            for host in self.hosts.values():
                if host.mounted:
                    attempt(f"umount {host.root}", self._umount, host)
            for ns in reversed(self._netns):
                attempt(f"netns {ns}", self._del_netns, ns)
            attempt(
                "gpg-agent",
                lambda: subprocess.run(
                    ["gpgconf", "--kill", "all"],
                    env={"GNUPGHOME": str(self._gnupghome), "PATH": CLEAN_PATH},
                    check=False,
                    capture_output=True,
                ),
            )
            if not self.keep_workdir and self._own_workdir and not errors:
                attempt("workdir", rmtree, self.workdir)
            elif not self.keep_workdir and not errors:
                attempt("hosts", rmtree, self.workdir / "hosts")
            if not errors:
                self._registry_file.unlink(missing_ok=True)
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
        if errors:
            raise LabError("lab teardown incomplete:\n  " + "\n  ".join(errors))

    def _umount(self, host: _Host) -> None:
        for _ in range(50):
            proc = run(["umount", host.root], check=False)
            if proc.returncode == 0:
                host.mounted = False
                return
            time.sleep(0.1)
        raise LabError(f"cannot unmount {host.root}: {proc.stderr}")

    def _del_netns(self, name: str) -> None:
        run(["ip", "netns", "del", name])
        self._netns.remove(name)


#: How long a lab host stays down when its reboot double runs.
REBOOT_SECONDS = 1.0


def _fresh_uptime() -> list[str]:
    """unshare options for a time namespace whose CLOCK_BOOTTIME (/proc/uptime) starts at
    ~0, so a lab "reboot" is visible the way pyinfra's server.reboot and our reboot op
    check it; nothing when the kernel has no time namespaces."""
    if not Path("/proc/self/ns/time").exists():
        return []
    boottime = int(time.clock_gettime(time.CLOCK_BOOTTIME))
    return ["--time", "--boottime", str(-(boottime - 1))]


def _limit_patterns(limit: str | Iterable[str] | None) -> list[str]:
    """pyinfra's --limit takes one pattern per option (a "a,b" pattern silently matches
    nothing), so a comma-separated string or an iterable becomes repeated options."""
    if limit is None:
        return []
    items = limit.split(",") if isinstance(limit, str) else list(limit)
    return [p.strip() for p in items if p.strip()]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _json_loads(text: str) -> Any:
    """pyinfra --json prints JSON on stdout; tolerate stray lines before it."""
    try:
        return json.loads(text)
    except ValueError:
        start = text.find("{")
        if start < 0:
            raise
        return json.loads(text[start:])


def cleanup_stale() -> list[str]:
    """Remove what labs whose owner process died left behind; returns what was done.

    Everything is found from the registry entry: processes by the workdir in their
    cmdline or chroot (killed by pid), mounts under the workdir, netns named after the
    run id, the gpg-agent of the lab's GNUPGHOME.  Labs whose owner is alive are skipped.
    """
    done: list[str] = []
    if not REGISTRY.exists():
        return done
    for entry in sorted(REGISTRY.glob("*.json")):
        info = json.loads(entry.read_text())
        try:
            os.kill(info["pid"], 0)
            continue  # still running
        except ProcessLookupError:
            pass
        workdir, run_id = info["workdir"], info["run_id"]
        for pid in _pids_using(workdir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                done.append(f"killed pid {pid}")
        time.sleep(0.2)
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for mnt in sorted((m for m in mounts if m.startswith(workdir + "/")), reverse=True):
            run(["umount", "-l", mnt], check=False)
            done.append(f"unmounted {mnt}")
        listed = run(["ip", "netns", "list"]).stdout.split()
        for ns in listed:
            if ns.startswith(f"rflab-{run_id}-"):
                run(["ip", "netns", "del", ns], check=False)
                done.append(f"deleted netns {ns}")
        subprocess.run(
            ["gpgconf", "--kill", "all"],
            check=False,
            capture_output=True,
            env={"GNUPGHOME": f"{workdir}/gnupg", "PATH": CLEAN_PATH},
        )
        rmtree(Path(workdir))
        entry.unlink()
        done.append(f"removed {workdir}")
    return done


def _pids_using(workdir: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            root = os.readlink(proc / "root")
        except OSError:
            continue
        if workdir in cmdline or root.startswith(workdir):
            pids.append(int(proc.name))
    return pids
