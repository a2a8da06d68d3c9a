"""Slurm's health program (``rocm_slurm_health_check``) as the deploy renders it, run as a
process (as slurmd runs it) against the lab's amd-smi double (tests/lab/smi.py: the real
amd-smi JSON of tests/fixtures/amd-smi, 8x MI300X) and a stand-in ``scontrol`` (POSIX sh, run
by dash) whose ``show node`` prints what Debian's Slurm prints (tests/fixtures/slurm) and whose
``update`` is recorded. Only the tools' paths, the baseline's and the devices' differ from a
node's: they are the program's inputs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from lab import smi
from rocm_fleet.deploy.slurm import health_program
from rocm_fleet.model.health_check import PREFIX

SCONTROL = """#!/bin/sh
# scontrol stand-in: show node from DIR/state and DIR/reason; update recorded in DIR/updates
dir=@DIR@
case $1 in
show)
    if [ -f "$dir/down" ]; then
        echo "slurm_load_node error: Unable to contact slurm controller (connect failure)" >&2
        exit 1
    fi
    printf 'NodeName=%s Arch=x86_64 CoresPerSocket=1\\n' "$3"
    printf '   OS=Linux 6.1.0-31-amd64 #1 SMP PREEMPT_DYNAMIC State=IDLE\\n'
    printf '   State=%s ThreadsPerCore=1 TmpDisk=0 Weight=1\\n' "$(cat "$dir/state")"
    if [ -s "$dir/reason" ]; then
        printf '   Reason=%s [root@2026-12-06T10:00:00]\\n' "$(cat "$dir/reason")"
    fi ;;
update)
    printf '%s\\n' "$*" >>"$dir/updates"
    for arg; do
        case $arg in
        State=DRAIN) echo IDLE+DRAIN >"$dir/state" ;;
        State=RESUME) echo IDLE >"$dir/state"; : >"$dir/reason" ;;
        Reason=*) printf '%s' "${arg#Reason=}" >"$dir/reason" ;;
        esac
    done ;;
*) exit 2 ;;
esac
"""


class Node:
    """A node's tools, state and the program, under ``root``."""

    def __init__(self, root: Path, render_nodes: list[str] | None = None):
        self.root = root
        smi.write(root, "mi300x-8")
        bin_ = root / "bin"
        bin_.mkdir()
        amd_smi = bin_ / "amd-smi"
        amd_smi.write_text(smi.AMD_SMI.replace(f"/{smi.DATA_DIR}", str(root / smi.DATA_DIR)))
        self.slurm = root / "slurm"
        self.slurm.mkdir()
        scontrol = bin_ / "scontrol"
        scontrol.write_text(SCONTROL.replace("@DIR@", str(self.slurm)))
        for tool in (amd_smi, scontrol):
            tool.chmod(0o755)
        self.set_state("IDLE")
        self.baseline = root / "state" / "health-baseline.json"
        self.program = root / "rocm-fleet-health-check"
        self.program.write_text(
            health_program(
                "gpu1", render_nodes or ["/dev/null"], 8, baseline=str(self.baseline),
                amd_smi=(str(root / "none" / "amd-smi"), str(amd_smi)), scontrol=(str(scontrol),),
                kfd="/dev/null",  # a character device, as /dev/kfd is
            )
        )  # fmt: skip
        self.program.chmod(0o755)

    def set_state(self, state: str, reason: str = "") -> None:
        (self.slurm / "state").write_text(state + "\n")
        (self.slurm / "reason").write_text(reason)

    def run(self, *args: str) -> str:
        done = subprocess.run([str(self.program), *args], capture_output=True, text=True,
                              env={"PATH": str(self.root / "bin")}, check=False)  # fmt: skip
        assert done.returncode == 0 and done.stderr == "", done
        return done.stdout

    def updates(self) -> list[str]:
        path = self.slurm / "updates"
        return path.read_text().splitlines() if path.exists() else []

    def reason(self) -> str:
        return (self.slurm / "reason").read_text()


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


ECC = f"{PREFIX} GPU 2 (0000:23:00.0): uncorrectable ECC errors 0 -> 1"


def test_a_healthy_node_is_left_and_its_counts_become_the_root_only_baseline(node):
    out = node.run()
    assert out == "rocm-fleet-health-check: leave gpu1 as it is (healthy)\n"
    assert node.updates() == []
    assert oct(node.baseline.stat().st_mode & 0o777) == "0o600"
    assert len(node.baseline.read_text().split(": 0")) == 9  # 8 GPUs, each counting 0


def test_counters_that_move_drain_the_node_once_and_a_reset_resumes_it(node):
    node.run()
    smi.set_gpu(node.root, 2, ecc={"total_uncorrectable_count": 1})
    dry = node.run("--dry")
    assert dry == (
        "rocm-fleet-health-check: unhealthy: GPU 2 (0000:23:00.0): uncorrectable ECC errors "
        f"0 -> 1\nrocm-fleet-health-check: would drain gpu1: {ECC} (unhealthy)\n"
    )
    assert node.updates() == []
    node.run()
    assert node.updates() == [f"update NodeName=gpu1 State=DRAIN Reason={ECC}"]
    assert node.reason() == ECC
    assert "drained already" in node.run()  # idempotent: nothing more said to Slurm
    assert len(node.updates()) == 1
    # A reboot resets the counters: healthy again, and the drain was the program's own.
    smi.set_gpu(node.root, 2, ecc={"total_uncorrectable_count": 0})
    assert node.run() == (
        "rocm-fleet-health-check: resume gpu1 (healthy again, drained by this program)\n"
    )
    assert node.updates()[-1] == "update NodeName=gpu1 State=RESUME"


def test_an_administrators_drain_is_never_changed_nor_resumed(node):
    node.run()
    node.set_state("IDLE+DRAIN", "PSU swap, see ticket 4411")
    smi.set_gpu(node.root, 5, pcie={"width": 8})
    assert "drained by someone else (PSU swap, see ticket 4411): left so" in node.run()
    smi.set_gpu(node.root, 5, pcie={"width": 16})
    assert "healthy; drained by someone else" in node.run()
    assert node.updates() == [] and node.reason() == "PSU swap, see ticket 4411"


def test_a_missing_render_node_drains(tmp_path):
    node = Node(tmp_path, ["/dev/null", str(tmp_path / "renderD129")])
    node.run()
    assert node.updates() == [
        f"update NodeName=gpu1 State=DRAIN Reason={PREFIX} {tmp_path}/renderD129 missing"
    ]


def test_slurm_not_answering_changes_nothing_and_the_program_still_exits_0(node):
    (node.slurm / "down").write_text("")
    smi.set_gpu(node.root, 2, ecc={"total_uncorrectable_count": 1})
    assert "Slurm did not answer" in node.run()
    assert node.updates() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the baseline is written only where root owns it")
def test_a_link_at_the_baseline_is_not_followed(node, tmp_path):
    target = tmp_path / "target"
    target.write_text("keep\n")
    node.baseline.parent.mkdir()
    node.baseline.symlink_to(target)
    out = node.run()
    assert "not read" in out and target.read_text() == "keep\n"
    assert not node.baseline.is_symlink() and node.baseline.read_text().startswith("{")


def test_amd_smi_output_it_does_not_understand_reads_no_counter_and_drains_nothing(node):
    (node.root / smi.DATA_DIR / "metric.json").write_text("WARNING: not JSON\n")
    assert "counters not read" in node.run()
    assert node.updates() == [] and not node.baseline.exists()
