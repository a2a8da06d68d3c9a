"""End to end: pull mode on two lab nodes, converging from signed settings on the fleet mirror.

The administrators' TUF repository (``rocm-fleet publish``) is made on the controller and
copied to the mirror's published directory. A push deploy makes one host the fleet mirror
(nginx, which serves that directory under ``/fleet/``) and gives two nodes ``rocm_pull``: the
pinned rocm-fleet (every wheel locked by hash, from a path on the node; tuf and its
dependencies among them), the repository's root metadata they trust, the pull script and
the service and timer. From then on the controller never connects: the lab's hosts run no
systemd, so the lab's double of systemd's timers (``lab/timers.py``, ``timer_scale``) reads
the units the deploy installed and runs their ExecStart inside each node as systemd would,
``OnBootSec`` after a boot and ``OnUnitActiveSec`` (plus ``RandomizedDelaySec``) after each
run, every span times ``SCALE``. Each node fetches its target over HTTP from the mirror and
verifies it with TUF's client before anything runs.

What is checked: a change published and signed by the administrators is applied by every
node within one timer period and no SSH connection reaches any host meanwhile (each host's
sshd log); a second run changes nothing; settings forged on the mirror (without the keys)
change nothing and are reported; a root key rotation is followed through the pull; signed
but invalid settings change nothing and are reported (exit status, journal, metrics); a node
that was down while its data changed converges at boot (``OnBootSec``); a push and a pull
never change a node at once; ``rocm_pull: false`` takes pull mode off.
"""

from __future__ import annotations

import fcntl
import json
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from e2e import pull_support, support
from e2e.pull_support import (
    admin_repository,
    changed_ops,
    copy_published,
    give_wheels,
    publish_cli,
    pull_settings,
    ssh_sessions,
    wheel_lock,
)
from e2e.support import running_lab, succeeded
from lab import HostSpec
from lab.network import SUBNET
from rocm_fleet.model import paths
from rocm_fleet.pull.repository import PullRepository

pytestmark = pytest.mark.e2e

MIRROR = "mirror"
NODES = ["puller1", "puller2"]
MIRROR_ADDRESS = f"{SUBNET}.11"  # the first host of the lab (network.py: .10 + its index)
PORT = 8080
#: The lab's timer double runs every systemd time span at a tenth: OnBootSec=5min is 30 s,
#: the nodes' 15min interval 90 s, their 3min random delay up to 18 s.
SCALE = 1 / 10
INTERVAL, RANDOM_DELAY = "15min", "3min"
PERIOD = (15 * 60 + 3 * 60) * SCALE  # one timer period, its random delay included
RUN_SECONDS = 600  # how long one pull may take on the lab's shared cores


#: The fleet's TUF repository on the mirror (its published directory, under /fleet/).
SOURCE = f"http://{MIRROR_ADDRESS}:{PORT}{paths.MIRROR_PUBLISHED_URL_PATH}"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    built = tmp_path_factory.mktemp("wheels")
    lock = wheel_lock(built, "3.11")  # Debian 12's Python
    admin = tmp_path_factory.mktemp("admin")
    repository = admin_repository(admin)
    gpu = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
    mirror = {**gpu, "rocm_mirror": MIRROR, "rocm_mirror_allow": [f"{SUBNET}.0/24"]}
    pulling = {**gpu, **pull_settings(repository, lock, SOURCE, INTERVAL, RANDOM_DELAY)}
    specs = [HostSpec(MIRROR, suite="bookworm", profile="rx7900xtx", data=mirror)] + [
        HostSpec(node, suite="bookworm", profile="rx7900xtx", data=pulling) for node in NODES
    ]
    for lab in running_lab(specs, ["6.4.3"], timer_scale=SCALE):
        assert lab.address(MIRROR) == MIRROR_ADDRESS
        for node in NODES:
            give_wheels(lab.root(node), built, lock)
        lab.repository = repository
        # The first publication from the push's own inventory, as the administrators would.
        first = publish_cli(lab.inventory, "--limit", ",".join(NODES), "--repository",
                            repository.directory, "--keys", admin / "keys")  # fmt: skip
        assert first.returncode == 0, first.stderr
        copy_to_mirror(lab)
        lab.pull_data = {node: json.loads(content)["settings"]
                         for node, content in repository.node_targets().items()}  # fmt: skip
        yield lab


def copy_to_mirror(lab) -> None:
    copy_published(lab.repository, lab.root(MIRROR))


def next_run(lab, node: str, after: float, timeout: float = PERIOD + RUN_SECONDS):
    return pull_support.next_run(lab, node, after, timeout)


def publish(lab, settings: dict[str, dict]) -> None:
    """A change signed by the administrators (their targets and online keys) and copied to
    the mirror; nodes left out keep their settings."""
    current = {node: json.loads(content)["settings"]
               for node, content in lab.repository.node_targets().items()}  # fmt: skip
    lab.repository.publish({**current, **settings}, 24)
    copy_to_mirror(lab)


def groups_of(lab, node: str, user: str) -> set[str]:
    """The groups ``user`` is a member of on ``node`` (read from its root, not over SSH)."""
    groups = set()
    for line in (lab.root(node) / "etc/group").read_text().splitlines():
        name, _, _, members = line.split(":")
        if user in members.split(","):
            groups.add(name)
    return groups


VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"


def status_metrics(lab, node: str) -> str:
    return (lab.root(node) / paths.PULL_STATUS_METRICS.lstrip("/")).read_text()


def test_a_push_makes_the_mirror_and_gives_the_nodes_the_pinned_venv_and_the_units(lab):
    succeeded(support.deploy(lab))
    for node in NODES:
        root = lab.root(node)
        for path in (paths.PULL_SERVICE, paths.PULL_TIMER, paths.PULL_SCRIPT,
                     paths.PULL_INVENTORY):  # fmt: skip
            assert (root / path.lstrip("/")).is_file(), path
        link = root / paths.PULL_TIMER_LINK.lstrip("/")
        assert link.is_symlink() and str(link.readlink()) == paths.PULL_TIMER
        assert f"OnUnitActiveSec={INTERVAL}" in (root / paths.PULL_TIMER.lstrip("/")).read_text()
    # The nodes were pushed to, so they boot (a lab host runs no systemd: the deploy enabled
    # the timer for the next boot); from here on the controller never connects.
    booted = time.monotonic()
    for node in NODES:
        lab.restart_host(node)
    for node in NODES:
        run = next_run(lab, node, booted)
        assert run.trigger == "OnBootSec"
        assert run.success, lab.timers.journal(node)[-4000:]
        # The push converged the node to the data it now fetched: the pull changes nothing
        # but the GPU check, which a boot asks for again (its record is in /run).
        assert changed_ops(run.output) == [VERIFY], run.output[-3000:]
    access = (lab.root(MIRROR) / "var/log/nginx/access.log").read_text()
    for node in NODES:
        # TUF's client: the timestamp, then the node's own target by its hash.
        for path in ("metadata/timestamp.json", f"targets/nodes/[0-9a-f]{{64}}\\.{node}\\.json"):
            fetched = f'{lab.address(node)} - - .*"GET /fleet/{path} HTTP/1.1" 200'
            assert re.search(fetched, access), access[-2000:]
        trusted = lab.root(node) / paths.PULL_TRUSTED_ROOT.lstrip("/")
        assert trusted.read_bytes() == (lab.repository.metadata / "root.json").read_bytes()


def test_a_published_change_reaches_every_node_within_one_period_without_ssh(lab):
    before = ssh_sessions(lab)
    assert all(before[name] > 0 for name in lab.hosts), before  # the push's, counted
    published = time.monotonic()
    publish(lab, {node: {**lab.pull_data[node], "rocm_users": ["alice"]} for node in NODES})
    for node in NODES:
        run = next_run(lab, node, published)
        assert run.started - published <= PERIOD + 1, (run.started - published, PERIOD)
        assert run.success, lab.timers.journal(node)[-4000:]
        assert {"video", "render"} <= groups_of(lab, node, "alice"), run.output[-3000:]
        metrics = (lab.root(node) / paths.PULL_METRICS.lstrip("/")).read_text()
        assert 'rocm_fleet_audit_status{host="@local",status="ok"} 1' in metrics
        assert 'rocm_fleet_pull_last_run{result="converged"} 1' in status_metrics(lab, node)
    # The next run of each changes nothing.
    for node in NODES:
        again = next_run(lab, node, lab.timers.runs_of(node)[-1].started)
        assert again.success and changed_ops(again.output) == [], again.output[-3000:]
    assert ssh_sessions(lab) == before  # no SSH reached any host: the nodes did it themselves


def changed_paths(lab, node: str, before: dict) -> list[str]:
    """What changed on ``node`` since ``before``, less what every pull writes: its run
    directory, temporary files, its metrics, pip's cache, TUF's verified metadata."""
    ignored = ("run/", "tmp/", "var/lib/prometheus", "root/.cache",
               paths.PULL_METADATA.lstrip("/"))  # fmt: skip
    after = support.root_hashes(lab.root(node))
    return [p for p in support.differences(before, after)
            if not p.startswith(ignored) and "__pycache__" not in p]  # fmt: skip


def current_target(published: Path, node: str) -> Path:
    """The file of ``node``'s target that the newest metadata of its delegated role names
    (consistent snapshots keep the earlier ones beside it)."""
    newest = max((published / "metadata").glob(f"*.node-{node}.json"),
                 key=lambda path: int(path.name.split(".")[0]))  # fmt: skip
    info = json.loads(newest.read_text())["signed"]["targets"][f"nodes/{node}.json"]
    return published / "targets/nodes" / f"{info['hashes']['sha256']}.{node}.json"


def test_settings_forged_on_the_mirror_change_nothing_and_are_reported(lab, tmp_path):
    """Who: anyone who can write the mirror's published directory (or answer for the mirror
    on the network), without the administrators' keys. With what: a repository of their own
    making, well-formed and signed by their own keys, giving the node a user of theirs and
    taking it out of pull mode; then the node's real target edited in place."""
    node = NODES[0]
    good = {**lab.pull_data[node], "rocm_users": ["alice"]}
    published = lab.root(MIRROR) / paths.MIRROR_PUBLISHED.lstrip("/")
    kept = tmp_path / "kept"
    shutil.copytree(published, kept)
    attacker = PullRepository(tmp_path / "attacker", [tmp_path / "attacker-keys"])
    attacker.create(tmp_path / "attacker-keys")
    attacker.publish({node: {**good, "rocm_users": ["alice", "mallory"], "rocm_pull": False}}, 24)
    before = support.root_hashes(lab.root(node))
    shutil.copytree(tmp_path / "attacker/targets", published / "targets", dirs_exist_ok=True)
    for forged in (tmp_path / "attacker/metadata").glob("*.json"):
        if "root" not in forged.name:
            shutil.copy(forged, published / "metadata" / forged.name)
    started = time.monotonic()
    run = next_run(lab, node, started)
    assert not run.success and run.exit_status == 1, run.output[-3000:]
    journal = lab.timers.journal(node)
    assert "rocm-fleet pull: refused (bad-signature)" in journal, journal[-3000:]
    assert 'rocm_fleet_pull_last_run{result="bad-signature"} 1' in status_metrics(lab, node)
    assert changed_paths(lab, node, before) == []
    assert "mallory" not in (lab.root(node) / "etc/passwd").read_text()
    # The real repository back, its target edited in place: TUF's hash refuses it.
    shutil.rmtree(published)
    shutil.copytree(kept, published)
    target = current_target(published, node)
    target.write_text(target.read_text().replace('"alice"', '"alice", "mallory"'))
    run = next_run(lab, node, run.started)
    assert not run.success and "rocm-fleet pull: refused (unverified)" in run.output
    assert 'rocm_fleet_pull_last_run{result="unverified"} 1' in status_metrics(lab, node)
    assert changed_paths(lab, node, before) == []
    shutil.rmtree(published)
    shutil.copytree(kept, published)


def test_a_root_key_rotation_is_followed_through_the_pull(lab):
    """The administrators rotate the root key (root v2, signed by the v1 and v2 keys) and
    publish a change signed by the same targets key: the node, which a push gave root v1,
    follows to v2 on its own and applies the change (its timer's random delay)."""
    node = NODES[1]
    lab.repository.rotate("root", 24)
    changed = {**lab.pull_data[node], "rocm_pull_random_delay": "2min"}
    published = time.monotonic()
    publish(lab, {node: changed})
    run = next_run(lab, node, published)
    assert run.success, lab.timers.journal(node)[-4000:]
    timer = (lab.root(node) / paths.PULL_TIMER.lstrip("/")).read_text()
    assert "RandomizedDelaySec=2min" in timer
    verified = lab.root(node) / paths.PULL_METADATA.lstrip("/") / "root.json"
    assert json.loads(verified.read_text())["signed"]["version"] == 2
    trusted = lab.root(node) / paths.PULL_TRUSTED_ROOT.lstrip("/")
    assert json.loads(trusted.read_text())["signed"]["version"] == 1  # the push's, kept
    lab.pull_data[node] = changed


def test_signed_but_invalid_settings_change_nothing_and_are_reported(lab):
    node = NODES[0]
    good = {**lab.pull_data[node], "rocm_users": ["alice"]}
    before = support.root_hashes(lab.root(node))
    published = time.monotonic()
    publish(lab, {node: {**good, "rocm_users": ["alice", "bob"], "rocm_version": 6.4}})
    run = next_run(lab, node, published)
    publish(lab, {node: good})
    assert not run.success and run.exit_status not in (0, 75), run.output[-3000:]
    assert "rocm_version" in run.output
    journal = lab.timers.journal(node)
    assert "systemd[1]: Failed to start rocm-fleet-pull.service." in journal
    assert "rocm-fleet pull: deploy-failed" in journal
    status = status_metrics(lab, node)
    assert 'rocm_fleet_pull_last_run{result="deploy-failed"} 1' in status
    assert f"rocm_fleet_pull_last_run_exit_status {run.exit_status}" in status
    audit = (lab.root(node) / paths.PULL_METRICS.lstrip("/")).read_text()
    assert 'rocm_fleet_audit_status{host="@local",status="invalid"} 1' in audit
    assert changed_paths(lab, node, before) == []
    assert "bob" not in (lab.root(node) / "etc/passwd").read_text()


def test_a_node_that_was_down_converges_when_it_boots(lab):
    node = NODES[1]
    timer = lab.root(node) / paths.PULL_TIMER.lstrip("/")
    lab.timers.stop_timer(node)
    lab.stop_host(node)
    down = time.monotonic()
    # The change: the node's own pull interval (its timer unit, rewritten by the deploy).
    publish(lab, {node: {**lab.pull_data[node], "rocm_users": ["alice"],
                         "rocm_pull_interval": "16min"}})  # fmt: skip
    time.sleep(2)
    assert [r for r in lab.timers.runs_of(node) if r.started > down] == []
    assert "OnUnitActiveSec=15min" in timer.read_text()
    lab.start_host(node)
    run = next_run(lab, node, down)
    assert run.trigger == "OnBootSec"
    assert run.started - down < PERIOD + (5 * 60 * SCALE) + 60
    assert run.success, lab.timers.journal(node)[-4000:]
    assert "OnUnitActiveSec=16min" in timer.read_text()
    assert "Pull mode | Write the pull timer" in changed_ops(run.output)


def test_a_push_is_refused_while_a_pull_runs_and_a_pull_skips_while_a_push_runs(lab):
    node = NODES[0]
    lock = lab.root(node) / paths.PULL_LOCK.lstrip("/")
    lab.timers.stop_timer(node)
    while any(r.ended is None for r in lab.timers.runs_of(node)):
        time.sleep(0.5)
    # A pull holding its lock: a push (--dry too) refuses the node, saying why.
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        dry = support.deploy(lab, limit=node, dry=True)
    assert node in support.failed_hosts(dry), dry.output[-3000:]
    assert "a pull (rocm-fleet-pull.service) is converging" in dry.output
    # A push that changes the node marks it while it runs, and takes the mark away.
    marker = lab.root(node) / paths.PUSH_MARKER.lstrip("/")
    seen: list[str] = []
    watching = threading.Event()
    watching.set()

    def watch() -> None:
        while watching.is_set():
            if marker.exists():
                seen.append(marker.read_text())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        pushed = support.deploy(lab, limit=node, data=["rocm_pull_interval=20min"])
    finally:
        watching.clear()
        watcher.join()
    succeeded(pushed)
    assert seen and seen[0].strip().isdigit(), "the push never marked the node"
    assert not marker.exists()
    assert "Pull mode | Write the pull timer" in support.changed(pushed)
    # A pull that finds a push's mark skips (75, a success for systemd) and says so.
    booted = time.monotonic()
    lab.restart_host(node)  # the timer again (stop_timer holds until the next boot)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{int(time.time())}\n")  # a boot empties /run: marked again
    run = next_run(lab, node, booted)
    marker.unlink()
    assert run.exit_status == 75 and run.success, run.output[-3000:]
    assert "a push has been changing this node since" in run.output
    assert 'rocm_fleet_pull_last_run{result="skipped-push-running"} 1' in status_metrics(lab, node)


def test_rocm_pull_false_takes_pull_mode_off(lab):
    node = NODES[0]
    removal = ["Pull mode | Remove the pull service and timer",
               "Pull mode | Remove the pull venv and files"]  # fmt: skip
    lab.timers.stop_timer(node)
    while any(r.ended is None for r in lab.timers.runs_of(node)):
        time.sleep(0.5)
    # What the pulls wrote for node_exporter goes too (each file that is there).
    metrics = [p for p in (paths.PULL_METRICS, paths.PULL_STATUS_METRICS)
               if (lab.root(node) / p.lstrip("/")).exists()]  # fmt: skip
    assert metrics, "the pulls ran and wrote their metrics"
    removal += [f"Pull mode | Remove the pulls' metrics ({p})" for p in metrics]
    dry = support.deploy(lab, limit=node, data=["rocm_pull=False"], dry=True)
    expected = {name: [node] for name in removal}
    if not (lab.root(node) / paths.VERIFIED.lstrip("/")).exists():  # booted since its check
        expected[VERIFY] = [node]
    assert support.changed(dry) == expected
    succeeded(support.deploy(lab, limit=node, data=["rocm_pull=False"]))
    root = lab.root(node)
    for path in (paths.PULL_SERVICE, paths.PULL_TIMER, paths.PULL_TIMER_LINK, paths.PULL_ROOT,
                 *metrics):  # fmt: skip
        assert not (root / path.lstrip("/")).exists(), path
    again = support.deploy(lab, limit=node, data=["rocm_pull=False"], dry=True)
    assert support.changed(again) == {}
