"""End to end: ``rocm-fleet check`` over real SSH, as an operator runs it after a deploy.

A mixed fleet (one converged host, one never deployed, one whose sshd is down) gives one
line per host and check and a summary, exit 1. Host keys are checked as pyinfra checks them:
a host whose key changed after the first connection is refused before anything runs there
(its ``~/.ssh/rc``, which sshd runs at the start of every session, never runs), and so is an
unknown key under ``ssh_strict_host_key_checking = "yes"``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from e2e.support import running_lab
from lab import HostSpec

pytestmark = pytest.mark.e2e

HOSTS = [
    # converged (tests/lab/converged.py): a host of test_audit.py's kind
    HostSpec("good", data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100",
                           "expected_gpu_count": 1, "rocm_users": ["alice"]}, converged=True),
    HostSpec("bare", data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100",
                           "expected_gpu_count": 1}),
    HostSpec("down", data={"rocm_version": "6.4.3"}, sshd=False),
]  # fmt: skip
CHECKS = 10
# Skipped on every lab host: the APU's GTT (no rocm_apu_gtt_gib), GPU health (no amd-smi
# in the 6.4.3 double's rocm-hip-runtime set), Slurm (no rocm_slurm_gres) and GPU containers
# (no rocm_containers_engines).
UNSET = 4
LINE = re.compile(r"^(ok|FAILED|skipped|UNREACHABLE) +(\S+) +(.+)$")
RAN = "/root/rocm-fleet-check-ran"  # touched by root's ~/.ssh/rc: a session started


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3"])


def check(lab, *args: str) -> subprocess.CompletedProcess[str]:
    result = lab.run([sys.executable, "-m", "rocm_fleet.cli", "check", *args], timeout=600,
                     env={"COLUMNS": "1000"})  # a line a check, not wrapped  # fmt: skip
    result.output = result.stdout + result.stderr
    return result


def test_a_mixed_fleet_gives_one_line_per_host_and_check_and_a_summary(lab):
    result = check(lab, str(lab.inventory))
    assert result.returncode == 1, result.output  # a failed check outranks an unreachable host
    lines = result.stdout.splitlines()
    found = [LINE.match(line) for line in lines[:-1]]
    assert all(found) and len(found) == 3 * CHECKS, result.output
    by_host: dict[str, set[str]] = {}
    for match in found:
        by_host.setdefault(match.group(2), set()).add(match.group(1))
    assert by_host == {"good": {"ok", "skipped"}, "bare": {"FAILED", "skipped"},
                       "down": {"UNREACHABLE"}}, result.output  # fmt: skip
    # (bare has no rocm_users either: that check is skipped there too)
    bare = [m.group(3) for m in found if m.group(2) == "bare"]
    assert any("rocm-pin-600 is missing" in text for text in bare), result.output
    down = [m.group(3) for m in found if m.group(2) == "down"]
    assert all(f"{lab.address('down')}" in text for text in down), result.output
    assert lines[-1] == (
        f"3 hosts, {3 * CHECKS} checks: {CHECKS - UNSET} passed, {CHECKS - UNSET - 1} failed, "
        f"{2 * UNSET + 1} skipped, {CHECKS} not run (unreachable: down)"
    ), result.output
    assert "Traceback" not in result.output and "testinfra.host" not in result.output
    assert "During handling" not in result.output and "Warning" not in result.output


def inventory(lab, path: Path, known_hosts: Path, strict: str) -> Path:
    """The bare host alone, reached with its key checked: known_hosts and the policy given."""
    data = {
        "ssh_hostname": lab.address("bare"), "ssh_user": "root", "ssh_key": str(lab.ssh_key),
        "ssh_known_hosts_file": str(known_hosts), "ssh_strict_host_key_checking": strict,
        "rocm_version": "6.4.3",
    }  # fmt: skip
    path.write_text(f"hosts = [('bare', {data!r})]\n")
    return path


def ran_on_bare(lab) -> bool:
    return (lab.root("bare") / RAN.lstrip("/")).exists()


def test_a_changed_host_key_is_refused_before_anything_runs(lab, tmp_path):
    rc = lab.root("bare") / "root/.ssh/rc"
    rc.write_text(f"touch {RAN}\n")
    known_hosts = tmp_path / "known_hosts"
    known_hosts.touch()
    fleet = inventory(lab, tmp_path / "bare.py", known_hosts, "accept-new")
    first = check(lab, str(fleet), "--", "-k", "pin")
    assert first.returncode == 1, first.output  # reached, recorded, checked (and not deployed)
    assert lab.address("bare") in known_hosts.read_text()
    assert ran_on_bare(lab)

    # The host's keys change (a reinstall, or someone answering in its place).
    for old in (lab.root("bare") / "etc/ssh").glob("ssh_host_*"):
        old.unlink()
    subprocess.run(["ssh-keygen", "-A", "-f", lab.root("bare")], check=True)
    lab.restart_host("bare")
    (lab.root("bare") / RAN.lstrip("/")).unlink()  # the lab's own login after the restart
    recorded = known_hosts.read_text()

    second = check(lab, str(fleet))
    assert second.returncode == 2, second.output  # could not check: refused
    lines = second.stdout.splitlines()
    assert len(lines) == CHECKS + 1 and all(line.startswith("UNREACHABLE  bare") for line in
                                            lines[:-1]), second.output  # fmt: skip
    assert "does not match" in lines[0] and "ssh-keygen -R" in lines[0], second.output
    assert not ran_on_bare(lab), "a command ran on a host whose key changed"
    assert known_hosts.read_text() == recorded  # the new key was not recorded either

    # An unknown key under "yes" is refused as well.
    strict = inventory(lab, tmp_path / "strict.py", tmp_path / "empty_known_hosts", "yes")
    (tmp_path / "empty_known_hosts").touch()
    third = check(lab, str(strict))
    assert third.returncode == 2, third.output
    assert "No host key for" in third.stdout, third.output
    assert not ran_on_bare(lab)
