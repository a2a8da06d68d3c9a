"""Rolling maintenance (``rocm-fleet roll``): Slurm's node text read (``model.slurm``), and
the roll's waves carried out against a simulated slurmctld that answers ``scontrol`` and
``squeue`` with the text Debian's Slurm prints (tests/fixtures/slurm/), through the same
``SlurmNode`` the command uses. The real cluster is tests/e2e/test_slurm_waves.py's.
"""

from __future__ import annotations

import io
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rocm_fleet.cli.exits import Exit
from rocm_fleet.engine.remote import Ran
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.slurm import REASON_PREFIX, parse_node
from rocm_fleet.roll.command import DEFAULT_DEPLOY
from rocm_fleet.roll.waves import (
    ROLLING,
    Outcome,
    Roll,
    SlurmNode,
    SlurmUnreachable,
    Steps,
    Target,
    parse_jobs,
    reason,
    waves,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
#: what scontrol says with slurmctld stopped (recorded: the file's second line)
UNREACHABLE = (FIXTURES / "scontrol-controller-down-22.05.txt").read_text().splitlines()[1]


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- Slurm's text ---------------------------------------------------------------------------


RELEASES = ("22.05", "24.11")


@pytest.mark.parametrize("release", RELEASES)
def test_a_node_the_roll_drained_is_drained_and_its_own(release):
    node = parse_node(fixture(f"scontrol-show-node-drained-{release}.txt"))
    assert (node.name, node.state, node.flags) == ("gpu1", "IDLE", {"DRAIN"})
    assert node.reason == ROLLING  # without Slurm's [root@time]
    assert node.empty and node.drained_by_roll and not node.drained_by_others
    assert node.describe() == f"drained ({ROLLING})"


@pytest.mark.parametrize("release", RELEASES)
def test_a_node_an_admin_drains_under_a_job_is_busy_and_not_the_rolls(release):
    node = parse_node(fixture(f"scontrol-show-node-draining-admin-{release}.txt"))
    assert (node.name, node.state, node.flags) == ("gpu1", "ALLOCATED", {"DRAIN"})
    assert node.reason == "PSU swap, see ticket 4411"
    assert not node.empty and node.drained_by_others
    assert node.describe() == "draining (PSU swap, see ticket 4411)"
    assert parse_jobs(fixture(f"squeue-jobs-{release}.txt")) == ["1"]


@pytest.mark.parametrize("release", RELEASES)
def test_an_idle_node_has_no_reason_and_a_completing_one_is_not_empty_yet(release):
    idle = parse_node(fixture(f"scontrol-show-node-idle-{release}.txt"))
    assert (idle.state, idle.flags, idle.reason, idle.drain) == ("IDLE", set(), "", False)
    # a job's epilog still running: Slurm's COMPLETING flag on the drained node
    text = fixture(f"scontrol-show-node-drained-{release}.txt")
    completing = parse_node(text.replace("State=IDLE+DRAIN", "State=IDLE+COMPLETING+DRAIN"))
    assert completing.flags == {"COMPLETING", "DRAIN"} and not completing.empty


def test_a_node_not_responding_is_read_from_the_star():
    text = fixture("scontrol-show-node-idle-24.11.txt").replace("State=IDLE ", "State=DOWN*+DRAIN ")
    node = parse_node(text)
    assert (node.state, node.flags) == ("DOWN", {"DRAIN", "NOT_RESPONDING"})


def test_text_that_names_no_node_is_refused():
    from rocm_fleet.model.slurm import SlurmOutputError

    with pytest.raises(SlurmOutputError, match="not a node"):
        parse_node("Node gpu9 not found\n")


def test_squeue_job_ids_and_waves():
    assert parse_jobs("  1041\n1043\n\n") == ["1041", "1043"]
    assert waves(["a", "b", "c", "d", "e"], 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert waves([], 3) == []
    with pytest.raises(ValueError):
        waves(["a"], 0)


def test_a_reason_is_one_line_without_double_quotes():
    made = reason('node checks failed:\n  torch "sees" 0 GPUs')
    assert made == f"{REASON_PREFIX} node checks failed: torch 'sees' 0 GPUs"


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"rocm_slurm_node_name": "gpu[1-3]"}, "rocm_slurm_node_name"),
        ({"rocm_slurm_node_name": "gpu1 State=DOWN"}, "rocm_slurm_node_name"),
        ({"rocm_slurm_drain": "yes"}, "rocm_slurm_drain"),
        ({"rocm_slurm_drain_timeout": 0}, "rocm_slurm_drain_timeout"),
    ],
)
def test_bad_slurm_settings_are_refused_naming_the_key(data, key):
    with pytest.raises(ConfigError, match=key):
        load_config({"rocm_version": "6.4.3", **data}, "group_data/gpu.py")


def test_the_slurm_settings_default_to_no_drain():
    config = load_config({"rocm_version": "6.4.3"}, "inventory.py")
    assert config.rocm_slurm_drain is False
    assert config.rocm_slurm_drain_timeout == 3600
    assert config.rocm_slurm_node_name is None


# --- a simulated slurmctld ------------------------------------------------------------------


@dataclass
class Node:
    name: str
    state: str = "IDLE"
    flags: set[str] = field(default_factory=set)
    reason: str = ""
    jobs: list[str] = field(default_factory=list)
    #: polls of `scontrol show node` before each job ends, in order
    ends_after: list[int] = field(default_factory=list)


class Cluster:
    """slurmctld, as the node's scontrol/squeue see it; the events in the order they happen."""

    def __init__(self, *nodes: Node) -> None:
        self.nodes = {node.name: node for node in nodes}
        self.up = True
        self.events: list[tuple[str, str]] = []
        self.commands: list[list[str]] = []
        self.template = fixture("scontrol-show-node-drained-22.05.txt")

    def runner(self, host: str):
        def run(argv: Sequence[str]) -> Ran:
            self.commands.append(list(argv))
            if argv[0] == "hostname":
                return Ran(0, f"{host}\n", "")
            if not self.up:
                verb = "slurm_load_node" if argv[1] == "show" else "slurm_update"
                return Ran(1, "", UNREACHABLE.replace("slurm_load_node", verb))
            return self.answer(list(argv))

        return run

    def answer(self, argv: list[str]) -> Ran:
        if argv[:3] == ["scontrol", "show", "node"]:
            node = self.nodes[argv[3]]
            self.tick(node)
            return Ran(0, self.render(node), "")
        if argv[0] == "squeue":
            return Ran(0, "".join(f"{job}\n" for job in self.nodes[argv[-1]].jobs), "")
        if argv[:2] == ["scontrol", "update"]:
            words = dict(word.split("=", 1) for word in argv[2:])
            node = self.nodes[words["NodeName"]]
            if words["State"] == "DRAIN":
                node.flags.add("DRAIN")
                node.reason = words["Reason"]
                self.events.append(("drain", node.name))
            elif words["State"] == "RESUME":
                node.flags.discard("DRAIN")
                node.reason = ""
                self.events.append(("resume", node.name))
            return Ran(0, "", "")
        raise AssertionError(f"unexpected command {argv}")

    def tick(self, node: Node) -> None:
        if node.ends_after:
            node.ends_after[0] -= 1
            if node.ends_after[0] <= 0:
                node.ends_after.pop(0)
                node.jobs.pop(0)
        node.state = "MIXED" if node.jobs else "IDLE"

    def render(self, node: Node) -> str:
        state = "+".join([node.state, *sorted(node.flags)])
        text = self.template.replace("NodeName=gpu1", f"NodeName={node.name}")
        text = re.sub(r"State=\S+", f"State={state}", text)
        if node.reason:
            return re.sub(r"Reason=.*", f"Reason={node.reason} [root@2026-12-04T22:03:11]", text)
        return re.sub(r"\s*Reason=.*", "", text) + "\n"

    def drained(self) -> set[str]:
        return {name for name, node in self.nodes.items() if "DRAIN" in node.flags}


class Recorder:
    """The deploy and checks, recording when they ran against what Slurm had drained."""

    def __init__(self, cluster: Cluster, failing: dict[str, str] | None = None) -> None:
        self.cluster = cluster
        self.failing = failing or {}
        self.most_out = 0

    def deploy(self, host: str) -> Outcome:
        self.cluster.events.append(("deploy", host))
        drained = self.cluster.drained()
        self.most_out = max(self.most_out, len(drained))
        if host in self.cluster.nodes:
            assert host in drained, f"{host} deployed while not drained"
            assert not self.cluster.nodes[host].jobs, f"{host} deployed under a running job"
        return Outcome(True)

    def check(self, host: str) -> Outcome:
        self.cluster.events.append(("check", host))
        if host in self.failing:
            return Outcome(False, self.failing[host])
        return Outcome(True)

    def steps(self) -> Steps:
        return Steps(deploy=self.deploy, check=self.check)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def roll(cluster: Cluster, recorder: Recorder, hosts, max_unavailable=1, timeout=600.0, drain=True):
    clock = Clock()
    targets = [
        Target(h, SlurmNode(h, cluster.runner(h)) if drain else None, drain_timeout=timeout)
        for h in hosts
    ]
    out = io.StringIO()
    made = Roll(targets, recorder.steps(), max_unavailable, out, 5.0, clock, clock.sleep, clock)
    return made.run(), out.getvalue()


def test_waves_drain_wait_change_check_and_resume_at_most_max_unavailable_at_once():
    cluster = Cluster(Node("gpu1"), Node("gpu2", jobs=["1041"], ends_after=[3]), Node("gpu3"))
    recorder = Recorder(cluster)
    status, out = roll(cluster, recorder, ["gpu1", "gpu2", "gpu3"], max_unavailable=2)
    assert status == Exit.OK, out
    assert recorder.most_out == 2
    events = cluster.events
    # a wave's hosts are deployed and checked side by side: in either order between them
    assert events[:2] == [("drain", "gpu1"), ("drain", "gpu2")]
    assert sorted(events[2:6]) == [
        ("check", "gpu1"), ("check", "gpu2"), ("deploy", "gpu1"), ("deploy", "gpu2")
    ]  # fmt: skip
    assert events.index(("deploy", "gpu1")) < events.index(("check", "gpu1"))
    assert events[6:] == [
        ("resume", "gpu1"), ("resume", "gpu2"),
        ("drain", "gpu3"), ("deploy", "gpu3"), ("check", "gpu3"), ("resume", "gpu3"),
    ]  # fmt: skip
    assert "gpu2: waiting for job(s) 1041" in out and "roll: 3 changed" in out
    assert cluster.drained() == set()
    drains = [c for c in cluster.commands if c[:2] == ["scontrol", "update"] and "State=DRAIN" in c]
    assert all(c[-1] == f"Reason={ROLLING}" for c in drains)  # one word: scontrol's own


def test_a_node_busy_past_its_timeout_is_resumed_unchanged_and_jobs_are_never_killed():
    cluster = Cluster(Node("gpu1", jobs=["1041"], ends_after=[1000]), Node("gpu2"))
    recorder = Recorder(cluster)
    status, out = roll(cluster, recorder, ["gpu1", "gpu2"], timeout=30.0)
    assert status == Exit.FINDINGS, out
    assert ("deploy", "gpu1") not in cluster.events
    assert cluster.nodes["gpu1"].jobs == ["1041"]  # still running: not cancelled
    assert cluster.events[:2] == [("drain", "gpu1"), ("resume", "gpu1")]
    assert ("resume", "gpu2") in cluster.events  # the roll went on
    assert "job(s) 1041 still running after 30s (rocm_slurm_drain_timeout): not changed" in out
    assert "still busy, not changed: gpu1" in out


def test_a_node_that_fails_its_checks_stays_drained_saying_why_and_the_roll_stops():
    cluster = Cluster(Node("gpu1"), Node("gpu2"), Node("gpu3"))
    recorder = Recorder(cluster, failing={"gpu1": "torch sees 0 GPUs (expected 2)"})
    status, out = roll(cluster, recorder, ["gpu1", "gpu2", "gpu3"])
    assert status == Exit.FINDINGS, out
    assert ("resume", "gpu1") not in cluster.events
    assert cluster.nodes["gpu1"].reason == (
        "rocm-fleet: node checks failed: torch sees 0 GPUs (expected 2)"
    )
    assert cluster.drained() == {"gpu1"}
    assert not any(host != "gpu1" for _, host in cluster.events)  # no later wave
    assert "stopped after wave 1; not rolled: gpu2, gpu3" in out


def test_a_node_an_admin_drained_is_changed_and_left_drained_with_the_admins_reason():
    admin = Node("gpu1", flags={"DRAIN"}, reason="PSU swap, see ticket 4411")
    cluster = Cluster(admin)
    status, out = roll(cluster, Recorder(cluster), ["gpu1"])
    assert status == Exit.OK, out
    assert cluster.events == [("deploy", "gpu1"), ("check", "gpu1")]
    assert cluster.nodes["gpu1"].reason == "PSU swap, see ticket 4411"
    assert "left drained: gpu1" in out


def test_a_node_an_earlier_roll_left_drained_is_resumed_once_checked():
    earlier = Node("gpu1", flags={"DRAIN"}, reason=reason("node checks failed: x"))
    cluster = Cluster(earlier)
    status, _ = roll(cluster, Recorder(cluster), ["gpu1"])
    assert status == Exit.OK
    assert cluster.events[-1] == ("resume", "gpu1") and cluster.drained() == set()


ADMIN = "PSU swap, see ticket 4411"


def admin_drains(cluster: Cluster, host: str, step):
    """``step`` (the deploy or check), during which an administrator drains ``host`` with
    a reason of their own, over the roll's."""

    def run(name: str) -> Outcome:
        if name == host:
            cluster.nodes[host].flags.add("DRAIN")
            cluster.nodes[host].reason = ADMIN
        return step(name)

    return run


@pytest.mark.parametrize("failing", [{}, {"gpu1": "torch sees 0 GPUs"}])
def test_a_node_an_admin_drains_meanwhile_is_neither_resumed_nor_given_the_rolls_reason(failing):
    cluster = Cluster(Node("gpu1"), Node("gpu2"))
    recorder = Recorder(cluster, failing=failing)
    recorder.check = admin_drains(cluster, "gpu1", recorder.check)
    status, out = roll(cluster, recorder, ["gpu1", "gpu2"])
    assert ("resume", "gpu1") not in cluster.events
    assert cluster.nodes["gpu1"].reason == ADMIN and cluster.drained() == {"gpu1"}
    assert f"gpu1: drained meanwhile by someone else: drained ({ADMIN})" in out
    assert "left drained: gpu1" in out
    drains = [c for c in cluster.commands if c[:2] == ["scontrol", "update"]]
    assert [c for c in drains if "NodeName=gpu1" in c] == [
        ["scontrol", "update", "NodeName=gpu1", "State=DRAIN", f"Reason={ROLLING}"]
    ]
    if failing:
        assert status == Exit.FINDINGS and "failed: gpu1" in out
    else:
        assert status == Exit.OK, out
        assert ("resume", "gpu2") in cluster.events  # the roll went on


def test_a_busy_node_an_admin_drained_meanwhile_is_not_resumed_at_its_timeout():
    cluster = Cluster(Node("gpu1", jobs=["1041"], ends_after=[1000]))

    looks: list[str] = []
    tick = cluster.tick

    def drain_at_the_third_look(node: Node) -> None:
        looks.append(node.name)
        if len(looks) == 3:
            node.reason = ADMIN  # still drained, now for the administrator's reason
        tick(node)

    cluster.tick = drain_at_the_third_look
    status, out = roll(cluster, Recorder(cluster), ["gpu1"], timeout=30.0)
    assert status == Exit.FINDINGS, out
    assert ("resume", "gpu1") not in cluster.events and ("deploy", "gpu1") not in cluster.events
    assert cluster.nodes["gpu1"].reason == ADMIN and cluster.nodes["gpu1"].jobs == ["1041"]
    assert f"drained meanwhile by someone else: draining ({ADMIN})" in out


def test_a_node_resumed_by_someone_while_its_jobs_are_waited_for_is_not_changed():
    cluster = Cluster(Node("gpu1", jobs=["1041"], ends_after=[3]), Node("gpu2"))

    looks: list[str] = []
    tick = cluster.tick

    def resumed_at_the_second_look(node: Node) -> None:
        looks.append(node.name)
        if node.name == "gpu1" and len(looks) == 2:
            node.flags.discard("DRAIN")
            node.reason = ""
        tick(node)

    cluster.tick = resumed_at_the_second_look
    status, out = roll(cluster, Recorder(cluster), ["gpu1", "gpu2"])
    assert status == Exit.FINDINGS, out
    assert ("deploy", "gpu1") not in cluster.events  # it takes jobs again: never changed
    assert [e for e in cluster.events if e[1] == "gpu1"] == [("drain", "gpu1")]
    assert "gpu1: resumed meanwhile by someone else (mixed)" in out
    assert "resumed by someone else, not changed: gpu1" in out
    assert ("resume", "gpu2") in cluster.events


def test_slurm_down_between_waves_stops_before_another_node_is_drained_or_changed(capsys):
    cluster = Cluster(Node("gpu1"), Node("gpu2"), Node("gpu3"))
    recorder = Recorder(cluster)
    original = recorder.check

    def check_then_controller_dies(host: str) -> Outcome:
        if host == "gpu2":
            cluster.up = False  # slurmctld goes away while gpu2 is being checked
        return original(host)

    recorder.check = check_then_controller_dies
    status, out = roll(cluster, recorder, ["gpu1", "gpu2", "gpu3"])
    assert status == Exit.NOT_CHECKED, out
    assert ("deploy", "gpu3") not in cluster.events and ("drain", "gpu3") not in cluster.events
    assert cluster.drained() == {"gpu2"}  # changed, checked, but never resumed
    err = capsys.readouterr().err
    assert (
        # the node's state is read again before it is resumed: that read finds Slurm gone
        f"Slurm did not answer: gpu2: scontrol show: {UNREACHABLE}" in err
    )
    assert "stopped before draining or changing another node" in err
    assert "left drained by the roll: gpu2" in err
    assert "scontrol update NodeName=gpu2 State=RESUME" in err


def test_slurm_down_while_waiting_changes_nothing(capsys):
    cluster = Cluster(Node("gpu1", jobs=["7"], ends_after=[50]))
    recorder = Recorder(cluster)
    sleeps = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        cluster.up = len(sleeps) < 2

    clock = Clock()
    target = Target("gpu1", SlurmNode("gpu1", cluster.runner("gpu1")), 600.0)
    made = Roll([target], recorder.steps(), 1, io.StringIO(), 5.0, clock, sleep, clock)
    assert made.run() == Exit.NOT_CHECKED
    assert [e for e in cluster.events if e[0] == "deploy"] == []
    assert cluster.drained() == {"gpu1"}
    assert "left drained by the roll: gpu1" in capsys.readouterr().err


def test_hosts_without_rocm_slurm_drain_are_rolled_in_waves_without_slurm():
    cluster = Cluster()
    recorder = Recorder(cluster)
    status, _out = roll(cluster, recorder, ["ws1", "ws2"], drain=False)
    assert status == Exit.OK
    assert cluster.commands == []
    assert cluster.events == [
        ("deploy", "ws1"),
        ("check", "ws1"),
        ("deploy", "ws2"),
        ("check", "ws2"),
    ]


def test_dry_lists_the_waves_and_each_nodes_slurm_state_changing_nothing(capsys):
    from rocm_fleet.roll.command import Audited, dry

    cluster = Cluster(
        Node("gpu1"),
        Node("gpu2", flags={"DRAIN"}, reason="PSU swap"),
        Node("gpu3", flags={"DRAIN"}, reason=reason("node checks failed: x")),
    )
    targets = [Target(h, SlurmNode(h, cluster.runner(h))) for h in ("gpu1", "gpu2", "gpu3")]
    targets.append(Target("ws1", None))
    found = Audited(drifted=["gpu1", "gpu2", "gpu3", "ws1"], refused=[], unreachable=[])
    assert dry(targets, 2, found) == Exit.FINDINGS
    assert capsys.readouterr().out.splitlines() == [
        "wave 1:",
        "  gpu1: drift; Slurm node gpu1 idle: drained, changed, resumed",
        "  gpu2: drift; Slurm node gpu2 drained (PSU swap): changed, left drained",
        "wave 2:",
        "  gpu3: drift; Slurm node gpu3 drained (rocm-fleet: node checks failed: x): drained, "
        "changed, resumed",
        "  ws1: drift; not in Slurm's hands (rocm_slurm_drain off)",
    ]
    assert cluster.events == []


def test_dry_with_slurm_down_could_not_check(capsys):
    from rocm_fleet.roll.command import Audited, dry

    cluster = Cluster(Node("gpu1"))
    cluster.up = False
    targets = [Target("gpu1", SlurmNode("gpu1", cluster.runner("gpu1")))]
    assert dry(targets, 1, Audited(["gpu1"], [], [])) == Exit.NOT_CHECKED
    assert "Unable to contact slurm controller" in capsys.readouterr().err


class FakeHost:
    """What ``run_on`` uses of a pyinfra host: the shell command it was given."""

    name = "gpu1"
    connected = True

    def __init__(self) -> None:
        self.commands: list[tuple[str, dict]] = []

    def run_shell_command(self, command, print_output=False, **arguments):
        self.commands.append((command.get_raw_value(), arguments))

        class Output:
            stdout, stderr = "ok", ""

        return True, Output()


def test_a_reason_from_a_hosts_output_is_one_quoted_word_on_the_nodes_shell():
    from rocm_fleet.engine.remote import run_on

    host = FakeHost()
    said = reason("node checks failed: $(reboot); `id` State=DOWN'")
    ran = run_on(host, ["scontrol", "update", "NodeName=gpu1", "State=DRAIN", f"Reason={said}"])
    assert ran == Ran(0, "ok", "")
    command, arguments = host.commands[0]
    assert shlex.split(command) == [
        "scontrol", "update", "NodeName=gpu1", "State=DRAIN", f"Reason={said}"
    ]  # fmt: skip
    assert arguments == {}
    run_on(host, ["squeue"], sudo=True)
    assert host.commands[1][1] == {"_sudo": True}


@pytest.mark.parametrize(
    ("data", "sudo"),
    [
        ({}, False),
        ({"ssh_user": "root"}, False),
        # not root without _sudo: the deploy's preflight refuses it, so the roll never runs
        # scontrol there through a sudo the deploy itself would not use
        ({"ssh_user": "admin"}, False),
        ({"ssh_user": "admin", "_sudo": True}, True),
        ({"_sudo": True}, True),
    ],
)
def test_the_rolls_slurm_commands_use_sudo_by_the_deploys_own_rule(data, sudo):
    from pyinfra.api import Config, Inventory, State

    from rocm_fleet.engine.run import sudo_asked
    from rocm_fleet.roll.command import runner

    inventory = Inventory(([("gpu1", dict(data))], {}))
    State(inventory, Config())
    host = inventory.get_host("gpu1")
    host.connected = True
    ran: list[dict] = []

    def run_shell_command(command, print_output=False, **arguments):
        ran.append(arguments)
        return True, type(
            "Output", (), {"stdout": fixture("scontrol-show-node-idle-22.05.txt"), "stderr": ""}
        )()

    host.run_shell_command = run_shell_command
    assert sudo_asked(host) is sudo  # the rule preflight judges the deploy's commands by
    SlurmNode(host.name, runner(host), "gpu1").state()
    assert ran == [{"_sudo": True} if sudo else {}]
    host.current_deploy_kwargs = {"_sudo": True}  # rocm_node(_sudo=True), while planned
    assert sudo_asked(host) is True


def test_an_admin_drained_node_that_fails_keeps_the_admins_reason():
    admin = Node("gpu1", flags={"DRAIN"}, reason="PSU swap")
    cluster = Cluster(admin)
    status, out = roll(cluster, Recorder(cluster, failing={"gpu1": "rocminfo: no GPU"}), ["gpu1"])
    assert status == Exit.FINDINGS
    assert cluster.nodes["gpu1"].reason == "PSU swap" and cluster.drained() == {"gpu1"}
    assert "gpu1: FAILED: node checks failed: rocminfo: no GPU" in out


@pytest.mark.parametrize(
    ("returncode", "stdout", "stderr", "expected"),
    [
        (1, '{"exit_status": 1, "hosts": [{"host": "gpu1", "status": "drift"}, {"host": "gpu2",'
         ' "status": "ok"}, {"host": "gpu3", "status": "unreachable"}, {"host": "gpu4",'
         ' "status": "refused"}, {"host": "gpu5", "status": "failed"}]}', "",
         "drifted=['gpu1'] refused=['gpu4'] unreachable=['gpu3', 'gpu5']"),
        (4, "", "rocm-fleet audit: inventory file x.py does not exist\n", "UsageError: "
         "inventory file x.py does not exist"),
        (-9, "", "", "AuditFailed: the audit found no hosts' drift: exit status -9"),
    ],
)  # fmt: skip
def test_the_hosts_to_roll_are_the_audits_drifted_ones(monkeypatch, returncode, stdout, stderr,
                                                        expected):  # fmt: skip
    import subprocess
    from types import SimpleNamespace

    from rocm_fleet.roll import command

    ran = []

    def run(argv, **kwargs):
        ran.append(argv)
        return subprocess.CompletedProcess(argv, returncode, stdout, stderr)

    monkeypatch.setattr(command.subprocess, "run", run)
    args = SimpleNamespace(inventory="x.py", limit=["gpu*"], data=["rocm_version=7.2.1"])
    try:
        found = command.audit(args)
        said = f"drifted={found.drifted} refused={found.refused} unreachable={found.unreachable}"
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}"
    assert said == expected
    assert ran[0][-5:] == ["x.py", "--json", "-q", "--limit=gpu*", "--data=rocm_version=7.2.1"]


@pytest.mark.parametrize("release", RELEASES)
def test_slurmctld_down_is_slurm_unreachable_in_slurms_own_words(release):
    from rocm_fleet.roll.waves import SlurmUnreachable

    status, stderr = fixture(f"scontrol-controller-down-{release}.txt").split("\n", 1)
    ran = Ran(int(status.removeprefix("exit status ")), "", stderr)
    node = SlurmNode("gpu1", lambda argv: ran, "gpu1")
    with pytest.raises(SlurmUnreachable) as raised:
        node.state()
    assert str(raised.value) == (
        "gpu1: scontrol show: slurm_load_node error: Unable to contact slurm controller "
        "(connect failure)"
    )


def test_why_a_step_failed_is_its_refusal_or_failed_check_else_its_last_lines():
    from rocm_fleet.roll.command import why_failed

    deploy = (
        "--> Loading config...\n    \x1b[31m[gpu1] refused: expected 1 x gfx1100, found 8 x gfx942"
        "\x1b[0m\n--> Disconnecting from hosts...\n    No hosts remaining!\n"
    )
    assert why_failed(deploy) == "[gpu1] refused: expected 1 x gfx1100, found 8 x gfx942"
    check = (
        "ok      gpu1  rocminfo lists the GPUs\nFAILED  gpu1  torch sees the GPUs  0 != 1\n1 failed"
    )
    assert why_failed(check) == "FAILED  gpu1  torch sees the GPUs  0 != 1"
    assert why_failed("a\nb\n\nc\nd\n") == "b / c / d"


def test_a_node_an_earlier_roll_left_drained_with_no_drift_is_checked_again_not_deployed():
    earlier = Node("gpu1", flags={"DRAIN"}, reason=reason("node checks failed: FAILED gpu1 x"))
    cluster = Cluster(earlier)
    target = Target("gpu1", SlurmNode("gpu1", cluster.runner("gpu1")), 60.0, recheck=True)
    clock, out = Clock(), io.StringIO()
    made = Roll([target], Recorder(cluster).steps(), 1, out, 5.0, clock, clock.sleep, clock)
    assert made.run() == Exit.OK
    assert cluster.events == [("drain", "gpu1"), ("check", "gpu1"), ("resume", "gpu1")]
    assert "gpu1: no drift; node checks (an earlier roll left it drained)" in out.getvalue()


@pytest.mark.parametrize("said", ["gpu[01-64]", "gpu1,gpu2", "gpu 1", "", "-gpu"])
def test_a_host_name_that_is_not_one_slurm_node_is_refused_before_slurm_hears_it(said):
    # hostname --short's answer goes into NodeName= and squeue -w, which take hostlists.
    commands: list[list[str]] = []

    def run(argv: Sequence[str]) -> Ran:
        commands.append(list(argv))
        return Ran(0, f"{said}\n", "")

    node = SlurmNode("gpu1", run)
    with pytest.raises(SlurmUnreachable, match="not one Slurm node name; set rocm_slurm_node_name"):
        node.state()
    assert commands == [["hostname", "--short"]]  # scontrol was never asked
    assert SlurmNode("gpu1", run, "gpu1").name == "gpu1"  # the setting is taken as it is


def test_a_host_name_pyinfras_limit_would_widen_is_named():
    # Each host is deployed with --limit <name>: a group's name or a glob would reach hosts
    # the roll never drained.
    from rocm_fleet.roll.command import not_one_host_by_limit

    names = ["gpu1", "gpu2", "gpus", "gpu[12]", "gpu*", "node-3.lab"]
    assert not_one_host_by_limit(names, {"gpus", "slurm_nodes"}) == ["gpu*", "gpu[12]", "gpus"]
    assert not_one_host_by_limit(["gpu1", "node-3.lab"], {"gpus"}) == []


def test_the_roll_deploys_by_default_what_deploy_py_runs():
    # The roll audits the whole node (GPU containers too), so it must converge the whole node.
    module, name = DEFAULT_DEPLOY.rsplit(".", 1)
    text = (Path(__file__).resolve().parents[3] / "deploy.py").read_text()
    assert f"from {module} import {name}\n\n{name}()\n" in text
