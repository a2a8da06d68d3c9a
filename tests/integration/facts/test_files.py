"""rocm_fleet.facts.files: a file's digest and a directory's existence, run on
this machine (DaemonRunning, facts.system's other Condition, is tested beside
DirectoryExists).
"""

from __future__ import annotations

import os
import subprocess

from rocm_fleet.facts.files import DirectoryExists, FileDigest, FileText
from rocm_fleet.facts.system import (
    DaemonRunning,
)
from unit.facts.support import run_sh


def test_file_digest_reads_mode_sha256_and_mtime(tmp_path):
    import hashlib

    path = tmp_path / "rocm pin"
    path.write_text("Package: *\n")
    path.chmod(0o640)
    os.utime(path, (1_764_460_800, 1_764_460_800))
    fact = FileDigest()
    rc, out = run_sh(fact.command(str(path)))
    assert rc == 0
    assert fact.process(out) == {
        "mode": "640",
        "sha256": hashlib.sha256(b"Package: *\n").hexdigest(),
        "mtime": 1_764_460_800,
    }
    assert fact.process(run_sh(fact.command(str(tmp_path / "none")))[1]) is None
    assert fact.process(run_sh(fact.command(str(tmp_path)))[1]) is None  # a directory


def test_file_text_reads_a_regular_file_never_through_a_link(tmp_path):
    """--diff's read of a host's file: its text; None for a link (a root-only file it points
    at is not printed), a directory or no file."""
    conf = tmp_path / "rocm.conf"
    conf.write_text("/opt/rocm/lib\n/opt/rocm/lib64\n")
    secret = tmp_path / "shadow"
    secret.write_text("root:$y$j9T$secret:20000:0:99999:7:::\n")
    link = tmp_path / "rocm-pin-600"
    link.symlink_to(secret)
    fact = FileText()
    answers = {}
    for path in (conf, link, tmp_path, tmp_path / "none"):
        rc, out = run_sh(fact.command(str(path)))
        assert rc == 0
        answers[path.name] = fact.process(out)
    assert answers == {"rocm.conf": "/opt/rocm/lib\n/opt/rocm/lib64\n", "rocm-pin-600": None,
                       tmp_path.name: None, "none": None}  # fmt: skip


def test_directory_and_daemon_conditions_on_this_machine(tmp_path):
    odd = tmp_path / "it's $HOME"
    odd.mkdir()
    (tmp_path / "file").write_text("")
    fact = DirectoryExists()
    assert fact.process(run_sh(fact.command(str(odd)))[1]) is True
    assert fact.process(run_sh(fact.command(str(tmp_path / "file")))[1]) is False
    assert fact.process(run_sh(fact.command(str(tmp_path / "none")))[1]) is False
    daemon = DaemonRunning()
    alive, dead, empty = tmp_path / "alive.pid", tmp_path / "dead.pid", tmp_path / "empty.pid"
    alive.write_text(f"{os.getpid()}\n")
    gone = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    dead.write_text(gone.stdout)  # a process that has exited
    empty.write_text("")
    assert daemon.process(run_sh(daemon.command(str(alive)))[1]) is True
    for pidfile in (dead, empty, tmp_path / "none.pid"):
        assert daemon.process(run_sh(daemon.command(str(pidfile)))[1]) is False, pidfile
    assert fact.default() is False and daemon.default() is False


def test_file_digests_batched_answer_as_each_alone(tmp_path):
    odd = tmp_path / "a\\b"  # sha256sum escapes a backslash in a name, and marks the line
    odd.write_text("odd\n")
    plain = tmp_path / "rocm pin"
    plain.write_text("Package: *\n")
    plain.chmod(0o600)
    paths = [str(plain), str(odd), str(tmp_path / "none"), str(tmp_path), str(plain)]
    kwargs_list = [{"path": path} for path in paths]
    rc, out = run_sh(FileDigest.batch_command(kwargs_list))
    assert rc == 0
    fact = FileDigest()
    alone = [fact.process(run_sh(fact.command(path))[1]) for path in paths]
    assert FileDigest.batch_process(out, kwargs_list) == alone
    assert alone[0]["mode"] == "600" and alone[1] is not None
    assert alone[2] is None and alone[3] is None  # missing, a directory
    assert FileDigest.batch_process([], kwargs_list) == [None] * len(paths)
