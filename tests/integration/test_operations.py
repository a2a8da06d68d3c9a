"""The tests of tests/unit/test_operations.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest
from pyinfra.api import StringCommand

from integration.rootless import stat_double
from rocm_fleet.facts.apt import (
    KeyringFingerprints,
)
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.operations import apt, files
from unit.opcases import run_op
from unit.surveys import fact_key
from unit.test_operations import DASH, FINGERPRINT, GPG_COLONS, KEY_URL


def run_script(command: StringCommand, bin_dir: Path | None = None) -> subprocess.CompletedProcess:
    path = f"{bin_dir}:/usr/bin:/bin" if bin_dir else "/usr/bin:/bin"
    return subprocess.run(
        [DASH, "-c", str(command)], capture_output=True, text=True, env={"PATH": path},
        timeout=60, check=False,
    )  # fmt: skip


def test_text_file_script_writes_the_exact_content_and_mode(tmp_path):
    target = tmp_path / "it's a $HOME file"
    content = "line 'one'\n$PATH `two` \\n\nno newline at the end"
    result = run_op(
        files.text_file,
        {fact_key(FileDigest, path=str(target)): None},
        path=str(target),
        content=content,
        mode="640",
    )
    (command,) = result.commands
    # Its stat double beside tmp_path: nothing but the file is left in it.
    proc = run_script(command, stat_double(tmp_path.with_name(f"{tmp_path.name}-bin"), tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert target.read_text() == content
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temporary left


def fake_tool(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def key_tools(tmp_path):
    """curl that 'downloads' an armored key, gpg that 'imports' it (keeps a copy), lists
    GPG_COLONS for it and 'exports' the copy."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "colons").write_text(GPG_COLONS)
    fake_tool(bin_dir, "curl", 'while [ "$1" != -o ]; do shift; done\necho ARMORED > "$2"\n')
    fake_tool(
        bin_dir,
        "gpg",
        "for last; do :; done\n"
        f'case "$*" in *--import*) cp "$last" {tmp_path}/imported ;;\n'
        f"*--list-keys*) cat {tmp_path}/colons ;;\n"
        f"*--export*) cat {tmp_path}/imported ;; esac\n",
    )
    fake_tool(bin_dir, "gpgconf", "exit 0\n")
    return stat_double(bin_dir, tmp_path)


@pytest.mark.parametrize(
    ("fingerprint", "written"),
    [(FINGERPRINT, True), ("0123456789ABCDEF0123456789ABCDEF01234567", False)],
    ids=["the primary key's fingerprint", "another fingerprint"],
)
def test_verified_keyring_script_checks_the_primary_key_before_writing(
    tmp_path, key_tools, fingerprint, written
):
    keyring = tmp_path / "keyrings" / "rocm.gpg"
    result = run_op(
        apt.verified_keyring,
        {fact_key(KeyringFingerprints, path=str(keyring)): None},
        path=str(keyring),
        url=KEY_URL,
        fingerprint=fingerprint,
    )
    (command,) = result.commands
    proc = run_script(command, key_tools)
    if written:
        assert proc.returncode == 0, proc.stderr
        assert keyring.read_text() == "ARMORED\n"
    else:
        assert proc.returncode == 1
        assert proc.stderr.strip() == (
            f"refusing key from {KEY_URL}: fingerprint {FINGERPRINT} is not {fingerprint}"
        )
        assert not keyring.parent.exists()  # nothing written
