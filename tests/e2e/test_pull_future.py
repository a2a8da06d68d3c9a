"""End to end: a pull node moves to a release published after its rocm-fleet, through the
site matrix data the administrators publish, with no code change and no push.

The lab's doubles serve the synthetic Core SDK release 10.9.0 (tests/fixtures/upstream/
synthetic-future.toml; test_future_release.py moves a pushed host to it). Here a push makes
``mirror`` the fleet mirror and gives ``pullfuture`` (Debian 13, PRO W7900) pull mode on the
committed 10.0.0; from then on no SSH connection reaches a host. In file order:

* ``rocm-fleet matrix update --output FILE`` writes the release's row; ``rocm-fleet publish``
  with ``rocm_matrix_data`` naming it signs its text into the node's target, and the node's
  boot pull moves it to 10.9.0 with torch 2.15.0 (its rocminfo and torch check passes);
* a copy of the file edited to name another repository host is refused by ``publish``
  (exit 4, naming the field and the value) and the repository is left as it was; the next
  pull changes nothing (nothing reached the node);
* publishing 10.0.0 without the site data brings the node back to the committed release
  and takes the node's copy of the file away; a pull after that changes nothing.

The lab's double of systemd's timers runs the nodes' pull service (test_pull.py says how);
every span here is a twentieth, so the boot pull comes 15 s after a boot and each next one
30 s (plus up to 3 s) after the last began.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from e2e import pull_support, support
from e2e.support import inventory_with, running_lab, sh, succeeded, wheels
from lab import HostSpec
from lab.network import SUBNET
from lab.upstream_facts import FUTURE_RELEASE
from rocm_fleet.model import paths

pytestmark = pytest.mark.e2e

MIRROR, NODE = "mirror", "pullfuture"
COMMITTED = "10.0.0"
MIRROR_ADDRESS = f"{SUBNET}.11"  # the first host of the lab (network.py: .10 + its index)
SOURCE = f"http://{MIRROR_ADDRESS}:8080{paths.MIRROR_PUBLISHED_URL_PATH}"
SCALE = 1 / 20
INTERVAL, RANDOM_DELAY = "10min", "1min"
RUN_SECONDS = 600  # how long one pull (a release's packages and torch) may take here
TIMEOUT = (5 * 60 + 10 * 60 + 60) * SCALE + RUN_SECONDS  # a boot, a period, one run
GPU = {"expected_gfx": "gfx1100", "expected_gpu_count": 1}
VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"
INSTALL = "Install the ROCm packages of the release"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    built = tmp_path_factory.mktemp("wheels")
    lock = pull_support.wheel_lock(built, "3.13")  # Debian 13's Python
    admin = tmp_path_factory.mktemp("admin")
    repository = pull_support.admin_repository(admin)
    on_committed = {**GPU, "rocm_version": COMMITTED, "pytorch_install": False}
    mirror = {**on_committed, "rocm_mirror": MIRROR, "rocm_mirror_allow": [f"{SUBNET}.0/24"]}
    node = {
        **on_committed,
        **pull_support.pull_settings(repository, lock, SOURCE, INTERVAL, RANDOM_DELAY),
    }
    specs = [HostSpec(MIRROR, suite="trixie", profile="w7900", data=mirror),
             HostSpec(NODE, suite="trixie", profile="w7900", data=node)]  # fmt: skip
    for lab in running_lab(specs, [COMMITTED, FUTURE_RELEASE], timer_scale=SCALE):
        assert lab.address(MIRROR) == MIRROR_ADDRESS
        pull_support.give_wheels(lab.root(NODE), built, lock)
        lab.repository, lab.keys = repository, admin / "keys"
        assert publish(lab, {}).returncode == 0  # the push's own data first
        # The push: the mirror, and the node on the committed release with its pull units.
        succeeded(support.deploy(lab))
        yield lab


def publish(lab, change: dict):
    """``rocm-fleet publish`` of the node from the lab's inventory with ``change`` in its
    data, as the administrators run it; copied to the mirror when it succeeded."""
    inventory = inventory_with(lab, lab.workdir / "publish-inventory.py", change)
    result = pull_support.publish_cli(inventory, "--limit", NODE, "--repository",
                                      lab.repository.directory, "--keys", lab.keys)  # fmt: skip
    if result.returncode == 0:
        pull_support.copy_published(lab.repository, lab.root(MIRROR))
    return result


@pytest.fixture(scope="module")
def site_file(lab) -> Path:
    """The future release's row, as ``rocm-fleet matrix update`` writes it from upstream."""
    path = lab.workdir / "site-matrix.json"
    result = support.rocm_fleet(lab, "matrix", "update", "--output", str(path),
                                "--key-fingerprint", lab.lab_key_fingerprint,
                                env={"REQUESTS_CA_BUNDLE": str(lab.ca_cert)})  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert [row["version"] for row in json.loads(path.read_text())["releases"]] == [FUTURE_RELEASE]
    return path


def next_run(lab, after: float):
    return pull_support.next_run(lab, NODE, after, TIMEOUT)


def installed(lab) -> dict[str, str]:
    out = sh(lab, NODE, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    return {w[1]: w[2] for w in (line.split() for line in out.splitlines()) if w[0][0] == "i"}


def verified(lab) -> str:
    return (lab.root(NODE) / paths.VERIFIED.lstrip("/")).read_text()


def converged(lab) -> bool:
    """Whether the node's last pull converged: its deploy and then ``rocm-fleet check``
    (rocminfo and torch see the expected GPUs) passed (the pull's status metric)."""
    status = lab.root(NODE) / paths.PULL_STATUS_METRICS.lstrip("/")
    return 'rocm_fleet_pull_last_run{result="converged"} 1' in status.read_text()


def node_copy(lab) -> Path:
    return lab.root(NODE) / paths.PULL_MATRIX_DATA.lstrip("/")


def test_a_pull_node_moves_to_the_future_release_through_published_site_data(lab, site_file):
    text = site_file.read_text()
    digest = hashlib.sha256(text.encode()).hexdigest()
    move = {"rocm_version": FUTURE_RELEASE, "pytorch_install": True,
            "rocm_matrix_data": str(site_file)}  # fmt: skip
    published = publish(lab, move)
    assert published.returncode == 0, published.stderr
    target = json.loads(lab.repository.node_targets()[NODE])
    assert target["matrix_data"] == text
    assert "rocm_matrix_data" not in target["settings"]  # a controller's path: never sent
    # The push enabled the timer for the next boot (a lab host runs no systemd).
    booted = time.monotonic()
    lab.restart_host(NODE)  # (which waits for the node's sshd: one session)
    before = pull_support.ssh_sessions(lab)
    run = next_run(lab, booted)
    assert run.trigger == "OnBootSec"
    assert run.success and converged(lab), lab.timers.journal(NODE)[-4000:]
    assert pull_support.ssh_sessions(lab) == before  # the node did it on its own
    assert f"ROCm {FUTURE_RELEASE} from site matrix data {paths.PULL_MATRIX_DATA} " \
        f"(sha256 {digest})" in run.output, run.output[-3000:]  # fmt: skip
    changed = pull_support.changed_ops(run.output)
    assert VERIFY in changed and any(op.endswith(INSTALL) for op in changed), changed
    copy = node_copy(lab)
    assert copy.read_text() == text
    mode = copy.stat()
    assert (mode.st_mode & 0o777, mode.st_uid) == (0o600, 0), oct(mode.st_mode)
    assert f"rocm {FUTURE_RELEASE} (core-sdk, /opt/rocm/core-10.9/bin/rocminfo)\n" in verified(lab)
    packages = installed(lab)
    assert packages["amdrocm10.9-gfx1100"] == "10.9.0-1", packages
    assert not any(name.startswith("amdrocm10.0") for name in packages), packages
    assert wheels(lab, NODE) == {"torch": "2.15.0+rocm10.9.0",
                                 "torchvision": "0.30.0+rocm10.9.0",
                                 "torchaudio": "2.11.0.4+rocm10.9.0"}  # fmt: skip


def test_a_site_file_naming_another_host_is_refused_by_publish_and_never_reaches_the_node(
    lab, site_file
):
    """Who: whoever can edit the site file on the controller (or the one it was copied
    from), without touching rocm-fleet. With what: the release's row pointed at a
    repository host of theirs, for the node's root to install from."""
    forged = lab.workdir / "forged-matrix.json"
    data = json.loads(site_file.read_text())
    data["releases"][0]["repository"] = "evil.example"
    forged.write_text(json.dumps(data))
    repository = support.root_hashes(lab.repository.directory)
    refused = time.monotonic()
    result = publish(lab, {"rocm_version": FUTURE_RELEASE, "pytorch_install": True,
                           "rocm_matrix_data": str(forged)})  # fmt: skip
    assert result.returncode == 4, result.stdout + result.stderr
    assert f"site matrix data {forged}: field 'releases[0].repository' has value " \
        '"evil.example"' in result.stderr, result.stderr  # fmt: skip
    assert support.differences(repository, support.root_hashes(lab.repository.directory)) == []
    # The node's next pull finds what it applied: a second pull changes nothing.
    run = next_run(lab, refused)
    assert run.success and pull_support.changed_ops(run.output) == [], run.output[-3000:]
    assert node_copy(lab).read_text() == site_file.read_text()


def test_publishing_without_the_site_data_brings_the_node_back(lab):
    back = {"rocm_version": COMMITTED, "pytorch_install": False}
    published = time.monotonic()
    result = publish(lab, back)
    assert result.returncode == 0, result.stderr
    assert "matrix_data" not in json.loads(lab.repository.node_targets()[NODE])
    run = next_run(lab, published)
    assert run.success and converged(lab), lab.timers.journal(NODE)[-4000:]
    assert f"ROCm {COMMITTED} from rocm-fleet's committed matrix" in run.output
    assert not node_copy(lab).exists()
    assert f"rocm {COMMITTED} (core-sdk, /opt/rocm/core-10.0/bin/rocminfo)\n" in verified(lab)
    again = next_run(lab, run.started)
    assert again.success and pull_support.changed_ops(again.output) == [], again.output[-3000:]
    packages = installed(lab)
    assert packages["amdrocm10.0-gfx1100"].startswith("10.0.0-"), packages
    assert not any(name.startswith("amdrocm10.9") for name in packages), packages
