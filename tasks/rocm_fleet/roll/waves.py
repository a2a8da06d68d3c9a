"""The waves of ``rocm-fleet roll`` carried out (drain, wait, change, check, resume), its log
and summary; hosts' changes come in as ``Steps``, time as callables, Slurm as ``SlurmNode``s:
asked on the node itself (``scontrol``, ``squeue`` as root), a command that fails raising
``SlurmUnreachable`` with Slurm's own words; the roll's drain reasons start ``rocm-fleet:``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TextIO

from rocm_fleet.cli.exits import Exit
from rocm_fleet.engine.remote import Ran
from rocm_fleet.model import grammar
from rocm_fleet.model.slurm import REASON_PREFIX, NodeState, SlurmOutputError, parse_node
from rocm_fleet.model.untrusted import visible

Runner = Callable[[Sequence[str]], Ran]


def parse_jobs(text: str) -> list[str]:
    """The job IDs of ``squeue --noheader --format=%i``'s output, one a line."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def reason(why: str) -> str:
    """A drain reason: the prefix, then ``why`` on one line, no double quote (Slurm keeps it as
    given)."""
    words = " ".join(why.replace('"', "'").split())
    return f"{REASON_PREFIX} {words}"[:250]


#: the reason of a node the roll drained to change it
ROLLING = reason("rolling maintenance: drained to be changed, resumed once checked")


class SlurmUnreachable(Exception):
    """Slurm did not answer (or refused) a command on a node; one line with its words."""


class SlurmNode:
    """One inventory host's node in Slurm, reached by running Slurm's client on it."""

    def __init__(self, host: str, run: Runner, node_name: str | None = None) -> None:
        self.host, self._run, self._name = host, run, node_name

    @property
    def name(self) -> str:
        """The node's NodeName=: the setting, else the host's short name, as slurmd's own."""
        if self._name is None:
            name = self._ask(["hostname", "--short"]).strip()
            # NodeName= and squeue -w take hostlist expressions: one plain name only.
            if not grammar.full(grammar.SLURM_NODE_NAME, name):
                raise SlurmUnreachable(f"{self.host}: hostname --short gave {name!r}, not one "
                                       "Slurm node name; set rocm_slurm_node_name")  # fmt: skip
            self._name = name
        return self._name

    def state(self) -> NodeState:
        text = self._ask(["scontrol", "show", "node", self.name])
        try:
            return parse_node(text)
        except SlurmOutputError as exc:
            raise SlurmUnreachable(f"{self.host}: {exc}") from None

    def jobs(self) -> list[str]:
        """The IDs of the jobs on the node (running, completing, suspended)."""
        return parse_jobs(self._ask(["squeue", "--noheader", "--format=%i", "-w", self.name]))

    def drain(self, reason: str) -> None:
        """Drain the node (no new job; running ones go on), or give a drained one ``reason``."""
        self._ask(["scontrol", "update", f"NodeName={self.name}", "State=DRAIN",
                   f"Reason={reason}"])  # fmt: skip

    def resume(self) -> None:
        self._ask(["scontrol", "update", f"NodeName={self.name}", "State=RESUME"])

    def _ask(self, argv: Sequence[str]) -> str:
        try:
            ran = self._run(argv)
        except Exception as exc:  # the engine's RemoteFailed: the node itself is gone
            raise SlurmUnreachable(" ".join(str(exc).split())) from None
        if ran.status != 0:
            said = " ".join((ran.stderr or ran.stdout).split()) or f"exit status {ran.status}"
            raise SlurmUnreachable(f"{self.host}: {argv[0]} {argv[1]}: {said}")
        return ran.stdout


def waves(hosts: Sequence[Target], max_unavailable: int) -> list[list[Target]]:
    """``hosts`` (those with drift, in order) in waves of at most ``max_unavailable``."""
    if max_unavailable < 1:
        raise ValueError(f"max_unavailable must be 1 or more, not {max_unavailable}")
    return [list(hosts[i : i + max_unavailable]) for i in range(0, len(hosts), max_unavailable)]


@dataclass(frozen=True)
class Outcome:
    ok: bool
    why: str = ""  #: one line, when not ok


@dataclass
class Target:
    """A host with drift, and its node in Slurm (``rocm_slurm_drain``)."""

    host: str
    slurm: SlurmNode | None
    drain_timeout: float = 3600.0
    recheck: bool = False  #: no drift, but an earlier roll left it drained
    keep_drained: bool = False  #: drained by someone else before the roll: left drained
    drained: bool = False  #: drained by a roll: resumed once it is checked


@dataclass(frozen=True)
class Steps:
    """What the roll does to a host besides Slurm; ``deployed`` drops its connection,
    ``accept`` is its acceptance run after the checks (None: none)."""

    deploy: Callable[[str], Outcome]
    check: Callable[[str], Outcome]
    deployed: Callable[[str], None] = lambda host: None
    accept: Callable[[str], Outcome | None] = lambda host: None


class Roll:
    """The waves, carried out; ``run()`` returns the exit status."""

    def __init__(self, targets: Sequence[Target], steps: Steps, max_unavailable: int, out: TextIO,
                 poll_interval: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, wall: Callable[[], float] = time.time,
                 max_failed: int = 0) -> None:  # fmt: skip
        self.waves = waves(list(targets), max_unavailable)
        self.steps, self.out, self.poll_interval = steps, out, poll_interval
        self.max_failed = max_failed
        self.clock, self.sleep, self.wall = clock, sleep, wall
        self.changed: list[str] = []
        self.busy: list[str] = []
        self.resumed: list[str] = []
        self.left_drained: list[str] = []
        self.why: dict[str, str] = {}  #: host -> why it failed

    def log(self, host: str, message: str) -> None:
        """A line of the roll's log (``visible``: it quotes what a node or Slurm said)."""
        stamp = time.strftime("%H:%M:%S", time.gmtime(self.wall()))
        self.out.write(f"{stamp} {host}: {visible(message)}\n")
        self.out.flush()

    def run(self) -> int:
        for number, wave in enumerate(self.waves, 1):
            names = ", ".join(t.host for t in wave)
            self.out.write(f"wave {number} of {len(self.waves)}: {names}\n")
            try:
                failed = self._wave(wave)
            except SlurmUnreachable as exc:
                return self._stopped(exc)
            if failed and len(self.why) > self.max_failed:
                rest = [t.host for later in self.waves[number:] for t in later]
                over = f" ({len(self.why)} failed, more than --max-failed {self.max_failed})"
                if rest:
                    said = f"stopped after wave {number}{over * bool(self.max_failed)}"
                    self.out.write(f"{said}; not rolled: {', '.join(rest)}\n")
                break
        return self._summary()

    def _wave(self, wave: list[Target]) -> bool:
        """Drain, wait, change, check and resume one wave; whether a host of it failed."""
        for target in wave:
            self._drain(target)
        ready = self._wait(wave)
        with ThreadPoolExecutor(max(len(ready), 1)) as pool:
            deployed = list(pool.map(self._deploy_and_check, ready))
        failed = False
        for target, outcome in zip(ready, deployed, strict=True):
            if outcome.ok:
                self.changed.append(target.host)
                self._resume(target)
            else:
                failed = True
                self.why[target.host] = outcome.why
                self.log(target.host, f"FAILED: {outcome.why}")
                if target.keep_drained:  # someone else's drain: their reason stays
                    self._left_drained(target, "left drained, as it was")
                elif target.slurm is not None and self._still_ours(target):
                    target.slurm.drain(reason(outcome.why))
                    self._left_drained(target, "drained: " + reason(outcome.why))
        return failed

    def _drain(self, target: Target) -> None:
        if target.slurm is None:
            return
        found = target.slurm.state()
        if found.drained_by_others:
            target.keep_drained = True
            self.log(target.host, f"already {found.describe()}: changed, then left drained")
            return
        target.slurm.drain(ROLLING)
        target.drained = True
        self.log(target.host, f"drain {target.slurm.name} ({ROLLING})")

    def _wait(self, wave: list[Target]) -> list[Target]:
        """The wave's hosts once empty; one busy at its timeout is resumed and left unchanged."""
        started = self.clock()
        waiting = [t for t in wave if t.slurm is not None]
        ready = [t for t in wave if t.slurm is None]
        said: dict[str, str] = {}
        while waiting:
            for target in list(waiting):
                assert target.slurm is not None
                found: NodeState = target.slurm.state()
                if not found.drain:  # resumed by someone while its jobs were waited for
                    waiting.remove(target)
                    self.resumed.append(target.host)
                    self._resumed_by_others(target, found)
                elif found.empty:
                    waiting.remove(target)
                    ready.append(target)
                    waited = self.clock() - started
                    self.log(target.host, f"drained, no job left (waited {waited:.0f}s)")
                elif self.clock() - started >= target.drain_timeout:
                    waiting.remove(target)
                    self._busy(target, target.slurm.jobs())
                else:
                    jobs = target.slurm.jobs()
                    # no job listed, the node not empty yet: a job's epilog still runs
                    flags = "".join(f"+{flag}" for flag in sorted(found.flags))
                    waited = f"job(s) {', '.join(jobs)}" if jobs else f"{found.state}{flags}"
                    if said.get(target.host) != waited:
                        said[target.host] = waited
                        self.log(target.host, f"waiting for {waited}")
            if waiting:
                self.sleep(self.poll_interval)
        return [t for t in wave if t in ready]

    def _busy(self, target: Target, jobs: list[str]) -> None:
        assert target.slurm is not None
        self.busy.append(target.host)
        why = (f"job(s) {', '.join(jobs) or '?'} still running after {target.drain_timeout:.0f}s "
               "(rocm_slurm_drain_timeout): not changed")  # fmt: skip
        if not target.drained:
            self.log(target.host, f"{why}; left drained, as it was")
        elif self._still_ours(target):
            target.slurm.resume()
            target.drained = False
            self.log(target.host, f"{why}; resumed (jobs are never killed)")
        else:
            self.log(target.host, why)

    def _deploy_and_check(self, target: Target) -> Outcome:
        if target.recheck:
            self.log(target.host, "no drift; node checks (an earlier roll left it drained)")
        else:
            self.log(target.host, "deploy")
            deployed = self.steps.deploy(target.host)
            self.steps.deployed(target.host)
            if not deployed.ok:
                return Outcome(False, f"deploy failed: {deployed.why}")
            self.log(target.host, "deployed; node checks")
        checked = self.steps.check(target.host)
        if not checked.ok:
            return Outcome(False, f"node checks failed: {checked.why}")
        accepted = self.steps.accept(target.host)
        if accepted is None:
            return checked
        self.log(target.host, f"node checks passed; {accepted.why}")
        return accepted

    def _resume(self, target: Target) -> None:
        if target.slurm is None:
            self.log(target.host, "changed and checked")
        elif target.keep_drained:
            self._left_drained(target, "changed and checked; left drained, as it was")
        elif self._still_ours(target):
            target.slurm.resume()
            target.drained = False
            self.log(target.host, f"checks passed; resume {target.slurm.name}")

    def _still_ours(self, target: Target) -> bool:
        """Whether Slurm still has the node drained for the roll's reason (someone may have
        drained it for theirs, or resumed it, meanwhile)."""
        assert target.slurm is not None
        found = target.slurm.state()
        if found.drained_by_roll:
            return True
        target.drained = False  # not the roll's drain any more: never resumed by it
        if found.drain:
            self._left_drained(target, f"drained meanwhile by someone else: {found.describe()}")
        else:
            self._resumed_by_others(target, found)
        return False

    def _resumed_by_others(self, target: Target, found: NodeState) -> None:
        target.drained = False
        self.log(target.host, f"resumed meanwhile by someone else ({found.describe()})")

    def _left_drained(self, target: Target, message: str) -> None:
        target.drained = False  # on purpose now: not the roll's to resume
        self.left_drained.append(target.host)
        self.log(target.host, message)

    def _stopped(self, exc: SlurmUnreachable) -> int:
        held = [t for wave in self.waves for t in wave if t.drained]
        print(f"rocm-fleet roll: Slurm did not answer: {visible(exc)}", file=sys.stderr)
        print("rocm-fleet roll: stopped before draining or changing another node", file=sys.stderr)
        if held:
            nodes = ",".join(t.slurm.name for t in held if t.slurm is not None)
            print(f"rocm-fleet roll: left drained by the roll: {', '.join(t.host for t in held)}; "
                  f"once Slurm answers, check them (rocm-fleet check) and resume: "
                  f"scontrol update NodeName={nodes} State=RESUME (or roll again)",
                  file=sys.stderr)  # fmt: skip
        self._summary()
        return Exit.NOT_CHECKED

    def _summary(self) -> int:
        parts = [f"{len(self.changed)} changed"]
        for label, hosts in (
            ("failed", list(self.why)),
            ("still busy, not changed", self.busy),
            ("resumed by someone else, not changed", self.resumed),
            ("left drained", self.left_drained),
        ):
            if hosts:
                parts.append(f"{label}: {', '.join(hosts)}")
        self.out.write("roll: " + "; ".join(parts) + "\n")
        for host, why in self.why.items():  # which nodes failed, and why
            self.out.write(f"  {host}: {visible(why)}\n")
        return Exit.FINDINGS if self.why or self.busy or self.resumed else Exit.OK
