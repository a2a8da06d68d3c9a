"""A real Slurm cluster on lab hosts: Debian's slurmctld, slurmd and munged, nothing doubled.

The hosts lie on the "slurm" base (``HostSpec(base="slurm")``: the sshbase plus Debian's
``slurmctld slurmd slurm-client munge``, roots.py), so the packages are those a Debian site
installs.  `Cluster` then does what a site's configuration management would:

* one MUNGE key for the cluster (random, ``/etc/munge/munge.key``, mode 0400, owned by
  munge) on every host, and the cluster's names in every host's ``/etc/hosts``;
* one ``/etc/slurm/slurm.conf`` on every host naming the controller and the nodes at their
  lab addresses, one partition ``gpu`` with every node; ``GresTypes=gpu`` and each node's
  ``Gres=`` as the site declares it (`set_node_gres`); no ``AutoDetect`` (Slurm's AMD
  autodetect needs ROCm SMI's library, which newer ROCm no longer builds: gres.conf is
  written by rocm-fleet instead), no cgroups (``proctrack/linuxproc``, ``task/none``:
  the lab hosts have no cgroup tree of their own);
* the daemons, each in its host's namespaces and root (`Lab.spawn`: ``nsenter`` on its pid 1, the
  way the timers double runs services): ``munged`` as user munge, ``slurmctld`` on the
  controller, ``slurmd`` on each node, in the foreground, their output in
  ``<workdir>/hosts/<name>/<daemon>.log``.  `close` (and ``__exit__``, also on an exception)
  stops each by pid, SIGTERM then SIGKILL; whatever is left dies with its host's pid
  namespace when the lab stops the host.

Commands (`scontrol`, `sbatch`, `sinfo`) run on a host over real SSH, as an admin would.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ._util import LabError
from .server import KILLED_EXIT_SECONDS
from .teardown import Steps

if TYPE_CHECKING:
    from .fleet import Lab

CLUSTER_NAME = "rflab"
PARTITION = "gpu"
SLURM_CONF = "etc/slurm/slurm.conf"
CGROUP_CONF = "etc/slurm/cgroup.conf"
#: slurmd loads a cgroup plugin even with proctrack/linuxproc and task/none, and the lab
#: hosts mount no cgroup tree: Slurm 22.05 (bookworm) initialises cgroup/v1 lazily (nothing
#: is mounted until a cgroup plugin is used), 24.11 (trixie) can turn it off.
CGROUP_PLUGIN = {"bookworm": "cgroup/v1", "trixie": "disabled"}
MUNGE_KEY = "etc/munge/munge.key"

#: How long the cluster waits for its nodes to register idle, and a daemon to stop.
READY_SECONDS = 60.0
STOP_SECONDS = 5.0


@dataclass
class _Daemon:
    host: str
    name: str  #: munged, slurmctld, slurmd
    process: subprocess.Popen[bytes]

    def pid(self) -> int | None:
        """The daemon itself: the child ``nsenter`` forked into the host's pid namespace."""
        from .hosts import children

        if self.process.poll() is not None:
            return None
        found = children(self.process.pid)
        return found[0] if found else None

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pid = self.pid()
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.kill()
            self.process.wait(KILLED_EXIT_SECONDS)


@dataclass
class Cluster:
    """Slurm on lab hosts: ``controller`` runs slurmctld, each of ``nodes`` slurmd.

    ``gres``: node -> its ``Gres=`` in slurm.conf (``"gpu:mi300x:8"``), as the site declares
    it; nodes without one declare none. ``conf_lines``: more lines the site adds.  Use as a
    context manager inside a running `Lab`.
    """

    lab: Lab
    controller: str
    nodes: Sequence[str]
    gres: dict[str, str] = field(default_factory=dict)
    #: more slurm.conf lines, as the site adds them (``HealthCheckProgram=...``)
    conf_lines: Sequence[str] = ()
    _daemons: list[_Daemon] = field(default_factory=list, init=False)

    # --- what a test uses ---------------------------------------------------------------

    @property
    def hosts(self) -> list[str]:
        return [self.controller, *self.nodes]

    def slurm_conf(self) -> str:
        """The cluster's slurm.conf (the same file on every host)."""
        ctl = self.controller
        lines = [
            f"ClusterName={CLUSTER_NAME}",
            f"SlurmctldHost={ctl}({self.lab.address(ctl)})",
            "SlurmUser=slurm",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "MpiDefault=none",
            "ReturnToService=2",
            "GresTypes=gpu",
            "StateSaveLocation=/var/lib/slurm/slurmctld",
            "SlurmdSpoolDir=/var/lib/slurm/slurmd",
            "SlurmctldPidFile=/run/slurmctld.pid",
            "SlurmdPidFile=/run/slurmd.pid",
            "SlurmctldLogFile=/var/log/slurm/slurmctld.log",
            "SlurmdLogFile=/var/log/slurm/slurmd.log",
            "SlurmdTimeout=30",
        ]
        lines += self.conf_lines
        for node in self.nodes:
            gres = f" Gres={self.gres[node]}" if self.gres.get(node) else ""
            lines.append(f"NodeName={node} NodeAddr={self.lab.address(node)}{gres} State=UNKNOWN")
        lines.append(
            f"PartitionName={PARTITION} Nodes={','.join(self.nodes)} Default=YES "
            "MaxTime=INFINITE State=UP"
        )
        return "\n".join(lines) + "\n"

    def command(
        self, host: str, *argv: str, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """A Slurm client command on ``host`` over SSH; ``check`` raises LabError on failure."""
        proc = self.lab.ssh(host, shlex.join(argv))
        if check and proc.returncode != 0:
            raise LabError(
                f"{host}: {shlex.join(argv)} failed ({proc.returncode}):\n"
                f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}"
            )
        return proc

    def scontrol(self, host: str, *args: str) -> str:
        """``scontrol ARGS`` on ``host``; its stdout."""
        return self.command(host, "scontrol", *args).stdout

    def show_node(self, node: str, on: str | None = None) -> str:
        """``scontrol show node NODE`` (run on the controller unless ``on`` names a host)."""
        return self.scontrol(on or self.controller, "show", "node", node)

    def submit(
        self, seconds: float, *, nodelist: str | None = None, gres: str | None = None
    ) -> int:
        """``sbatch --wrap 'sleep SECONDS'`` on the controller; the job id."""
        argv = ["sbatch", "--parsable", f"--partition={PARTITION}", "--wrap", f"sleep {seconds}"]
        if nodelist:
            argv.append(f"--nodelist={nodelist}")
        if gres:
            argv.append(f"--gres={gres}")
        out = self.command(self.controller, *argv).stdout.strip()
        return int(out.split(";")[0])

    def jobs(self) -> dict[int, tuple[str, str]]:
        """Job id -> (state, node list) of every job squeue still lists (``RUNNING``, ...)."""
        out = self.command(self.controller, "squeue", "--noheader", "-o", "%i %T %N").stdout
        jobs: dict[int, tuple[str, str]] = {}
        for line in out.splitlines():
            parts = line.split()
            if parts:
                jobs[int(parts[0])] = (parts[1], parts[2] if len(parts) > 2 else "")
        return jobs

    def wait_jobs_done(self, job_ids: Iterable[int], timeout: float = READY_SECONDS) -> None:
        """Wait until squeue lists none of ``job_ids`` (they ran and ended)."""
        wanted = set(job_ids)
        deadline = time.monotonic() + timeout
        left: dict[int, tuple[str, str]] = {}
        while time.monotonic() < deadline:
            left = {j: s for j, s in self.jobs().items() if j in wanted}
            if not left:
                return
            time.sleep(0.5)
        raise LabError(f"Slurm jobs still queued after {timeout:.0f} s: {left}\n{self.logs()}")

    def node_states(self) -> dict[str, str]:
        """node -> its state as sinfo prints it (``idle``, ``alloc``, ``drain``, ...)."""
        out = self.command(self.controller, "sinfo", "--noheader", "--Node", "-o", "%N %t").stdout
        states: dict[str, str] = {}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2:
                states[parts[0]] = parts[1]
        return states

    def wait_idle(self, nodes: Iterable[str] | None = None, timeout: float = READY_SECONDS) -> None:
        """Wait until every one of ``nodes`` (default: all) is idle; LabError with the
        states and the daemons' logs if not within ``timeout``."""
        wanted = list(nodes) if nodes is not None else list(self.nodes)
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.node_states()
            if all(states.get(n) == "idle" for n in wanted):
                return
            exited = [f"{d.name} on {d.host}" for d in self._daemons if not d.running()]
            if exited:
                raise LabError(f"Slurm daemons exited: {', '.join(exited)}\n{self.logs()}")
            time.sleep(0.5)
        raise LabError(f"Slurm nodes not idle after {timeout:.0f} s: {states}\n{self.logs()}")

    def logs(self) -> str:
        """The tail of every daemon's log, for failure messages."""
        parts = []
        for daemon in self._daemons:
            log = self._log(daemon.host, daemon.name)
            text = log.read_text(errors="replace")[-1500:] if log.exists() else ""
            parts.append(f"--- {daemon.host} {daemon.name}:\n{text}")
        return "\n".join(parts)

    # --- the site changes its configuration ---------------------------------------------

    def set_node_gres(self, gres: Mapping[str, str | None]) -> None:
        """Declare nodes' ``Gres=`` in slurm.conf (None: none), write it to every host,
        restart the daemons (slurmd reads gres.conf only when it starts) and wait idle."""
        for node, value in gres.items():
            if node not in self.nodes:
                raise LabError(f"{node!r} is no node of the cluster: {', '.join(self.nodes)}")
            if value:
                self.gres[node] = value
            else:
                self.gres.pop(node, None)
        self.restart()

    def restart(self) -> None:
        """Stop every daemon, write the configuration again, start them all, wait idle."""
        self.stop()
        self.start()

    def stop_controller(self) -> None:
        """Stop slurmctld (an outage: every client command fails until `start_controller`)."""
        for daemon in [d for d in self._daemons if d.name == "slurmctld"]:
            daemon.stop()
            self._daemons.remove(daemon)

    def start_controller(self) -> None:
        """Start slurmctld again after `stop_controller` (it keeps the nodes' drains)."""
        self._start_daemon(self.controller, "slurmctld")

    def start_node(self, node: str) -> None:
        """Start munged and slurmd on ``node`` again (after `lab.restart_host`, say)."""
        self._start_daemon(node, "munged")
        self._start_daemon(node, "slurmd")

    # --- bring-up and teardown ------------------------------------------------------------

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Configure every host, start munged everywhere, slurmctld, then the slurmds."""
        if not self.nodes:
            raise LabError("a Slurm cluster needs at least one node")
        suites = {h: self.lab.suite(h) for h in self.hosts}
        if len(set(suites.values())) != 1:
            # slurmctld talks to slurmds of its own and the two previous releases only:
            # 24.11 (trixie) refuses 22.05 (bookworm) ("Incompatible versions").
            raise LabError(f"a lab Slurm cluster is of one suite (one Slurm release): {suites}")
        self._configure()
        for host in self.hosts:
            self._start_daemon(host, "munged")
        self._start_daemon(self.controller, "slurmctld")
        for node in self.nodes:
            self._start_daemon(node, "slurmd")
        self.wait_idle()

    def stop(self) -> None:
        """Stop every daemon by pid (nodes first, munged last); raise what failed."""
        steps = Steps()
        self.close_into(steps)
        steps.raise_errors()

    close = stop

    def close_into(self, steps: Steps) -> None:
        order = {"slurmd": 0, "slurmctld": 1, "munged": 2}
        for daemon in sorted(self._daemons, key=lambda d: order[d.name]):
            steps.attempt(f"stop {daemon.name} on {daemon.host}", daemon.stop)
        self._daemons.clear()

    def pids(self) -> list[int]:
        """The running daemons' pids (and their nsenter's), for teardown tests."""
        pids = []
        for daemon in self._daemons:
            if daemon.running():
                pids.append(daemon.process.pid)
                pid = daemon.pid()
                if pid is not None:
                    pids.append(pid)
        return pids

    def _configure(self) -> None:
        key = secrets.token_bytes(1024)
        conf = self.slurm_conf()
        cluster_hosts = "".join(f"{self.lab.address(h)}\t{h}\n" for h in self.hosts)
        for host in self.hosts:
            root = self.lab.root(host)
            if not (root / "var/lib/dpkg/info/slurmd.list").exists():
                raise LabError(f"{host} has no Slurm: give it HostSpec(..., base='slurm')")
            munge = _ids(root, "munge")
            slurm = _ids(root, "slurm")
            key_path = root / MUNGE_KEY
            key_path.parent.mkdir(parents=True, exist_ok=True)
            key_path.unlink(missing_ok=True)
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as fh:
                fh.write(key)
            os.chown(key_path, *munge)
            (root / SLURM_CONF).write_text(conf)
            (root / SLURM_CONF).chmod(0o644)
            suite = self.lab.suite(host)
            (root / CGROUP_CONF).write_text(f"CgroupPlugin={CGROUP_PLUGIN[suite]}\n")
            for path, owner in (
                ("run/munge", munge),
                ("var/lib/munge", munge),
                ("var/log/munge", munge),
                ("var/lib/slurm/slurmctld", slurm),
                ("var/lib/slurm/slurmd", (0, 0)),
                ("var/log/slurm", slurm),
            ):
                (root / path).mkdir(parents=True, exist_ok=True)
                os.chown(root / path, *owner)
            hosts_file = root / "etc/hosts"
            lines = [
                line
                for line in hosts_file.read_text().splitlines(keepends=True)
                if not line.rstrip().endswith(tuple(f"\t{h}" for h in self.hosts))
                or line.startswith("127.")
            ]
            others = "".join(
                line
                for line in cluster_hosts.splitlines(keepends=True)
                if not line.endswith(f"\t{host}\n")
            )
            hosts_file.write_text("".join(lines) + others)

    def _start_daemon(self, host: str, name: str) -> None:
        argv = {
            # setpriv execs (runuser would stay between the signal and munged)
            "munged": [
                "setpriv",
                "--reuid=munge",
                "--regid=munge",
                "--clear-groups",
                "/usr/sbin/munged",
                "--foreground",
            ],
            "slurmctld": ["/usr/sbin/slurmctld", "-D"],
            "slurmd": ["/usr/sbin/slurmd", "-D"],
        }[name]
        process = self.lab.spawn(host, argv, log=self._log(host, name))
        daemon = _Daemon(host, name, process)
        self._daemons.append(daemon)
        if name == "munged":
            self._wait_for(
                daemon, lambda: (self.lab.root(host) / "run/munge/munge.socket.2").exists()
            )

    def _wait_for(self, daemon: _Daemon, ready: object, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not daemon.running():
                raise LabError(
                    f"{daemon.name} on {daemon.host} exited:\n"
                    f"{self._log(daemon.host, daemon.name).read_text(errors='replace')[-2000:]}"
                )
            if ready():  # type: ignore[operator]
                return
            time.sleep(0.05)
        raise LabError(f"{daemon.name} on {daemon.host} not ready after {timeout:.0f} s")

    def _log(self, host: str, name: str) -> Path:
        return self.lab.workdir / "hosts" / host / f"{name}.log"


def _ids(root: Path, user: str) -> tuple[int, int]:
    """uid and gid of ``user`` in the root's /etc/passwd (the package made it)."""
    for line in (root / "etc/passwd").read_text().splitlines():
        fields = line.split(":")
        if fields[0] == user:
            return int(fields[2]), int(fields[3])
    raise LabError(f"no user {user!r} in {root}/etc/passwd")
