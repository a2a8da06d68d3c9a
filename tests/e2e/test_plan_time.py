"""End to end: what is known while planning refuses the host in preflight (issue 19), so
``--dry``, the audit and the real run all say it, exit 1, and not a byte changes.

Debian 12 hosts with an RX 7900 XTX, one a case, deployed with one inventory whose every
host can only fail halfway through a run unless preflight catches it: ``rocm_users`` naming
a user the host lacks (the groups step would fail after ROCm went on) and a live torch
install from a plain-HTTP index (the hashes that pin the wheels would be read
unauthenticated). (``rocm_driver: dkms`` with a release whose driver the matrix doesn't
record: every committed release has one, so test_future_release.py refuses it for a site
file's release.) A third asks for sudo,
which it lacks. The real run is a project's own deploy around ``rocm_node()``: it asks
``refused()``, and its operations before and after run on no refused host. Each of ``--dry``,
the audit and that run runs once for all the hosts (``runs``).
"""

from __future__ import annotations

import runpy
from types import SimpleNamespace

import pytest

from e2e.support import audit, deploy, differences, refusal, root_hashes, running_lab
from lab import HostSpec

pytestmark = pytest.mark.e2e

GOOD = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"], "pytorch_install": False}  # fmt: skip
# (host, case, change to the host's data, the refusal's fragment): one host a case, all of
# them refused by the same runs (``runs``), each for its own reason
CASES = [
    ("plan1", "a user the host lacks", {"rocm_users": ["alice", "ghost"]},
     "rocm_users names ghost, not a user on this host: create it first"),
    # An attacker on the network would answer a plain-HTTP index: the hashes that pin the
    # wheels are read only over TLS, so the live install is refused before anything is read.
    ("plan2", "a live install from a plain-HTTP index",
     {"pytorch_install": True, "pytorch_index_base_url": "http://download.pytorch.org/whl"},
     "http://download.pytorch.org/whl/rocm6.4 is not https, and the hashes that pin every "
     "host's wheels are read only over verified TLS; set pytorch_index_base_url to an https:// "
     "index"),
]  # fmt: skip
#: each host's change: its case's, and plan3 asks for sudo, which the lab's roots lack
CHANGES = {host: change for host, _, change, _ in CASES} | {"plan3": {"_sudo": True}}
HOSTS = [HostSpec(name, data=dict(GOOD)) for name in CHANGES]

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


@pytest.fixture(scope="module")
def runs(lab, tmp_path_factory):
    """One inventory giving each host its case (``CHANGES``); the roots' hashes before, then
    ``--dry``, the audit and a real run of the user's own deploy around ``rocm_node()``, each
    once for all the hosts, and the hashes after."""
    tmp = tmp_path_factory.mktemp("plan")
    hosts = runpy.run_path(str(lab.inventory))["lab"]
    inventory = tmp / "lab.py"
    inventory.write_text(f"lab = {[(n, {**d, **CHANGES[n]}) for n, d in hosts]!r}\n")
    own = tmp / "own.py"
    own.write_text(OWN_DEPLOY)
    before = {name: root_hashes(lab.root(name)) for name in CHANGES}
    dry = deploy(lab, inventory=inventory, dry=True)
    report = audit(lab, inventory=inventory)
    run = lab.pyinfra(inventory, str(own), json=True, check=False)
    run.output = run.stdout + run.stderr
    after = {name: root_hashes(lab.root(name)) for name in CHANGES}
    changes = {name: differences(before[name], after[name]) for name in CHANGES}
    return SimpleNamespace(dry=dry, audit=report, run=run, changes=changes)


@pytest.mark.parametrize(
    ("host", "case", "reason"), [(h, c, r) for h, c, _, r in CASES], ids=[c[1] for c in CASES]
)
def test_a_run_that_would_fail_halfway_is_refused_by_dry_audit_and_run(runs, host, case, reason):
    assert runs.dry.returncode == 1, runs.dry.output[-3000:]
    assert reason in (refusal(runs.dry, host) or ""), runs.dry.output[-3000:]
    assert runs.audit.returncode == 1, runs.audit.stdout[-3000:] + runs.audit.stderr[-3000:]
    row = {row["host"]: row for row in runs.audit.json["hosts"]}[host]
    assert row["status"] == "refused" and reason in row["error"], row
    print(f"{case}: {refusal(runs.run, host)}")
    assert runs.run.returncode == 1, runs.run.output[-3000:]
    assert reason in (refusal(runs.run, host) or ""), runs.run.output[-3000:]
    assert runs.changes[host] == []


def test_an_own_deploy_runs_nothing_on_a_refused_host(lab, runs):
    """pyinfra's failed-host semantics: the user's own operation before rocm_node() doesn't
    run on a refused host either; the one after it is skipped through refused()."""
    assert runs.run.returncode == 1, runs.run.output[-3000:]
    for host in CHANGES:
        assert not (lab.root(host) / "root/mine-before").exists(), host
        assert not (lab.root(host) / "root/mine-after").exists(), host
        assert runs.changes[host] == [], host


def test_sudo_on_a_host_without_sudo_says_so(runs):
    """``_sudo: True`` where sudo isn't installed (the lab's roots have none): the advice is
    to install it or connect as root, not "set _sudo: True"."""
    for result in (runs.dry, runs.run):
        reason = refusal(result, "plan3") or ""
        print(f"sudo: {reason}")
        assert result.returncode == 1, result.output[-3000:]
        assert reason.startswith("_sudo is set but plan3 has no sudo (sudo: not found)"), reason
        assert "set _sudo: True" not in reason
    assert runs.changes["plan3"] == []
