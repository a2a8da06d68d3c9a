"""End to end: what is known while planning refuses the host in preflight (issue 19), so
``--dry``, the audit and the real run all say it, exit 1, and not a byte changes.

One Debian 12 host with an RX 7900 XTX, deployed with inventories that can only fail
halfway through a run unless preflight catches them: ``rocm_users`` naming a user the host
lacks (the groups step would fail after ROCm went on) and a live torch install from a
plain-HTTP index (the hashes that pin the wheels would be read unauthenticated). (``rocm_driver:
dkms`` with a release whose driver the matrix doesn't record: every committed release has
one, so test_future_release.py refuses it for a site file's release.) A project of its own around
``rocm_node()`` asks ``refused()`` and its operations before and after run on no refused host.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from e2e.support import audit, deploy, differences, refusal, root_hashes, running_lab
from lab import HostSpec

pytestmark = pytest.mark.e2e

GOOD = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"], "pytorch_install": False}  # fmt: skip
HOSTS = [HostSpec("plan1", data=dict(GOOD))]

# (case, change to the host's data, the refusal's fragment)
CASES = [
    ("a user the host lacks", {"rocm_users": ["alice", "ghost"]},
     "rocm_users names ghost, not a user on this host: create it first"),
    # An attacker on the network would answer a plain-HTTP index: the hashes that pin the
    # wheels are read only over TLS, so the live install is refused before anything is read.
    ("a live install from a plain-HTTP index",
     {"pytorch_install": True, "pytorch_index_base_url": "http://download.pytorch.org/whl"},
     "http://download.pytorch.org/whl/rocm6.4 is not https, and the hashes that pin every "
     "host's wheels are read only over verified TLS; set pytorch_index_base_url to an https:// "
     "index"),
]  # fmt: skip

OWN_DEPLOY = """
from pyinfra.operations import server

from rocm_fleet.deploy import refused, rocm_node

server.shell(name="mine before", commands=["touch /root/mine-before"])
rocm_node()
if not refused():
    server.shell(name="mine after", commands=["touch /root/mine-after"])
"""


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3"])


def inventory_with(lab, path: Path, change: dict) -> Path:
    hosts = runpy.run_path(str(lab.inventory))["lab"]
    path.write_text(f"lab = {[(name, {**data, **change}) for name, data in hosts]!r}\n")
    return path


@pytest.mark.parametrize(("case", "change", "reason"), CASES, ids=[c[0] for c in CASES])
def test_a_run_that_would_fail_halfway_is_refused_by_dry_audit_and_run(
    lab, tmp_path, case, change, reason
):
    inventory = inventory_with(lab, tmp_path / "lab.py", change)
    before = root_hashes(lab.root("plan1"))
    dry = deploy(lab, inventory=inventory, dry=True)
    assert dry.returncode == 1, dry.output[-3000:]
    assert reason in (refusal(dry, "plan1") or ""), dry.output[-3000:]
    report = audit(lab, inventory=inventory)
    assert report.returncode == 1, report.stdout[-3000:] + report.stderr[-3000:]
    (row,) = report.json["hosts"]
    assert row["status"] == "refused" and reason in row["error"], row
    run = deploy(lab, inventory=inventory)
    print(f"{case}: {refusal(run, 'plan1')}")
    assert run.returncode == 1, run.output[-3000:]
    assert reason in (refusal(run, "plan1") or ""), run.output[-3000:]
    assert differences(before, root_hashes(lab.root("plan1"))) == []


def test_an_own_deploy_runs_nothing_on_a_refused_host(lab, tmp_path):
    """pyinfra's failed-host semantics: the user's own operation before rocm_node() doesn't
    run on the refused host either; the one after it is skipped through refused()."""
    inventory = inventory_with(lab, tmp_path / "lab.py", CASES[0][1])
    own = tmp_path / "own.py"
    own.write_text(OWN_DEPLOY)
    before = root_hashes(lab.root("plan1"))
    result = lab.pyinfra(inventory, str(own), json=True, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert CASES[0][2] in output
    assert not (lab.root("plan1") / "root/mine-before").exists()
    assert not (lab.root("plan1") / "root/mine-after").exists()
    assert differences(before, root_hashes(lab.root("plan1"))) == []


def test_sudo_on_a_host_without_sudo_says_so(lab):
    """``_sudo: True`` where sudo isn't installed (the lab's roots have none): the advice is
    to install it or connect as root, not "set _sudo: True"."""
    before = root_hashes(lab.root("plan1"))
    result = deploy(lab, data=["_sudo=true"])
    reason = refusal(result, "plan1") or ""
    print(f"sudo: {reason}")
    assert result.returncode == 1, result.output[-3000:]
    assert reason.startswith("_sudo is set but plan1 has no sudo (sudo: not found)"), reason
    assert "set _sudo: True" not in reason
    assert differences(before, root_hashes(lab.root("plan1"))) == []
