"""``rocm-fleet roll INVENTORY [DEPLOY] --max-unavailable N``: rolling maintenance.

The deploy, a few nodes at a time, with Slurm told: first the audit finds the hosts with
drift (a host with none is never touched, never drained); then they are taken in waves of
at most ``--max-unavailable``. In each wave every node whose data sets ``rocm_slurm_drain``
is drained (``scontrol update State=DRAIN Reason="rocm-fleet: ..."``) and its jobs are
waited for, up to its ``rocm_slurm_drain_timeout`` (jobs are never killed: a node still
busy then is resumed unchanged, and named); then each node is deployed (``pyinfra INVENTORY
DEPLOY --limit HOST``) and checked (``rocm-fleet check INVENTORY --limit HOST``), and
resumed only when both passed (and, where ``rocm_acceptance`` is on, its acceptance run at the
level the change needs: docs/acceptance.md) and Slurm, asked again, still has it drained for
the roll's reason (a node someone drained for their own reason meanwhile stays drained). A
node that fails stays drained, its reason saying why (the failing step and its numbers), and
the roll ends after the wave in which more than ``--max-failed`` nodes (default 0) failed. A node
someone else had drained is changed and left drained; one an earlier roll left drained
with no drift left is checked again and resumed if it passes.

Slurm not answering (slurmctld down, MUNGE refusing) stops the roll at once: no other node
is drained or changed, and every node the roll had drained stays drained (Slurm keeps a
drain across its own restart); they are named, with the command that resumes them.

Exit status (``cli.exits``): 0 every host with drift was changed, checked and resumed (or
none had drift); 1 a host failed its deploy or checks (left drained), was still busy at its
timeout (left unchanged), or would be refused; 2 Slurm or a host did not answer; 4 bad input.
"""

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import click

from rocm_fleet.cli.exits import Command, Exit, described, epilog, option, worst
from rocm_fleet.cli.inventory import UsageError, host_options
from rocm_fleet.model.untrusted import visible
from rocm_fleet.roll.waves import Outcome, Roll, SlurmNode, SlurmUnreachable, Steps, Target, waves

DEFAULT_DEPLOY = "rocm_fleet.compose.fleet_node"


@dataclass(frozen=True)
class Audited:
    drifted: list[str]
    refused: list[str]
    unreachable: list[str]  #: unreachable or failed: not rolled


class AuditFailed(Exception):
    """The audit gave no report: nothing is known, nothing done."""


def audit(args: Any) -> Audited:
    """The hosts with drift, by ``rocm-fleet audit --json`` (the deploy planned read-only)."""
    passed = [f"--limit={limit}" for limit in args.limit] + [f"--data={d}" for d in args.data]
    command = [sys.executable, "-m", "rocm_fleet.cli", "audit", args.inventory, "--json", "-q"]
    found = subprocess.run(command + passed, capture_output=True, text=True, check=False)
    if found.returncode == Exit.USAGE:
        said = "rocm-fleet audit: "
        lines = [line[len(said) :] for line in found.stderr.splitlines() if line.startswith(said)]
        raise UsageError("\n".join(lines) or found.stderr.strip())
    try:
        rows = json.loads(found.stdout)["hosts"]
    except (ValueError, KeyError):
        said = " ".join(found.stderr.split())[-300:] or f"exit status {found.returncode}"
        raise AuditFailed(f"the audit found no hosts' drift: {said}") from None

    def having(*statuses: str) -> list[str]:
        return [row["host"] for row in rows if row["status"] in statuses]

    return Audited(having("drift"), having("refused"), having("unreachable", "failed"))


def run_step(command: list[str], env: dict[str, str] | None = None) -> Outcome:
    """A deploy or check (stdin empty: a prompt answers "no"), ``env`` added to ours."""
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
        env={**os.environ, **env} if env else None,
    )  # fmt: skip
    if done.returncode == 0:
        return Outcome(True)
    return Outcome(False, why_failed(done.stdout + done.stderr))


#: the width ``rocm-fleet check`` is given: wide enough that no check's line wraps
ONE_LINE = 100_000
_SAYS_WHY = re.compile(r"^\s*(?:\[\S+\]\s+(?:refused:|Error)|FAILED\s)")


def why_failed(output: str) -> str:
    """One line of why: the output's lines saying so, else its last three lines."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", output)  # pyinfra's colours
    lines = [line.strip() for line in plain.splitlines() if line.strip()]
    saying = [line for line in lines if _SAYS_WHY.match(line)]
    return " / ".join(dict.fromkeys(saying[-3:] or lines[-3:]))[-400:]


def run(args: Any) -> int:
    from rocm_fleet.cli.inventory import load_inventory, parse_data
    from rocm_fleet.engine.inventory_fleet import fleet_of
    from rocm_fleet.engine.remote import forget
    from rocm_fleet.model.config import ConfigError

    if args.max_unavailable < 1:
        raise UsageError(f"--max-unavailable {args.max_unavailable}: give 1 or more")
    if args.max_failed < 0:
        raise UsageError(f"--max-failed {args.max_failed}: give 0 or more")
    if args.poll_interval <= 0:
        raise UsageError(f"--poll-interval {args.poll_interval}: give a number of seconds > 0")
    try:
        found = audit(args)
    except AuditFailed as exc:
        print(f"rocm-fleet roll: {visible(exc)}; nothing drained or changed", file=sys.stderr)
        return Exit.NOT_CHECKED
    for host in found.unreachable:
        print(f"rocm-fleet roll: {host} did not answer the audit: not rolled", file=sys.stderr)
    for host in found.refused:
        print(f"rocm-fleet roll: {host} would be refused (see rocm-fleet audit)", file=sys.stderr)
    _, hosts = load_inventory(args.inventory, args.limit, False, parse_data(args.data) or None)
    fleet = fleet_of(hosts[0].inventory)
    by_name = {host.name: host for host in hosts}
    groups = {group for host in hosts[0].inventory for group in host.groups}
    unlimited = not_one_host_by_limit(list(by_name), groups)
    if unlimited:
        raise UsageError(f"host name(s) {', '.join(unlimited)}: pyinfra's --limit would take each "
                         "as a group or a pattern, so its deploy could reach hosts that were never "
                         "drained; rename them")  # fmt: skip
    targets, configs = [], {}
    for host in hosts:
        if host.name in found.unreachable + found.refused:
            continue
        try:
            config = fleet.config(host.name)
        except ConfigError as exc:
            raise UsageError(" ".join(str(exc).split())) from None
        configs[host.name] = config
        slurm = None
        if config.rocm_slurm_drain:  # run through sudo exactly when the deploy's commands are
            slurm = SlurmNode(host.name, runner(host), config.rocm_slurm_node_name)
        timeout = float(config.rocm_slurm_drain_timeout)
        targets.append(Target(host.name, slurm, timeout, recheck=host.name not in found.drifted))
    try:
        # a host with no drift is rolled when an earlier roll left it drained
        targets = [t for t in targets if not t.recheck or
                   (t.slurm is not None and t.slurm.state().drained_by_roll)]  # fmt: skip
    except SlurmUnreachable as exc:
        print(f"rocm-fleet roll: Slurm did not answer: {visible(exc)}; nothing changed",
              file=sys.stderr)  # fmt: skip
        return Exit.NOT_CHECKED
    if not targets:
        print("roll: no host has drift; nothing drained, nothing changed")
        return worst(audit_statuses(found))
    if args.dry:
        return dry(targets, args.max_unavailable, found)
    given = [f"--data={d}" for d in args.data]
    pyinfra = [sys.executable, "-m", "pyinfra", args.inventory, args.deploy, "-y", *given]
    check = [sys.executable, "-m", "rocm_fleet.cli", "check", args.inventory, *given]
    steps = Steps(
        deploy=lambda h: run_step([*pyinfra, "--limit", h]),
        # a line a check (not wrapped to a screen): why_failed reads the FAILED lines whole
        check=lambda h: run_step([*check, "--limit", h], {"COLUMNS": str(ONE_LINE)}),
        deployed=lambda h: forget(by_name[h]),
        accept=lambda h: accept(by_name[h], configs[h]),
    )
    roll = Roll(targets, steps, args.max_unavailable, sys.stdout, args.poll_interval,
                max_failed=args.max_failed)  # fmt: skip
    status = roll.run()
    return worst([status, *audit_statuses(found)])


def accept(host: Any, config: Any) -> Outcome | None:
    """The host's acceptance run at the level its change needs (``rocm_acceptance``), its
    record kept on the node; None when acceptance is off."""
    if config.rocm_acceptance == "off":
        return None
    from rocm_fleet.engine.remote import RemoteFailed
    from rocm_fleet.model.acceptance import reason_words
    from rocm_fleet.roll.acceptance.run import Acceptance, Tools, needed_level, suite

    python = config.venv_python if config.torch is not None else None
    node = Acceptance(runner(host), Tools(config.rocm_acceptance_rccl_tests, python))
    gfx = config.expected_gfx_list
    try:
        fingerprint = node.fingerprint()
        last = node.last()
        passed = last.fingerprint if last is not None and last.passed else None
        level = needed_level(config.rocm_acceptance, passed, fingerprint) or "quick"
        wanted = suite(level, gfx[0] if len(gfx) == 1 else None, config.rocm_acceptance_thresholds)
        record = node.run(wanted, fingerprint)
        kept = node.keep(record)
    except RemoteFailed as exc:
        return Outcome(False, f"acceptance: {reason_words(str(exc))}")
    if kept.status != 0:
        said = reason_words(kept.stderr or kept.stdout)[-200:]
        return Outcome(False, f"acceptance {level}: its record was not kept: {said}")
    return Outcome(record.passed, reason_words(record.summary()))


def runner(host: Any) -> Any:
    """A command runner on ``host``, through sudo exactly when the deploy's commands are."""
    from rocm_fleet.engine.remote import run_on
    from rocm_fleet.engine.run import sudo_asked

    sudo = sudo_asked(host)
    return lambda argv: run_on(host, argv, sudo)


def not_one_host_by_limit(names: list[str], groups: set[str]) -> list[str]:
    """The host names that ``pyinfra --limit NAME`` would not take as that host alone: it
    takes a group of that name first, and a name as a glob (``fnmatch``); a comma splits."""
    return sorted(n for n in names if n in groups or set(n) & set("*?[],"))


def audit_statuses(found: Audited) -> list[Exit]:
    """What the hosts the roll left alone add: a refusal is a finding, no answer is 2."""
    return [Exit.FINDINGS] * bool(found.refused) + [Exit.NOT_CHECKED] * bool(found.unreachable)


def dry(targets: list[Target], max_unavailable: int, found: Audited) -> int:
    """The plan: the waves, and each node's Slurm state now; nothing changes."""
    try:
        for number, wave in enumerate(waves(targets, max_unavailable), 1):
            print(f"wave {number}:")
            for target in wave:
                if target.slurm is None:
                    print(f"  {target.host}: drift; not in Slurm's hands (rocm_slurm_drain off)")
                    continue
                state = target.slurm.state()
                others = state.drained_by_others
                then = "changed, left drained" if others else "drained, changed, resumed"
                if target.recheck:
                    then = "checked again, resumed if they pass"
                drift = "no drift" if target.recheck else "drift"
                said = f"Slurm node {state.name} {state.describe()}"
                print(f"  {target.host}: {drift}; {visible(said)}: {then}")
    except SlurmUnreachable as exc:
        print(f"rocm-fleet roll: Slurm did not answer: {visible(exc)}", file=sys.stderr)
        return Exit.NOT_CHECKED
    return worst([Exit.FINDINGS, *audit_statuses(found)])


command = Command(
    "roll",
    run,
    gevent=True,
    help=described(__doc__),
    epilog=epilog(
        "Here: 0 every drifted host was changed, checked and resumed (or none drifted); "
        "1 a host failed its deploy or checks and stays drained, was still busy at its "
        "drain timeout, or would be refused; 2 Slurm or a host did not answer (the roll "
        "stopped; nodes it drained stay drained); 4 a bad option, inventory or setting"
    ),
    params=[
        click.Argument(["inventory"], help="pyinfra inventory (file, host list or module)"),
        click.Argument(["deploy"], required=False, default=DEFAULT_DEPLOY,
                       help=f"what pyinfra runs on each host (default {DEFAULT_DEPLOY}; in a "
                       "checkout: deploy.py)"),
        option("--max-unavailable", type=int, default=1, metavar="N",
               help="hosts taken out (drained and changed) at once: the size of a wave "
               "(default 1)"),
        *host_options(),
        option("--max-failed", type=int, default=0, metavar="N",
               help="hosts that may fail (deploy, checks or acceptance) before the roll stops "
               "after the wave where more did (default 0: stop after the first failing wave)"),
        option("--poll-interval", type=float, default=10.0, metavar="SECONDS",
               help="how often a draining node's jobs are looked at (default 10)"),
        option("--dry", is_flag=True,
               help="say which hosts have drift, their waves and their Slurm state; change "
               "nothing"),
    ],
)  # fmt: skip
