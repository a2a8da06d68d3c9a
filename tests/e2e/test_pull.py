"""End to end: pull mode on a booted lab node, converging from signed settings on the fleet mirror.

The fleet (``pull_support.pull_fleet``): the administrators'
TUF repository (``rocm-fleet publish``) is made on the controller and copied to the mirror's
published directory; a push makes one host the fleet mirror (nginx, which serves that
directory under ``/fleet/``) and gives the node ``puller`` ``rocm_pull``: the pinned
rocm-fleet (every wheel locked by hash, from a path on the node; tuf and its dependencies
among them), the repository's root metadata it trusts, the pull script and the service and
timer. From then on the controller never connects: the lab's hosts run no systemd, so the
lab's double of systemd's timers (``lab/timers.py``) reads the units the deploy installed
and runs their ExecStart inside the node as systemd would, ``OnBootSec`` after a boot and
``OnUnitActiveSec`` (plus ``RandomizedDelaySec``) after each run, every span times
``pull_support.SCALE``; a test that isn't about the timer starts the service by hand
(``systemctl start``). The node fetches its target over HTTP from the mirror and verifies it
with TUF's client before anything runs.

What only a booted node shows is checked here: a node that was down while the
administrators published a change converges to it at boot and again every period, no SSH
connection reaching any host (each host's sshd log), the next run changing nothing; forged
settings on the mirror and signed but invalid settings change nothing on the node and are
reported (exit status, journal, metrics); a push and a pull never change the node at once;
``rocm_pull: false`` takes pull mode off; a node moves to a release published after its
rocm-fleet through the site matrix data the administrators publish (the lab's doubles serve
the synthetic Core SDK release 10.9.0, tests/fixtures/upstream/synthetic-future.toml): no code
change, no push. The protocol's cases (forged, replayed, frozen or
other nodes' data, key rotations, what pulled data may carry) are tested against an
in-memory mirror in tests/unit/pull/ (what needs real HTTP, in tests/integration/pull/).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from e2e import pull_support, support
from e2e.pull_support import (
    FUTURE,
    MIRROR,
    PULLER,
    RANDOM_DELAY,
    RUN_SECONDS,
    SCALE,
    SERVICE,
    changed_ops,
    copy_published,
    publish_inventory,
    quiet,
    set_inventory,
    ssh_sessions,
    status_metrics,
)
from e2e.support import sh, succeeded, wheels
from lab.timers import time_span
from lab.upstream_facts import FUTURE_RELEASE
from rocm_fleet.model import paths
from rocm_fleet.pull.repository import PullRepository

pytestmark = pytest.mark.e2e

NODE = PULLER
VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"
GROUPS = "GPU groups | Give the GPU users video and render"
WRITE_TIMER = "Pull mode | Write the pull timer"
ENABLE_TIMER = "Pull mode | Enable the pull timer"
#: What a push removes when the inventory says ``rocm_pull: false``.
REMOVAL = [
    "Pull mode | Remove the pull service and timer",
    "Pull mode | Remove the pull venv and files",
]
#: What pull mode is on a node: what ``rocm_pull: false`` removes (the timer's link with the
#: directory that holds it).
PULL_FILES = [paths.PULL_SERVICE, paths.PULL_TIMER, str(Path(paths.PULL_TIMER_LINK).parent),
              paths.PULL_ROOT, paths.PULL_STAMP, paths.PULL_METRICS,
              paths.PULL_STATUS_METRICS]  # fmt: skip


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    yield from pull_support.pull_fleet(tmp_path_factory)


def period(interval: str) -> float:
    """One timer period on the lab, its random delay included."""
    return (time_span(interval) + time_span(RANDOM_DELAY)) * SCALE


def next_run(lab, after: float, timeout: float = RUN_SECONDS):
    return pull_support.next_run(lab, NODE, after, timeout)


def published_settings(lab) -> dict:
    return json.loads(lab.repository.node_targets()[NODE])["settings"]


def publish(lab, settings: dict) -> None:
    """Settings signed with the administrators' keys (their targets and online keys, not
    through ``rocm-fleet publish``'s checks) and copied to the mirror."""
    targets = {node: json.loads(text) for node, text in lab.repository.node_targets().items()}
    others = {node: target["settings"] for node, target in targets.items()}
    site_data = {node: target["matrix_data"] for node, target in targets.items()
                 if node != NODE and "matrix_data" in target}  # fmt: skip
    lab.repository.publish({**others, NODE: settings}, 24, site_data)
    copy_published(lab.repository, lab.root(MIRROR))


def groups_of(lab, user: str) -> set[str]:
    """The groups ``user`` is a member of on the node (read from its root, not over SSH)."""
    groups = set()
    for line in (lab.root(NODE) / "etc/group").read_text().splitlines():
        name, _, _, members = line.split(":")
        if user in members.split(","):
            groups.add(name)
    return groups


def changed_paths(lab, before: dict) -> list[str]:
    """What changed on the node since ``before``, less what every pull writes: its run
    directory, temporary files, its metrics, pip's cache, TUF's verified metadata."""
    ignored = ("run/", "tmp/", "var/lib/prometheus", "root/.cache",
               paths.PULL_METADATA.lstrip("/"))  # fmt: skip
    after = support.root_hashes(lab.root(NODE))
    return [p for p in support.differences(before, after)
            if not p.startswith(ignored) and "__pycache__" not in p]  # fmt: skip


def test_a_node_down_while_a_change_was_published_converges_at_boot_then_every_period(lab):
    """The administrators change the inventory (a GPU user, the node's own pull interval) and
    publish it while the node is down; it boots, and its timer's pull applies the change
    (its timer unit rewritten by the deploy); the next run comes one interval later and
    changes nothing. No SSH connection reaches any host meanwhile."""
    root = lab.root(NODE)
    for path in (paths.PULL_SERVICE, paths.PULL_TIMER, paths.PULL_SCRIPT, paths.PULL_INVENTORY):
        assert (root / path.lstrip("/")).is_file(), path
    link = root / paths.PULL_TIMER_LINK.lstrip("/")
    assert link.is_symlink() and str(link.readlink()) == paths.PULL_TIMER
    timer = root / paths.PULL_TIMER.lstrip("/")
    old = re.search(r"^OnUnitActiveSec=(.+)$", timer.read_text(), re.M).group(1)
    interval = "16min" if old != "16min" else "17min"
    assert "alice" not in published_settings(lab).get("rocm_users", [])
    assert all(count > 0 for count in ssh_sessions(lab).values())  # the push's, counted
    lab.stop_host(NODE)
    down = time.monotonic()
    set_inventory(lab, {NODE: {"rocm_users": ["alice"], "rocm_pull_interval": interval}})
    published = publish_inventory(lab, NODE)
    assert published.returncode == 0, published.stderr
    assert [r for r in lab.timers.runs_of(NODE) if r.started > down] == []
    lab.restart_host(NODE)  # a boot (which waits for the node's sshd: one session)
    booted = time.monotonic()
    sessions = ssh_sessions(lab)
    first = next_run(lab, down)
    assert first.trigger == "OnBootSec"
    assert first.started - booted <= (time_span("5min") + time_span(RANDOM_DELAY)) * SCALE + 1
    assert first.success, lab.timers.journal(NODE)[-4000:]
    assert changed_ops(first.output) == [GROUPS, VERIFY, WRITE_TIMER, ENABLE_TIMER], first.output[
        -3000:
    ]
    assert {"video", "render"} <= groups_of(lab, "alice")
    assert f"OnUnitActiveSec={interval}" in timer.read_text()
    metrics = (root / paths.PULL_METRICS.lstrip("/")).read_text()
    assert 'rocm_fleet_audit_status{host="@local",status="ok"} 1' in metrics
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in status_metrics(lab, NODE)
    # TUF's client on the node: the timestamp, then the node's own target by its hash.
    access = (lab.root(MIRROR) / "var/log/nginx/access.log").read_text()
    for path in ("metadata/timestamp.json", f"targets/nodes/[0-9a-f]{{64}}\\.{NODE}\\.json"):
        fetched = f'{lab.address(NODE)} - - .*"GET /fleet/{path} HTTP/1.1" 200'
        assert re.search(fetched, access), access[-2000:]
    trusted = root / paths.PULL_TRUSTED_ROOT.lstrip("/")
    assert trusted.read_bytes() == (lab.repository.metadata / "root.json").read_bytes()
    # The next run: one interval after the last started (a timer that elapses while its
    # service runs starts nothing), within one period of the last one's end.
    second = next_run(lab, first.started)
    quiet(lab, NODE)
    assert second.trigger == "OnUnitActiveSec"
    assert second.started - first.started >= time_span(interval) * SCALE
    assert second.started - first.ended <= period(interval) + 1
    assert second.success and changed_ops(second.output) == [], second.output[-3000:]
    assert ssh_sessions(lab) == sessions  # no SSH reached any host: the node did it itself


def test_forged_or_invalid_settings_change_nothing_on_the_node_and_are_reported(lab, tmp_path):
    """Who: anyone who can write the mirror's published directory (or answer for the mirror
    on the network), without the administrators' keys. With what: a repository of their own
    making, well-formed and signed by their own keys, giving the node a user of theirs and
    taking it out of pull mode. Then settings the administrators' keys signed that a push
    would refuse (a key holder's mistake, past ``rocm-fleet publish``'s checks): the node's
    deploy refuses them before its first operation."""
    quiet(lab, NODE)
    good = published_settings(lab)
    published = lab.root(MIRROR) / paths.MIRROR_PUBLISHED.lstrip("/")
    kept = tmp_path / "kept"
    shutil.copytree(published, kept)
    attacker = PullRepository(tmp_path / "attacker", [tmp_path / "attacker-keys"])
    attacker.create(tmp_path / "attacker-keys")
    attacker.publish({NODE: {**good, "rocm_users": ["mallory"], "rocm_pull": False}}, 24)
    before = support.root_hashes(lab.root(NODE))
    shutil.copytree(tmp_path / "attacker/targets", published / "targets", dirs_exist_ok=True)
    for forged in (tmp_path / "attacker/metadata").glob("*.json"):
        if "root" not in forged.name:
            shutil.copy(forged, published / "metadata" / forged.name)
    try:
        run = lab.timers.start_service(NODE, SERVICE)
    finally:
        shutil.rmtree(published)
        shutil.copytree(kept, published)
    assert not run.success and run.exit_status == 1, run.output[-3000:]
    journal = lab.timers.journal(NODE)
    assert "rocm-fleet pull: refused (bad-signature)" in journal, journal[-3000:]
    assert 'rocm_fleet_pull_last_run{result="bad-signature"} 1' in status_metrics(lab, NODE)
    assert changed_paths(lab, before) == []
    assert "mallory" not in (lab.root(NODE) / "etc/passwd").read_text()
    # Signed, but not valid settings: rocm_version a number.
    publish(lab, {**good, "rocm_users": ["bob"], "rocm_version": 6.4})
    try:
        run = lab.timers.start_service(NODE, SERVICE)
    finally:
        publish(lab, good)
    assert not run.success and run.exit_status not in (0, 75), run.output[-3000:]
    assert "rocm_version" in run.output
    journal = lab.timers.journal(NODE)
    assert "systemd[1]: Failed to start rocm-fleet-pull.service." in journal
    assert "rocm-fleet pull: deploy-failed" in journal
    status = status_metrics(lab, NODE)
    assert 'rocm_fleet_pull_last_run{result="deploy-failed"} 1' in status
    assert f"rocm_fleet_pull_last_run_exit_status {run.exit_status}" in status
    audit = (lab.root(NODE) / paths.PULL_METRICS.lstrip("/")).read_text()
    assert 'rocm_fleet_audit_status{host="@local",status="invalid"} 1' in audit
    assert changed_paths(lab, before) == []
    assert "bob" not in (lab.root(NODE) / "etc/passwd").read_text()


def keep(root: Path, files: list[str], where: Path) -> dict[str, tuple]:
    """A copy of ``files`` (those there) of a host's root in ``where``, for ``put_back``; their
    hashes."""
    there = [f.lstrip("/") for f in files if (root / f.lstrip("/")).exists()]
    where.mkdir()
    subprocess.run(["cp", "-a", "--parents", *there, where], cwd=root, check=True)
    return hashes(root, files)


def put_back(root: Path, files: list[str], where: Path) -> None:
    """``files`` as ``keep`` found them."""
    for path in files:
        now, kept = root / path.lstrip("/"), where / path.lstrip("/")
        if now.is_dir() and not now.is_symlink():
            shutil.rmtree(now)
        elif now.exists() or now.is_symlink():
            now.unlink()
        if kept.exists() or kept.is_symlink():
            now.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["cp", "-a", kept, now.parent], check=True)


def hashes(root: Path, files: list[str]) -> dict[str, tuple]:
    """``files`` of a host's root (what a directory holds, not its size) as ``root_hashes``
    has them."""
    seen = {}
    for path in files:
        full = root / path.lstrip("/")
        if full.is_dir() and not full.is_symlink():
            for key, (mode, uid, gid, size, content) in support.root_hashes(full).items():
                kept = size if content is not None else None  # a directory's: how it grew
                seen[f"{path}/{key}"] = (mode, uid, gid, kept, content)
        elif full.exists() or full.is_symlink():
            st = full.lstat()
            content = str(full.readlink()) if full.is_symlink() else full.read_bytes()
            seen[path] = (st.st_mode, st.st_uid, st.st_gid, content)
    return seen


def test_a_push_and_a_pull_never_change_the_node_at_once_and_rocm_pull_false_ends_pull_mode(
    lab, tmp_path
):
    """A pull holding its lock: a push (``--dry`` too) refuses the node, saying why. A pull
    that finds a push's mark skips (75: a success for systemd). The push that takes pull mode
    off (``rocm_pull: false``) marks the node while it changes it and takes the mark away;
    its units, venv, files and metrics go, and a second push changes nothing. The node's pull
    mode is put back as it was (a copy of its files) at the end."""
    quiet(lab, NODE)
    root = lab.root(NODE)
    before = keep(root, PULL_FILES, tmp_path / "kept")
    try:
        lock = root / paths.PULL_LOCK.lstrip("/")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            dry = support.deploy(lab, limit=NODE, dry=True)
        assert NODE in support.failed_hosts(dry), dry.output[-3000:]
        assert "a pull (rocm-fleet-pull.service) is converging" in dry.output
        marker = root / paths.PUSH_MARKER.lstrip("/")
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(f"{int(time.time())}\n")
        try:
            run = lab.timers.start_service(NODE, SERVICE)
        finally:
            marker.unlink()
        assert run.exit_status == 75 and run.success, run.output[-3000:]
        assert "a push has been changing this node since" in run.output
        assert 'rocm_fleet_pull_last_run{result="skipped-push-running"} 1' in status_metrics(
            lab, NODE
        )
        # What the pulls wrote for node_exporter goes too (each file that is there).
        metrics = [p for p in (paths.PULL_METRICS, paths.PULL_STATUS_METRICS)
                   if (root / p.lstrip("/")).exists()]  # fmt: skip
        expected = {name: [NODE] for name in REMOVAL}
        expected |= {f"Pull mode | Remove the pulls' metrics ({p})": [NODE] for p in metrics}
        if not (root / paths.VERIFIED.lstrip("/")).exists():  # booted since its check
            expected[VERIFY] = [NODE]
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
            pushed = support.deploy(lab, limit=NODE, data=["rocm_pull=False"])
        finally:
            watching.clear()
            watcher.join()
        succeeded(pushed)
        assert seen and seen[0].strip().isdigit(), "the push never marked the node"
        assert not marker.exists()
        assert support.changed(pushed) == expected
        for path in (paths.PULL_SERVICE, paths.PULL_TIMER, paths.PULL_TIMER_LINK,
                     paths.PULL_ROOT, *metrics):  # fmt: skip
            assert not (root / path.lstrip("/")).exists(), path
        again = support.deploy(lab, limit=NODE, data=["rocm_pull=False"], dry=True)
        assert support.changed(again) == {}
    finally:
        put_back(root, PULL_FILES, tmp_path / "kept")
    assert hashes(root, PULL_FILES) == before


#: the step of the release move the future test looks for
INSTALL = "Install the ROCm packages of the release"


def installed(lab) -> dict[str, str]:
    out = sh(lab, FUTURE, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    return {w[1]: w[2] for w in (line.split() for line in out.splitlines()) if w[0][0] == "i"}


def test_a_pull_node_moves_to_the_future_release_through_published_site_data(lab):
    """The node stays on 10.9.0 afterwards: no other test reads it."""
    site_file = lab.workdir / "site-matrix.json"
    result = support.rocm_fleet(lab, "matrix", "update", "--output", str(site_file),
                                "--key-fingerprint", lab.lab_key_fingerprint,
                                env={"REQUESTS_CA_BUNDLE": str(lab.ca_cert)})  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    text = site_file.read_text()
    assert [row["version"] for row in json.loads(text)["releases"]] == [FUTURE_RELEASE]
    digest = hashlib.sha256(text.encode()).hexdigest()
    # The administrators' inventory, in a copy of their own: pushes keep to the lab's.
    move = {"rocm_version": FUTURE_RELEASE, "pytorch_install": True,
            "rocm_matrix_data": str(site_file)}  # fmt: skip
    inventory = set_inventory(lab, {FUTURE: move}, lab.workdir / "future-inventory.py")
    published = publish_inventory(lab, FUTURE, inventory=inventory)
    assert published.returncode == 0, published.stderr
    target = json.loads(lab.repository.node_targets()[FUTURE])
    assert target["matrix_data"] == text
    assert "rocm_matrix_data" not in target["settings"]  # a controller's path: never sent
    pull_support.quiet(lab, FUTURE)
    before = pull_support.ssh_sessions(lab)
    run = lab.timers.start_service(FUTURE, SERVICE)
    assert run.success, lab.timers.journal(FUTURE)[-4000:]
    status = lab.root(FUTURE) / paths.PULL_STATUS_METRICS.lstrip("/")
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in status.read_text()
    assert pull_support.ssh_sessions(lab) == before  # the node did it on its own
    assert f"ROCm {FUTURE_RELEASE} from site matrix data {paths.PULL_MATRIX_DATA} " \
        f"(sha256 {digest})" in run.output, run.output[-3000:]  # fmt: skip
    changed = pull_support.changed_ops(run.output)
    assert VERIFY in changed and any(op.endswith(INSTALL) for op in changed), changed
    copy = lab.root(FUTURE) / paths.PULL_MATRIX_DATA.lstrip("/")
    assert copy.read_text() == text
    mode = copy.stat()
    assert (mode.st_mode & 0o777, mode.st_uid) == (0o600, 0), oct(mode.st_mode)
    verified = (lab.root(FUTURE) / paths.VERIFIED.lstrip("/")).read_text()
    assert f"rocm {FUTURE_RELEASE} (core-sdk, /opt/rocm/core-10.9/bin/rocminfo)\n" in verified
    packages = installed(lab)
    assert packages["amdrocm10.9-gfx1100"] == "10.9.0-1", packages
    assert not any(name.startswith("amdrocm10.0") for name in packages), packages
    assert wheels(lab, FUTURE) == {"torch": "2.15.0+rocm10.9.0",
                                 "torchvision": "0.30.0+rocm10.9.0",
                                 "torchaudio": "2.11.0.4+rocm10.9.0"}  # fmt: skip
