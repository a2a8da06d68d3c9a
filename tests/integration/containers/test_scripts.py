"""The GPU containers' shell scripts and fact command, run under dash as the operations build
them, in a temporary directory, with the node's tools (amd-ctk, usermod, service, dockerd,
podman, apt-cache) stood in for on PATH: what they write, and attacks on where root writes."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from integration.rootless import stat_double
from rocm_fleet.containers.facts import ContainerEngines
from rocm_fleet.operations import _script
from unit.test_operations import DASH

SPEC = Path(__file__).parents[2] / "fixtures" / "cdi" / "amd-ctk-two-gpus.json"


@pytest.fixture
def node(tmp_path, monkeypatch):
    """(root of the node's files, bin directory, log of the stand-in tools' arguments)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    tools = {
        # writes the recorded spec where --output says (as amd-ctk 1.3.0 does, os.Create)
        "amd-ctk": f'for a; do case $a in --output=*) cat {SPEC} > "${{a#--output=}}";; esac; done',
        "usermod": f'echo "usermod $*" >> {log}',
        "service": f'echo "service $*" >> {log}',
    }
    for name, body in tools.items():
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    for key in ("REBOOT_REQUIRED", "REBOOT_PACKAGES", "REBOOT_REASONS"):
        monkeypatch.setitem(_script._SCRIPT_VARIABLES, key, str(tmp_path / "run" / key))
    root = tmp_path / "node"
    root.mkdir()
    stat_double(bin_dir, root)  # the safe path rule reads pytest's directories as root's
    return root, bin_dir, log


def run(command, bin_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [DASH, "-c", str(command)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )


def test_the_spec_is_amd_ctks_made_readable_and_recorded_as_ours(node):
    root, bin_dir, _ = node
    spec, record = root / "etc" / "cdi" / "amd.json", root / "state" / "cdi-spec"
    result = run(_script.script("cdi-generate", str(spec), str(record)), bin_dir)
    assert result.returncode == 0, result.stderr
    assert spec.read_text() == SPEC.read_text()
    assert stat.S_IMODE(spec.stat().st_mode) == 0o644  # rootless Podman reads it
    assert stat.S_IMODE(spec.parent.stat().st_mode) == 0o755
    assert record.read_text() == f"{spec}\n"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert sorted(p.name for p in spec.parent.iterdir()) == ["amd.json"]  # no temporary left


def test_a_link_planted_at_the_spec_is_replaced_not_followed(node, tmp_path):
    root, bin_dir, _ = node
    victim = tmp_path / "shadow"
    victim.write_text("root:*:19000:0:99999:7:::\n")
    spec = root / "cdi" / "amd.json"
    spec.parent.mkdir()
    spec.symlink_to(victim)
    result = run(_script.script("cdi-generate", str(spec), str(root / "record")), bin_dir)
    assert result.returncode == 0, result.stderr
    assert victim.read_text() == "root:*:19000:0:99999:7:::\n"
    assert not spec.is_symlink() and spec.read_text() == SPEC.read_text()


def test_a_spec_directory_that_is_a_link_is_refused(node, tmp_path):
    root, bin_dir, _ = node
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "cdi").symlink_to(elsewhere)
    record = root / "record"
    result = run(
        _script.script("cdi-generate", str(root / "cdi" / "amd.json"), str(record)), bin_dir
    )
    assert result.returncode == 1
    assert "is a symbolic link" in result.stderr
    assert list(elsewhere.iterdir()) == [] and not record.exists()


def test_a_failing_amd_ctk_leaves_no_spec_no_temporary_and_no_record(node):
    root, bin_dir, _ = node
    (bin_dir / "amd-ctk").write_text("#!/bin/sh\necho 'getting GPUs: no KFD' >&2\nexit 1\n")
    spec, record = root / "cdi" / "amd.json", root / "record"
    result = run(_script.script("cdi-generate", str(spec), str(record)), bin_dir)
    assert result.returncode == 1
    assert list(spec.parent.iterdir()) == [] and not record.exists()


def test_subordinate_ids_are_given_recorded_and_taken_back(node):
    root, bin_dir, log = node
    ledger = root / "state" / "subids"
    lines = ["root uid 100000 65536", "root gid 100000 65536", "nosuchuser0 uid 165536 65536"]
    result = run(_script.script("subids", "add", str(ledger), *lines), bin_dir)
    assert result.returncode == 0, result.stderr
    assert ledger.read_text().splitlines() == lines
    assert log.read_text().splitlines() == [
        "usermod --add-subuids 100000-165535 root",
        "usermod --add-subgids 100000-165535 root",
        "usermod --add-subuids 165536-231071 nosuchuser0",
    ]
    log.unlink()
    result = run(_script.script("subids", "del", str(ledger), lines[0], lines[2]), bin_dir)
    assert result.returncode == 0, result.stderr
    # a user gone since (userdel took its ranges) has nothing to take back
    assert log.read_text().splitlines() == ["usermod --del-subuids 100000-165535 root"]
    assert ledger.read_text().splitlines() == [lines[1]]
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    run(_script.script("subids", "del", str(ledger), lines[1]), bin_dir)
    assert not ledger.exists()


def test_a_ledger_line_with_a_glob_is_not_expanded(node):
    root, bin_dir, log = node
    (root / "state").mkdir()
    (root / "state" / "decoy").write_text("")
    ledger = root / "state" / "subids"
    result = run(_script.script("subids", "add", str(ledger), f"{root}/state/* uid 1 2"), bin_dir)
    assert result.returncode == 0, result.stderr
    assert log.read_text() == f"usermod --add-subuids 1-2 {root}/state/*\n"


def test_docker_is_restarted_then_stamped(node):
    root, bin_dir, log = node
    stamp = root / "state" / "docker-restarted.stamp"
    result = run(_script.script("engine-restart", "docker", str(stamp)), bin_dir)
    assert result.returncode == 0, result.stderr
    assert log.read_text() == "service docker restart\n" and stamp.exists()


def test_a_failed_restart_leaves_no_stamp(node):
    root, bin_dir, _ = node
    (bin_dir / "service").write_text("#!/bin/sh\nexit 1\n")
    stamp = root / "stamp"
    assert run(_script.script("engine-restart", "docker", str(stamp)), bin_dir).returncode == 1
    assert not stamp.exists()


def test_the_engine_fact_reads_the_tools_and_apt_as_they_print(node):
    _, bin_dir, _ = node
    printed = {
        # dockerd --version / podman --version of Debian 12's docker.io and podman
        "dockerd": 'echo "Docker version 20.10.24+dfsg1, build 297e128"',
        "podman": 'echo "podman version 4.3.1"',
        # apt-cache policy's layout (apt 2.6, bookworm)
        "apt-cache": (
            "printf 'docker.io:\\n  Installed: 20.10.24+dfsg1-1+deb12u1\\n"
            "  Candidate: 20.10.24+dfsg1-1+deb12u1\\n  Version table:\\n"
            " *** 20.10.24+dfsg1-1+deb12u1 500\\n        500 http://deb.debian.org/debian "
            "bookworm/main amd64 Packages\\npodman:\\n  Installed: 4.3.1+ds1-8+b1\\n"
            "  Candidate: 4.3.1+ds1-8+b1\\n'"
        ),
    }
    for name, body in printed.items():
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    result = run(ContainerEngines().command(), bin_dir)
    assert result.returncode == 0, result.stderr
    assert ContainerEngines().process(result.stdout.splitlines()) == {
        "installed": {"docker": "Docker version 20.10.24+dfsg1, build 297e128",
                      "podman": "podman version 4.3.1"},
        "candidate": {"docker.io": "20.10.24+dfsg1-1+deb12u1", "docker-cli": None,
                      "podman": "4.3.1+ds1-8+b1"},  # no docker-cli in Debian 12
    }  # fmt: skip
