"""Acceptance on the node side, for real: the record writer (``files/scripts/
acceptance-record.sh``, as the roll runs it: ``sh -c SCRIPT sh PATH JSON``) under dash,
attacked with links; and the lab's RVS double read by the product's own parser."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from integration.rootless import stat_double
from lab import rvs
from rocm_fleet.assets import text
from rocm_fleet.engine.remote import Ran
from rocm_fleet.model.acceptance import AcceptanceRecord, StepResult, parse_record
from rocm_fleet.roll.acceptance.run import Acceptance, Suite, Tools, parse_rvs_gst, suite
from unit.facts.support import DASH

RECORD = AcceptanceRecord("quick", 1765000000.0, (StepResult("counters", "pass"),), {})


def keep(path: Path, content: str = RECORD.to_json()) -> subprocess.CompletedProcess[str]:
    """The writer as the roll runs it, the directories above ``tmp_path`` read as root's."""
    tmp = next(p for p in path.parents if p.name.startswith("test_"))
    bin_dir = stat_double(tmp.with_name(f"{tmp.name}-bin"), tmp)
    script = text("scripts/safe-path.sh") + text("scripts/acceptance-record.sh")
    return subprocess.run([DASH, "-c", script, "sh", str(path), content], capture_output=True,
                          text=True, timeout=30, check=False,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin"})  # fmt: skip


def test_the_record_is_written_whole_and_root_only_in_a_new_private_directory(tmp_path):
    path = tmp_path / "var-lib" / "acceptance.json"
    done = keep(path)
    assert done.returncode == 0, done.stderr
    assert parse_record(path.read_text()) == RECORD
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["acceptance.json"]  # no leftover


def test_a_link_at_the_record_is_replaced_never_followed(tmp_path):
    victim = tmp_path / "shadow"
    victim.write_text("root:*:19000:0:99999:7:::\n")
    path = tmp_path / "acceptance.json"
    path.symlink_to(victim)
    assert keep(path).returncode == 0
    assert victim.read_text() == "root:*:19000:0:99999:7:::\n"
    assert not path.is_symlink() and parse_record(path.read_text()) == RECORD


def test_a_link_in_place_of_the_directory_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "state").symlink_to(elsewhere)
    done = keep(tmp_path / "state" / "acceptance.json")
    assert done.returncode != 0 and "is a link: refused" in done.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_directory_others_may_write_above_the_record_is_refused(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    done = keep(state / "rocm-fleet" / "acceptance.json")
    assert done.returncode != 0 and f"{state} is owned by root (mode 777)" in done.stderr
    assert list(state.iterdir()) == []


@pytest.mark.parametrize("below", [False, True])
def test_the_labs_rvs_double_prints_what_the_parser_reads(tmp_path, below):
    rvs.write(tmp_path, below)
    script = tmp_path / "rvs"
    script.write_text(rvs.RVS.replace(f"/{rvs.DATA_DIR}", str(tmp_path / rvs.DATA_DIR)))
    conf = tmp_path / "conf" / "nv31" / "gst_single.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text(rvs.CONFS["nv31"])
    done = subprocess.run([DASH, str(script), "-c", str(conf)], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    gfx1100 = suite("quick", "gfx1100")
    actions = sorted(k[4:] for k in gfx1100.thresholds if k.startswith("gst:"))
    results = parse_rvs_gst(done.stdout, actions)
    low = [r.action for r in results if r.gflops < (gfx1100.gst_floor(r.action) or 0)]
    assert low == (["gpustress-4096-hgemm-false"] if below else [])
    # another GPU's folder: RVS's own error, which the parser refuses
    other = conf.parent.parent / "MI300X" / "gst_single.conf"
    other.parent.mkdir()
    other.write_text("actions: []\n")
    refused = subprocess.run([DASH, str(script), "-c", str(other)], capture_output=True,
                             text=True, check=False)  # fmt: skip
    assert refused.returncode == 1 and "No platform support" in refused.stderr


SPAWNS = """
import multiprocessing as mp, sys

def rank():
    print("rank ran")

if __name__ == "__main__":
    child = mp.get_context("spawn").Process(target=rank)
    child.start()
    child.join()
    sys.exit(child.exitcode)
"""


def test_the_torch_smoke_runs_from_a_file_so_spawned_ranks_find_main(tmp_path):
    """torch.multiprocessing's ranks are spawned processes that import the script as
    ``__main__``: run with ``python -c`` they could not; the roll runs it from a private
    temporary file (``run._FROM_FILE``), removed after."""
    import sys

    from rocm_fleet.roll.acceptance.run import _FROM_FILE

    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    argv = [DASH, "-c", _FROM_FILE, "sh", SPAWNS, sys.executable]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "rank ran"
    assert list(tmp_path.iterdir()) == []  # the file is gone
    inline = subprocess.run([sys.executable, "-c", SPAWNS], capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert inline.returncode != 0  # what -c would have done


@pytest.mark.parametrize("mode", [0o755, 0o777])
def test_the_torch_step_runs_the_venvs_python_only_under_the_safe_path_rule(tmp_path, mode):
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    python.write_text('#!/bin/sh\necho \'{"gpus": 0, "error": "ran"}\'\n')
    python.chmod(0o755)
    (tmp_path / "venv").chmod(mode)
    bin_dir = stat_double(tmp_path.with_name(f"{tmp_path.name}-bin"), tmp_path)

    def on_node(argv):
        assert argv[:2] == ["sh", "-c"], argv  # the counters' read and the torch step
        done = subprocess.run([DASH, *argv[1:]], capture_output=True, text=True, timeout=30,
                              check=False, env={"PATH": f"{bin_dir}:/usr/bin:/bin"})  # fmt: skip
        return Ran(done.returncode, done.stdout, done.stderr)

    torch_only = Suite("quick", ("torch",), "gfx1100", None, suite("quick", "gfx1100").thresholds)
    made = Acceptance(on_node, Tools(python=str(python))).run(torch_only, {})
    step = made.steps[-1]
    assert (step.name, step.status) == ("torch", "fail")
    if mode == 0o777:
        said = f"refusing to write or run {python} as root: {tmp_path / 'venv'} is owned by root"
        assert step.detail.startswith(f"rocm-fleet: {said} (mode 777)")
    else:
        assert "refusing" not in step.detail  # it ran: the double's python answered
