"""End to end: a pull node moves to a release published after its rocm-fleet, through the
site matrix data the administrators publish, with no code change and no push.

The lab's doubles serve the synthetic Core SDK release 10.9.0 (tests/fixtures/upstream/
synthetic-future.toml; test_future_release.py moves a pushed host to it and back). In the
pull fleet (``pull_support.pull_fleet``, shared with test_pull.py) a push gave
``pullfuture`` (Debian 13, PRO W7900) pull mode on the committed 10.0.0; from then on no SSH
connection reaches a host. ``rocm-fleet matrix update --output FILE`` writes the release's
row from the doubles; ``rocm-fleet publish`` with ``rocm_matrix_data`` naming it signs its
text into the node's target, and the node's pull (its service, started as its timer would)
moves it to 10.9.0 with torch 2.15.0 through its own apt and pip, and its rocminfo and torch
check passes.

What ``publish`` refuses of a site file and what a pull does when the site data goes are
tested on a loopback repository (tests/integration/pull/).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from e2e import pull_support, support
from e2e.pull_support import FUTURE, SERVICE, publish_inventory, set_inventory
from e2e.support import sh, wheels
from lab.upstream_facts import FUTURE_RELEASE
from rocm_fleet.model import paths

pytestmark = pytest.mark.e2e

NODE = FUTURE
VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"
INSTALL = "Install the ROCm packages of the release"


@pytest.fixture
def lab(pull_fleet):
    return pull_fleet


def installed(lab) -> dict[str, str]:
    out = sh(lab, NODE, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
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
    inventory = set_inventory(lab, {NODE: move}, lab.workdir / "future-inventory.py")
    published = publish_inventory(lab, NODE, inventory=inventory)
    assert published.returncode == 0, published.stderr
    target = json.loads(lab.repository.node_targets()[NODE])
    assert target["matrix_data"] == text
    assert "rocm_matrix_data" not in target["settings"]  # a controller's path: never sent
    pull_support.quiet(lab, NODE)
    before = pull_support.ssh_sessions(lab)
    run = lab.timers.start_service(NODE, SERVICE)
    assert run.success, lab.timers.journal(NODE)[-4000:]
    status = lab.root(NODE) / paths.PULL_STATUS_METRICS.lstrip("/")
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in status.read_text()
    assert pull_support.ssh_sessions(lab) == before  # the node did it on its own
    assert f"ROCm {FUTURE_RELEASE} from site matrix data {paths.PULL_MATRIX_DATA} " \
        f"(sha256 {digest})" in run.output, run.output[-3000:]  # fmt: skip
    changed = pull_support.changed_ops(run.output)
    assert VERIFY in changed and any(op.endswith(INSTALL) for op in changed), changed
    copy = lab.root(NODE) / paths.PULL_MATRIX_DATA.lstrip("/")
    assert copy.read_text() == text
    mode = copy.stat()
    assert (mode.st_mode & 0o777, mode.st_uid) == (0o600, 0), oct(mode.st_mode)
    verified = (lab.root(NODE) / paths.VERIFIED.lstrip("/")).read_text()
    assert f"rocm {FUTURE_RELEASE} (core-sdk, /opt/rocm/core-10.9/bin/rocminfo)\n" in verified
    packages = installed(lab)
    assert packages["amdrocm10.9-gfx1100"] == "10.9.0-1", packages
    assert not any(name.startswith("amdrocm10.0") for name in packages), packages
    assert wheels(lab, NODE) == {"torch": "2.15.0+rocm10.9.0",
                                 "torchvision": "0.30.0+rocm10.9.0",
                                 "torchaudio": "2.11.0.4+rocm10.9.0"}  # fmt: skip
