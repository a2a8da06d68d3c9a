"""Attacks on the shell helpers that write files as root (``files/scripts/text-file.sh``,
``module-options.sh``, ``verified-keyring.sh``, all through ``lib.sh``'s ``write_file``), in a
directory another user may write (a ``SlurmUser``-owned ``/etc/slurm``): a link planted at the
temporary name the helpers once used, a link at the target, a directory at the target. Each
script runs under dash, as the operations build it, in a temporary directory; the reboot marks
go there too.
"""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from integration.rootless import stat_double
from integration.test_operations import key_tools  # noqa: F401
from rocm_fleet.facts.apt import KeyringFingerprints
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.operations import _script, apt, files, kernel
from unit.opcases import run_op
from unit.surveys import fact_key
from unit.test_operations import DASH, FINGERPRINT, KEY_URL

SECRET = "MungeKey=correct horse battery staple\n"


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A directory to write in, the victim file a link points at, a bin directory whose
    ``chmod`` records the mode of what it is given first (then changes it), and the reboot
    marks kept under ``tmp_path``."""
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "other.conf").write_text("someone else's\n")
    victim = tmp_path / "shadow"
    victim.write_text("root:*:19000:0:99999:7:::\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    seen = tmp_path / "modes"
    chmod = bin_dir / "chmod"
    chmod.write_text(f'#!/bin/sh\nstat -c "%a %n" "$2" >> {seen}\nexec /bin/chmod "$@"\n')
    initramfs = bin_dir / "update-initramfs"
    initramfs.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "initramfs"}\n')
    for tool in (chmod, initramfs):
        tool.chmod(0o755)
    stat_double(bin_dir, tmp_path)
    for key in ("REBOOT_REQUIRED", "REBOOT_PACKAGES", "REBOOT_REASONS"):
        monkeypatch.setitem(_script._SCRIPT_VARIABLES, key, str(tmp_path / "run" / key))
    return etc, victim, bin_dir, seen


def run(command, bin_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [DASH, "-c", str(command)], capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )  # fmt: skip


def text_file(path: Path, content: str, mode: str = "644"):
    (command,) = run_op(
        files.text_file, {fact_key(FileDigest, path=str(path)): None},
        path=str(path), content=content, mode=mode,
    ).commands  # fmt: skip
    return command


def module_options(path: Path, content: str):
    (command,) = run_op(
        kernel.module_options, {fact_key(FileDigest, path=str(path)): None},
        path=str(path), content=content, reboot_reason="ttm options changed",
    ).commands  # fmt: skip
    return command


def writers(target: Path):
    return {
        "text-file": text_file(target, SECRET, "600"),
        "module-options": module_options(target, SECRET),
    }


@pytest.mark.parametrize("helper", ["text-file", "module-options"])
def test_a_link_at_the_old_temporary_name_is_not_followed(host, helper):
    etc, victim, bin_dir, _ = host
    target = etc / "slurm.conf"
    planted = etc / "slurm.conf.rocm-fleet-new"
    planted.symlink_to(victim)
    before = victim.read_text()
    proc = run(writers(target)[helper], bin_dir)
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == SECRET and not target.is_symlink()
    assert victim.read_text() == before and planted.is_symlink()  # both untouched


@pytest.mark.parametrize("helper", ["text-file", "module-options"])
def test_a_link_at_the_target_is_replaced_not_followed(host, helper):
    etc, victim, bin_dir, _ = host
    target = etc / "gres.conf"
    target.symlink_to(victim)
    before = victim.read_text()
    proc = run(writers(target)[helper], bin_dir)
    assert proc.returncode == 0, proc.stderr
    assert not target.is_symlink() and target.read_text() == SECRET
    assert victim.read_text() == before


@pytest.mark.parametrize("link", [False, True])
def test_a_directory_at_the_target_is_refused_never_moved_into(host, link):
    etc, _, bin_dir, _ = host
    elsewhere = etc.parent / "cron.d"
    elsewhere.mkdir()
    target = etc / "slurm.conf"
    if link:
        target.symlink_to(elsewhere)
    else:
        target.mkdir()
    proc = run(text_file(target, SECRET), bin_dir)
    if link:  # the link is replaced; the directory it named gets nothing
        assert proc.returncode == 0, proc.stderr
        assert target.read_text() == SECRET
    else:
        assert proc.returncode != 0
        assert target.is_dir() and not list(target.iterdir())
    assert not list(elsewhere.iterdir())
    assert sorted(p.name for p in etc.iterdir()) == ["other.conf", "slurm.conf"]  # no temporary


@pytest.mark.parametrize("helper", ["text-file", "module-options"])
def test_the_directorys_other_files_are_untouched_and_no_temporary_is_left(host, helper):
    etc, _, bin_dir, _ = host
    target = etc / "ttm.conf"
    proc = run(writers(target)[helper], bin_dir)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in etc.iterdir()) == ["other.conf", "ttm.conf"]
    assert (etc / "other.conf").read_text() == "someone else's\n"


def test_a_secret_is_never_readable_by_others(host):
    """The temporary is made 0600 (mktemp under umask 077) and written before its mode is set:
    no moment when another user could open it."""
    etc, _, bin_dir, seen = host
    target = etc / "munge.key"
    proc = run(text_file(target, SECRET, "600"), bin_dir)
    assert proc.returncode == 0, proc.stderr
    (mode, name) = seen.read_text().split()
    assert mode == "600" and Path(name).parent == etc and Path(name).name.startswith(".munge.key.")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and target.read_text() == SECRET


def test_module_options_writes_644_refreshes_the_initramfs_and_marks_a_reboot(host, tmp_path):
    etc, _, bin_dir, seen = host
    target = etc / "modprobe.d" / "ttm.conf"
    proc = run(module_options(target, "options ttm pages_limit=25165824\n"), bin_dir)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert seen.read_text().split()[0] == "600"  # made readable only once written
    assert (tmp_path / "initramfs").read_text() == "-u\n"
    assert (tmp_path / "run" / "REBOOT_REASONS").read_text() == "ttm options changed\n"


def test_the_keyring_is_written_past_links_at_its_old_temporary_name_and_at_itself(
    tmp_path,
    key_tools,  # noqa: F811 (test_operations' fixture)
):
    """verified-keyring.sh writes the checked key through ``write_file`` too."""
    keyrings = tmp_path / "keyrings"
    keyrings.mkdir()
    victim = tmp_path / "sudoers"
    victim.write_text("root ALL=(ALL) ALL\n")
    keyring = keyrings / "rocm.gpg"
    keyring.symlink_to(victim)
    (keyrings / "rocm.gpg.rocm-fleet-new").symlink_to(victim)
    (command,) = run_op(
        apt.verified_keyring, {fact_key(KeyringFingerprints, path=str(keyring)): None},
        path=str(keyring), url=KEY_URL, fingerprint=FINGERPRINT,
    ).commands  # fmt: skip
    proc = run(command, key_tools)
    assert proc.returncode == 0, proc.stderr
    assert not keyring.is_symlink() and keyring.read_text() == "ARMORED\n"
    assert stat.S_IMODE(keyring.stat().st_mode) == 0o644
    assert victim.read_text() == "root ALL=(ALL) ALL\n"
