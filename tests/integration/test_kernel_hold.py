"""The tests of tests/unit/test_kernel_hold.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from integration.rootless import stat_double
from rocm_fleet.facts.apt import HeldPackages, InstalledPackages
from rocm_fleet.operations import kernel
from unit.opcases import run_op
from unit.test_kernel_hold import DASH, DPKG_STATUS, HELD, HELD_OUTPUT, facts


def test_held_packages_command_reads_dpkgs_database(tmp_path):
    """The fact's own command, run by this machine's dpkg-query on a database holding the
    entries above: it prints what process() reads."""
    admindir = tmp_path / "dpkg"
    (admindir / "updates").mkdir(parents=True)
    (admindir / "arch").write_text("amd64\ni386\n")
    (admindir / "status").write_text(DPKG_STATUS)
    out = subprocess.run(
        ["sh", "-c", HeldPackages().command()], capture_output=True, text=True, check=True,
        env={"PATH": "/usr/bin:/bin", "DPKG_ADMINDIR": str(admindir)},
    )  # fmt: skip
    packages = [line for line in out.stdout.splitlines() if "|" in line]  # not the journal's
    assert sorted(packages) == sorted(HELD_OUTPUT)
    assert HeldPackages().process(out.stdout.splitlines()) == HELD


def test_held_packages_command_reads_this_machines_dpkg():
    out = subprocess.run(["sh", "-c", HeldPackages().command()], capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if line != "journal"]
    assert lines and all(line[0] in "uihrp" and line.count("|") == 2
                         for line in lines), lines[:5]  # fmt: skip


@pytest.fixture
def apt_mark(tmp_path) -> Path:
    """An apt-mark that logs its calls and fails to hold ``linux-image-rt-amd64`` (the one
    place the script's order is seen: it can't be made to fail in the lab)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "apt-mark"
    tool.write_text(
        f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\n'
        'case " $* " in *" linux-image-rt-amd64 "*)\n'
        '    echo "E: Unable to locate package" >&2; exit 100 ;;\n'
        "esac\n"
    )
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    return stat_double(bin_dir, tmp_path)


def run_hold_script(ledger: Path, bin_dir: Path, *changes: str) -> subprocess.CompletedProcess:
    """The operation's script for ``changes`` (+NAME hold, =NAME held and recorded, -NAME
    recorded and to release), run against ``bin_dir``'s apt-mark."""
    wanted = [c[1:] for c in changes if c[0] in "+="]
    result = run_op(
        kernel.kernel_holds,
        {
            InstalledPackages: {name: "1" for name in wanted},
            **facts(
                [c[1:] for c in changes if c[0] in "-="], [c[1:] for c in changes if c[0] in "-="]
            ),
        },
        hold=True,
        coming=[],
        ledger=str(ledger),
    )
    (command,) = result.commands
    # Under the loosest umask a login could leave: the ledger is written root's alone.
    return subprocess.run(
        [DASH, "-c", f"umask 000; {command}"], capture_output=True, text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=60, check=False,
    )  # fmt: skip


def test_the_script_records_before_holding_and_forgets_after_releasing(tmp_path, apt_mark):
    ledger = tmp_path / "state" / "held-kernel-packages"
    proc = run_hold_script(ledger, apt_mark, "+linux-image-amd64", "+linux-headers-amd64")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "calls").read_text() == "hold linux-headers-amd64 linux-image-amd64\n"
    assert ledger.read_text() == "linux-headers-amd64\nlinux-image-amd64\n"
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o644
    # A hold that fails leaves its name recorded: the next run holds it again (or, with the
    # setting gone, finds it not held and forgets it), never taking it for the admin's.
    proc = run_hold_script(ledger, apt_mark, "=linux-image-amd64", "+linux-image-rt-amd64",
                           "-linux-headers-amd64")  # fmt: skip
    assert proc.returncode == 100
    assert ledger.read_text() == ("linux-image-rt-amd64\nlinux-image-amd64\nlinux-headers-amd64\n")
    # Releasing the last one removes the ledger.
    (tmp_path / "calls").unlink()
    proc = run_hold_script(ledger, apt_mark, "-linux-image-amd64", "-linux-headers-amd64")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "calls").read_text() == "unhold linux-headers-amd64 linux-image-amd64\n"
    assert not ledger.exists()
