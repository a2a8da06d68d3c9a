"""End to end: ``rocm-fleet roll`` on a real Slurm cluster (Debian's slurmctld, slurmd and
munged on lab hosts, ``lab.slurm.Cluster``): a ROCm release change taken one wave at a time.

Three GPU nodes converged on 6.4.3 are rolled to 7.2.1 with ``--max-unavailable 2`` while a job
runs on one of them (``sbatch --wrap``, held until the test lets it end, once Slurm shows the
node drained around it): that node is drained but changed only after its job ended, no node
goes back into service before its checks passed, and Slurm itself (sampled by
``sinfo``/``squeue`` on the controller all along) never has more than two of them drained. A
second roll finds no drift and drains nothing. Then slurmctld is stopped while a node is being
changed: the roll stops with exit 2, naming the node it left drained, and changes no other
node; Slurm still has the node drained, with the roll's reason, when slurmctld is back. Last, a
node whose card turns out wrong once drained is refused by the deploy and stays drained, the
refusal its reason; with its card back and nothing left to change, the next roll checks it
again and resumes it.
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from e2e.support import inventory_with, running_lab
from lab import HostSpec
from lab._util import REPO_ROOT
from lab.slurm import PARTITION, Cluster
from rocm_fleet.model.slurm import parse_node
from rocm_fleet.roll.waves import ROLLING

pytestmark = pytest.mark.e2e

CONTROLLER = "ctl"
NODES = ["gpu1", "gpu2", "gpu3"]
ALL_NODES = ",".join(NODES)
DATA = {
    "rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
    "rocm_users": ["alice"], "pytorch_install": False,
}  # fmt: skip
# the nodes start converged on 6.4.3 (tests/lab/converged.py): their first deploy is not
# what this module is about
HOSTS = [HostSpec(CONTROLLER, base="slurm")] + [
    HostSpec(node, base="slurm", data=dict(DATA), converged=True) for node in NODES
]
ROLL_DATA = {"rocm_slurm_drain": True, "rocm_slurm_drain_timeout": 300}
HOLD = "/var/tmp/e2e-slurm-waves-release"  # on gpu1: the held job ends once this exists
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d (\S+): (.*)$")


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3", "7.2.1"])


@pytest.fixture(scope="module")
def cluster(lab):
    with Cluster(lab, CONTROLLER, NODES) as cluster:
        yield cluster


@dataclass
class Rolled:
    """A roll's exit status and its stdout lines, each with when it arrived (monotonic)."""

    returncode: int
    lines: list[tuple[float, str]]
    stderr: str

    @property
    def output(self) -> str:
        return "\n".join(line for _, line in self.lines) + "\n" + self.stderr

    def when(self, host: str, starts: str) -> float:
        """When the roll said ``starts...`` of ``host``."""
        for at, line in self.lines:
            found = LOG_LINE.match(line)
            if found and found.group(1) == host and found.group(2).startswith(starts):
                return at
        raise AssertionError(f"the roll never said '{host}: {starts}':\n{self.output}")


@dataclass
class Sample:
    """One look at slurmctld: taken between ``start`` and ``end`` (monotonic)."""

    start: float
    end: float
    drained: set[str]
    running: set[int]


@dataclass
class Sampled:
    """What slurmctld said while a roll ran."""

    samples: list[Sample] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


def sample(cluster: Cluster, sampled: Sampled) -> None:
    while not sampled.stop.is_set():
        start = time.monotonic()
        states = cluster.node_states()  # sinfo %t: drain, drng, idle, mix, ...
        drained = {node for node, state in states.items() if state.startswith(("drain", "drng"))}
        running = {job for job, (state, _) in cluster.jobs().items() if state == "RUNNING"}
        sampled.samples.append(Sample(start, time.monotonic(), drained, running))
        sampled.stop.wait(0.5)


def sampled_roll(
    lab, cluster: Cluster, inventory: Path, *args: str, sampled: Sampled | None = None, on_line=None
) -> tuple[Rolled, Sampled]:
    """``roll`` while slurmctld's view is sampled every half second."""
    sampled = sampled or Sampled()
    sampler = threading.Thread(target=sample, args=(cluster, sampled), daemon=True)
    sampler.start()
    try:
        return roll(lab, inventory, *args, on_line=on_line), sampled
    finally:
        sampled.stop.set()
        sampler.join(30)


def held_job(cluster: Cluster, node: str) -> int:
    """A job on ``node`` that runs until ``release`` (it removes HOLD as it ends); its id."""
    wrap = f"until [ -e {HOLD} ]; do sleep 0.2; done; rm -f {HOLD}"
    argv = ["sbatch", "--parsable", f"--partition={PARTITION}", f"--nodelist={node}"]
    out = cluster.command(CONTROLLER, *argv, "--wrap", wrap).stdout.strip()
    return int(out.split(";")[0])


def release(lab, node: str) -> None:
    lab.ssh(node, f"touch {HOLD}", check=True)


def roll(lab, inventory: Path, *args: str, on_line=None, limit=ALL_NODES) -> Rolled:
    """``rocm-fleet roll`` in the lab's client netns, its lines read as they come."""
    cli = str(Path(lab.env()["PATH"].split(":")[0]) / "rocm-fleet")
    argv = [cli, "roll", str(inventory), "deploy.py", "--limit", limit]
    process = subprocess.Popen(
        ["ip", "netns", "exec", lab.client_netns, *argv, "--poll-interval", "1", *args],
        cwd=REPO_ROOT,
        env=lab.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append((time.monotonic(), line.rstrip("\n")))
            if on_line is not None:
                on_line(line)
        stderr = process.stderr.read() if process.stderr else ""
        process.wait(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return Rolled(process.returncode, lines, stderr)


def versions(lab) -> dict[str, str]:
    """Each node's ROCm release, as its apt source names it."""
    found = {}
    for node in NODES:
        source = (lab.root(node) / "etc/apt/sources.list.d/rocm.list").read_text()
        match = re.search(r"/rocm/apt/(\d+\.\d+(?:\.\d+)?) ", source)
        found[node] = match.group(1) if match else source
    return found


@pytest.fixture
def on_6_4_3(lab, cluster, tmp_path) -> None:
    """Every node on 6.4.3 and in service, as the lab starts them: a node another test rolled
    to 7.2.1 is rolled back (after the card test, gpu1 is the one)."""
    moved = [node for node, release in versions(lab).items() if release != "6.4.3"]
    if moved:
        inventory = inventory_with(
            lab, tmp_path / "to-6.4.3.py", {**ROLL_DATA, "rocm_version": "6.4.3"}
        )
        back = roll(lab, inventory, limit=",".join(moved))
        assert back.returncode == 0, back.output
    assert versions(lab) == dict.fromkeys(NODES, "6.4.3")
    cluster.wait_idle(NODES)


def test_a_release_change_rolls_in_waves_around_a_running_job(lab, cluster, on_6_4_3, tmp_path):
    inventory = inventory_with(
        lab, tmp_path / "to-7.2.1.py", {**ROLL_DATA, "rocm_version": "7.2.1"}
    )
    lab.ssh("gpu1", f"rm -f {HOLD}", check=True)
    job = held_job(cluster, "gpu1")
    released: list[float] = []  # when the job was let go, Slurm having shown it held
    let_go: list[bool] = []
    waited: list[bool] = []
    try:
        deadline = time.monotonic() + 120
        while cluster.jobs().get(job, ("",))[0] != "RUNNING":
            assert time.monotonic() < deadline, cluster.jobs()
            time.sleep(0.5)
        sampled = Sampled()

        def let_the_job_end() -> None:
            # once slurmctld was seen with wave 1 drained around the running job
            deadline = time.monotonic() + 120
            while not any(
                job in seen.running and seen.drained == {"gpu1", "gpu2"}
                for seen in list(sampled.samples)
            ):
                if time.monotonic() > deadline:  # the assertions below say so
                    break
                time.sleep(0.2)
            else:
                released.append(time.monotonic())
            let_go.append(True)
            release(lab, "gpu1")

        def on_line(line: str) -> None:
            if not waited and "gpu1: waiting for job(s)" in line:
                waited.append(True)
                threading.Thread(target=let_the_job_end, daemon=True).start()

        result, sampled = sampled_roll(
            lab, cluster, inventory, "--max-unavailable", "2", sampled=sampled, on_line=on_line
        )
    finally:
        if not let_go:
            release(lab, "gpu1")
        cluster.wait_jobs_done([job])
    print(result.output)  # the roll's own timeline, with pytest -s
    assert result.returncode == 0, result.output
    assert versions(lab) == dict.fromkeys(NODES, "7.2.1")
    assert [line for _, line in result.lines if line.startswith("wave")] == [
        "wave 1 of 2: gpu1, gpu2",
        "wave 2 of 2: gpu3",
    ]
    # Slurm never had more than two nodes out (gpu1 and gpu2 while the job ran), none now
    assert max(len(seen.drained) for seen in sampled.samples) <= 2, sampled.samples
    # every node resumed: idle (a drained one never is), once each slurmd answers slurmctld's
    # ping again ("idle*" for a moment on a loaded machine)
    cluster.wait_idle(NODES)
    # gpu1 was drained while its job ran (Slurm showed both), and changed only once the job
    # had ended: the job ends only after it is released
    assert "gpu1: waiting for job(s)" in result.output
    assert released, f"Slurm never showed gpu1 drained around job {job}:\n{result.output}"
    assert result.when("gpu1", "deploy") > released[0]
    # no node back in service before its checks passed; wave 2 only after wave 1 was back
    for node in NODES:
        assert result.when(node, "deployed; node checks") < result.when(node, "checks passed")
        drain, back = result.when(node, "drain"), result.when(node, "checks passed")
        # slurmctld's view: drained from the drain (logged once done) until the checks passed
        # (resumed, then logged); a look counts by the whole time it took
        early = [s for s in sampled.samples if node not in s.drained and drain < s.start]
        early = [s for s in early if s.end < back - 2]
        assert not early, f"{node} back in service before its checks passed: {early}"
        late = [s for s in sampled.samples if node in s.drained and s.start > back + 2]
        assert not late, f"{node} still drained after the roll resumed it: {late}"
    assert result.when("gpu3", "drain") > max(
        result.when(n, "checks passed") for n in ("gpu1", "gpu2")
    )
    # a second roll finds no drift and drains nothing
    again, sampled = sampled_roll(lab, cluster, inventory, "--max-unavailable", "2")
    assert again.returncode == 0, again.output
    assert "no host has drift; nothing drained, nothing changed" in again.output
    assert all(not seen.drained for seen in sampled.samples), sampled.samples


def other_release(lab) -> tuple[str, str]:
    """The release all nodes are on, and the other one."""
    found = set(versions(lab).values())
    assert len(found) == 1 and found <= {"6.4.3", "7.2.1"}, found
    (start,) = found
    return start, "7.2.1" if start == "6.4.3" else "6.4.3"


def test_slurmctld_stopped_mid_roll_leaves_gpu1_drained_then_refused_then_resumed(
    lab, cluster, tmp_path
):
    """From whichever release the nodes are on (7.2.1 after the waves; 6.4.3 before them or
    alone), a roll to the other one loses slurmctld while gpu1 is changed; gpu1, left drained,
    is rolled back and its card found wrong once drained; then, its card back and nothing left
    to change, it is checked again and resumed."""
    start, other = other_release(lab)
    inventory = inventory_with(
        lab, tmp_path / f"to-{other}.py", {**ROLL_DATA, "rocm_version": other}
    )
    planned = roll(lab, inventory, "--dry")
    assert planned.returncode == 1, planned.output  # drift found, nothing changed
    expected = []
    for number, node in enumerate(NODES, 1):
        expected += [f"wave {number}:", f"  {node}: drift; Slurm node {node} idle: drained, "
                     "changed, resumed"]  # fmt: skip
    assert [line for _, line in planned.lines] == expected
    assert versions(lab) == dict.fromkeys(NODES, start)
    stopped = []

    def stop_the_controller(line: str) -> None:
        # gpu1 drained and being changed: slurmctld goes away before the roll resumes it
        if not stopped and line.endswith("gpu1: deploy\n"):
            stopped.append(time.monotonic())
            cluster.stop_controller()

    try:
        result = roll(lab, inventory, "--max-unavailable", "1", on_line=stop_the_controller)
    finally:
        if stopped:
            cluster.start_controller()
    assert stopped, result.output
    assert result.returncode == 2, result.output
    # its state is read again before it would be resumed: that read finds Slurm gone
    assert "rocm-fleet roll: Slurm did not answer: gpu1: scontrol show:" in result.stderr
    assert "stopped before draining or changing another node" in result.stderr
    assert "left drained by the roll: gpu1" in result.stderr
    assert "scontrol update NodeName=gpu1 State=RESUME" in result.stderr
    # gpu1 was changed and checked; gpu2 and gpu3 were neither drained nor changed
    assert versions(lab) == {"gpu1": other, "gpu2": start, "gpu3": start}
    assert "gpu2: drain" not in result.output and "gpu3: drain" not in result.output
    # slurmctld back (its saved state read again): gpu1 is still drained, with the reason
    deadline = time.monotonic() + 60
    while True:
        try:
            shown = cluster.show_node("gpu1")
            break
        except Exception:
            assert time.monotonic() < deadline, cluster.logs()
            time.sleep(1)
    node = parse_node(shown)  # Slurm's real text, read as the roll reads it
    assert node.drained_by_roll and node.empty, shown
    assert node.reason == ROLLING, shown
    cluster.wait_idle(["gpu2", "gpu3"])  # their slurmds register again: back in service

    # gpu1, left drained, is rolled back; its GPU turns out not to be the one its inventory
    # names once it is drained (a card found bad in the maintenance window): the deploy
    # refuses it, and it stays drained with the refusal as its reason
    back = inventory_with(lab, tmp_path / f"to-{start}.py", {**ROLL_DATA, "rocm_version": start})

    def swap_the_card(line: str) -> None:
        if line.endswith("gpu1: deploy\n"):
            lab.set_profile("gpu1", "mi300x-8")

    try:
        result = roll(lab, back, on_line=swap_the_card)
    finally:
        lab.set_profile("gpu1", "rx7900xtx")
    assert result.returncode == 1, result.output
    assert "roll: 0 changed; failed: gpu1; left drained: gpu1" in result.output
    node = parse_node(cluster.show_node("gpu1"))
    assert node.drained_by_roll, node
    assert node.reason.startswith("rocm-fleet: deploy failed: [gpu1] refused: "), node.reason
    assert "expected 1 x gfx1100, found 8 x gfx942" in node.reason, node.reason
    assert versions(lab)["gpu1"] == other
    cluster.wait_idle(["gpu2", "gpu3"])  # no drift: never drained

    # gpu1, still on the other release with its card back: for an inventory of that release
    # it has no drift, and the roll only checks it again and resumes it
    assert parse_node(cluster.show_node("gpu1")).drained_by_roll
    result = roll(lab, inventory, limit="gpu1")
    assert result.returncode == 0, result.output
    assert "gpu1: no drift; node checks (an earlier roll left it drained)" in result.output
    assert "gpu1: deploy" not in result.output
    node = parse_node(cluster.show_node("gpu1"))
    assert not node.drain and node.reason == "", node
