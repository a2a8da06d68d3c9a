"""Attacks on the safe path rule (``files/scripts/safe-path.sh``): every script that writes or
runs something as root refuses when a directory above that path is another user's or
writable by others (a ``SlurmUser``-owned ``/etc/slurm``, a venv's parent of a user's, a
group-writable state directory), naming the directory, its owner and the rule, and changes
nothing; and no script writes through a link planted at its file or at a temporary name.

Each script runs under dash as ``operations._script.script`` builds it, in a temporary "node";
the tools it would change the host with are recorders. A test can't chown, so ownership comes
from ``integration.rootless``'s ``stat`` double (what the rule asks); modes are real.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from integration.rootless import stat_double
from rocm_fleet.operations import _script
from rocm_fleet.operations._script import script
from unit.test_operations import DASH

RULE = "writes or runs must be root's and writable by no one else (the safe path rule)"
TOOLS = ("apt-get", "apt-mark", "update-initramfs", "service", "systemctl", "mokutil", "openssl",
         "nginx")  # fmt: skip


class Node:
    """A node in ``root``: ``etc``, the directory the scripts write in; ``victim``, a file of
    root's a link may point at; ``calls``, what the recorders were asked."""

    def __init__(self, root: Path):
        self.root = root
        self.etc = root / "etc"
        self.etc.mkdir(parents=True)
        (self.etc / "slurm.conf").write_text("ClusterName=lab\n")
        self.victim = root / "shadow"
        self.victim.write_text("root:*:19000:0:99999:7:::\n")
        self.calls = root.with_name(f"{root.name}-calls")
        self.bin = root.with_name(f"{root.name}-bin")
        self.bin.mkdir()
        for tool in TOOLS:
            (self.bin / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {self.calls}\n')
            (self.bin / tool).chmod(0o755)
        # A python3 new enough for pull-venv; the venvs it makes hold a copy of it.
        (self.bin / "python3").write_text(
            f'#!/bin/sh\necho "python $*" >> {self.calls}\n[ "$1 $2" = "-m venv" ] || exit 0\n'
            'mkdir -p "$3/bin" && cp "$0" "$3/bin/python"\n'
        )
        (self.bin / "python3").chmod(0o755)

    def run(self, command, owners: dict[Path, str] | None = None) -> subprocess.CompletedProcess:
        stat_double(self.bin, self.root, owners)
        return subprocess.run(
            [DASH, "-c", str(command)], capture_output=True, text=True, timeout=60,
            check=False, env={"PATH": f"{self.bin}:/usr/bin:/bin"},
        )  # fmt: skip

    def ran(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def state(self) -> dict[str, tuple]:
        """Every path under root: its mode and its content or link target."""
        found = {}
        for path in sorted(self.root.rglob("*")):
            info = path.lstat()
            if path.is_symlink():
                found[str(path)] = ("link", os.readlink(path))
            elif path.is_dir():
                found[str(path)] = ("dir", info.st_mode)
            else:
                found[str(path)] = ("file", info.st_mode, path.read_bytes())
        return found


@pytest.fixture
def node(tmp_path, monkeypatch) -> Node:
    for key in ("REBOOT_REQUIRED", "REBOOT_PACKAGES", "REBOOT_REASONS"):
        monkeypatch.setitem(_script._SCRIPT_VARIABLES, key, str(tmp_path / "node/run" / key))
    return Node(tmp_path / "node")


def _lock(etc: Path) -> tuple[str, str]:
    lock = etc.parent / "requirements.txt"
    lock.write_text("rocm-fleet==1.0 --hash=sha256:" + "0" * 64 + "\n")
    return str(lock), hashlib.sha256(lock.read_bytes()).hexdigest()


# Each script that writes or runs as root, with the path(s) it uses in ``etc``.
WRITERS = {
    "text-file": lambda etc: ("text-file", str(etc / "gres.conf"), "644", "Name=gpu\n"),
    "module-options": lambda etc: (
        "module-options", str(etc / "amd-ttm.conf"), "options ttm pages_limit=1\n", "ttm",
    ),
    "kernel-hold": lambda etc: ("kernel-hold", str(etc / "held"), "+linux-image-amd64"),
    "packages-install": lambda etc: ("packages-install", str(etc / "installed"), "gnupg"),
    "dkms-driver": lambda etc: ("dkms-driver", str(etc / "driver"), "amdgpu-dkms", "amdgpu-dkms"),
    "dkms-driver-purge": lambda etc: (
        "dkms-driver-purge", str(etc / "driver"), "amdgpu-dkms", "gone", "amdgpu-dkms",
    ),
    "push-mark": lambda etc: ("push-mark", "start", str(etc / "push"), str(etc / "lock"), "1"),
    "daemon-serving": lambda etc: ("daemon-serving", "nginx", "reload", str(etc / "stamp")),
    "engine-restart": lambda etc: ("engine-restart", "docker", str(etc / "stamp")),
    "pull-units": lambda etc: (
        "pull-units", "enable", str(etc / "pull.timer"), str(etc / "wants/pull.timer"),
        str(etc / "stamp"),
    ),
    "signing-key": lambda etc: ("signing-key", str(etc / "mok.der"), str(etc / "mok.priv")),
    "mok-import": lambda etc: ("mok-import", str(etc / "mok.der"), str(etc / "hash")),
    "venv-create": lambda etc: ("venv-create", str(etc / "venv"), str(etc / "created")),
    "venv-remove": lambda etc: ("venv-remove", str(etc / "venv"), str(etc / "created")),
    "pull-venv": lambda etc: (
        "pull-venv", str(etc / "pull"), str(etc / "pull/venv"), *_lock(etc),
        str(etc / "pull/stamp"), "3.9", "0",
    ),
    "upload-start": lambda etc: ("upload-start", str(etc / "munge.key"), "600", str(etc / ".m")),
    "directories": lambda etc: ("directories", str(etc / "bundle"), str(etc / "bundle/pool")),
    "bundle-settle": lambda etc: ("bundle-settle", str(etc / "bundle"), "", ""),
}  # fmt: skip


def refused(node: Node, proc: subprocess.CompletedProcess, directory: Path, owner: str):
    assert proc.returncode != 0
    assert "refusing to write or run " in proc.stderr, proc.stderr
    assert f": {directory} is owned by {owner} (mode " in proc.stderr
    assert RULE in proc.stderr.replace("\n", " ")
    # Nothing ran that changes a host (a python3 asked only its version may have).
    assert [call for call in node.ran() if not call.startswith("python -c")] == []


@pytest.mark.parametrize("writer", sorted(WRITERS))
@pytest.mark.parametrize("mode", [0o775, 0o777, 0o1777])
def test_a_directory_others_may_write_is_refused_and_the_host_unchanged(node, writer, mode):
    """Who: a group member, or anyone, who may write the directory a script writes in. With:
    the directory (here made group- or world-writable, or sticky as /tmp is)."""
    name, *args = WRITERS[writer](node.etc)
    (node.etc / "bundle").mkdir()
    node.etc.chmod(mode)
    before = node.state()
    proc = node.run(script(name, *args))
    refused(node, proc, node.etc, "root")
    assert f"mode {mode:o})" in proc.stderr
    assert node.state() == before


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_directory_another_user_owns_is_refused_and_the_host_unchanged(node, writer):
    """Who: the user owning a directory above what root writes (a SlurmUser's /etc/slurm, a
    user's directory holding the venv). With: the directory, 0755: she may rename, replace or
    link anything in it."""
    name, *args = WRITERS[writer](node.etc)
    (node.etc / "bundle").mkdir()
    before = node.state()
    proc = node.run(script(name, *args), {node.etc: "64030 slurm"})
    refused(node, proc, node.etc, "slurm")
    assert node.state() == before


def test_a_directory_higher_up_is_checked_too(node):
    """Up to /: a directory two levels above, others-writable, is named."""
    deep = node.etc / "apt/keyrings"
    deep.mkdir(parents=True)
    node.root.chmod(0o777)
    proc = node.run(script("text-file", str(deep / "rocm.gpg"), "644", "key"))
    refused(node, proc, node.root, "root")
    node.root.chmod(0o755)
    assert node.run(script("text-file", str(deep / "rocm.gpg"), "644", "key")).returncode == 0
    assert (deep / "rocm.gpg").read_text() == "key"


def test_a_link_to_a_directory_others_may_write_is_refused(node):
    """With: /etc/slurm a link to a directory others may write: the directory it resolves to
    is checked, not only the link."""
    elsewhere = node.root / "shared"
    elsewhere.mkdir(mode=0o777)
    elsewhere.chmod(0o777)
    (node.etc / "slurm").symlink_to(elsewhere)
    proc = node.run(script("text-file", str(node.etc / "slurm/gres.conf"), "644", "x"))
    refused(node, proc, elsewhere, "root")
    assert list(elsewhere.iterdir()) == []


def test_a_link_in_a_directory_others_may_write_is_refused(node):
    """With: a link to a sound directory, kept in one others may write (they could point it
    anywhere): the directory holding the link is named."""
    sound = node.root / "sound"
    sound.mkdir()
    hall = node.root / "hall"
    hall.mkdir()
    (hall / "slurm").symlink_to(sound)
    hall.chmod(0o777)
    proc = node.run(script("text-file", str(hall / "slurm/gres.conf"), "644", "x"))
    refused(node, proc, hall, "root")
    assert list(sound.iterdir()) == []


def test_a_system_owner_the_file_needs_is_accepted_no_other(node):
    """The pull's metrics go where node_exporter reads them: Debian's package makes
    /var/lib/prometheus prometheus's, which the check accepts when asked to, never another
    user, and never group-writable."""
    check = f'safe_path "{node.etc}/rocm_fleet.prom" prometheus && echo sound'
    command = _script.files.text("scripts/safe-path.sh") + check
    assert node.run(command, {node.etc: "110 prometheus"}).stdout == "sound\n"
    assert "owned by alice" in node.run(command, {node.etc: "1000 alice"}).stderr
    node.etc.chmod(0o775)
    assert (
        "owned by prometheus (mode 775)" in node.run(command, {node.etc: "110 prometheus"}).stderr
    )


# --- links at the paths written and at the temporary names once used -----------------------


def test_the_kernel_hold_ledger_is_written_past_links_at_it_and_at_its_old_temporary(node):
    ledger = node.etc / "held"
    ledger.symlink_to(node.victim)
    Path(f"{ledger}.new").symlink_to(node.victim)
    before = node.victim.read_text()
    proc = node.run(script("kernel-hold", str(ledger), "+linux-image-amd64"))
    assert proc.returncode == 0, proc.stderr
    assert not ledger.is_symlink() and ledger.read_text() == "linux-image-amd64\n"
    assert node.victim.read_text() == before
    assert node.ran() == ["apt-mark hold linux-image-amd64"]


@pytest.mark.parametrize("writer", ["packages-install", "dkms-driver"])
def test_a_ledger_is_added_to_past_a_link_neither_read_nor_followed(node, writer):
    name, ledger, *rest = WRITERS[writer](node.etc)
    Path(ledger).symlink_to(node.victim)
    before = node.victim.read_text()
    proc = node.run(script(name, ledger, *rest))
    assert proc.returncode == 0, proc.stderr
    assert not Path(ledger).is_symlink()
    assert Path(ledger).read_text() == f"{rest[-1]}\n"  # nothing of the victim's
    assert node.victim.read_text() == before


def test_ledger_purge_writes_no_file_beside_the_ledger(node):
    """Its two listings were files beside the ledger (``.before``/``.after``), written with
    ``>``: links planted there are left alone now, as nothing is written there."""
    ledger = node.etc / "installed"
    ledger.write_text("gnupg\n")
    for suffix in (".before", ".after"):
        Path(f"{ledger}{suffix}").symlink_to(node.victim)
    before = node.victim.read_text()
    proc = node.run(script("ledger-purge", str(ledger), "gnupg"))
    assert proc.returncode == 0, proc.stderr
    assert node.victim.read_text() == before
    assert sorted(p.name for p in node.etc.iterdir()) == [
        "installed", "installed.after", "installed.before", "slurm.conf",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("writer", "written"),
    [
        ("push-mark", "push"),
        ("daemon-serving", "stamp"),
        ("engine-restart", "stamp"),
        ("pull-venv", "pull/stamp"),
    ],
)
def test_a_mark_or_stamp_replaces_a_link_at_it(node, writer, written):
    name, *args = WRITERS[writer](node.etc)
    (node.etc / "pull").mkdir()
    (node.etc / written).symlink_to(node.victim)
    before = node.victim.read_text()
    proc = node.run(script(name, *args))
    assert proc.returncode == 0, proc.stderr
    assert not (node.etc / written).is_symlink() and (node.etc / written).is_file()
    assert node.victim.read_text() == before


def test_an_upload_goes_through_a_new_directory_never_a_name_already_there(node):
    """uploaded_file's first step: a link (or anything) at the private name is refused by
    mkdir, never followed; with nothing there, the directory is root's alone."""
    private = node.etc / ".munge.key.0123456789ab"
    private.symlink_to(node.root)
    proc = node.run(script("upload-start", str(node.etc / "munge.key"), "600", str(private)))
    assert proc.returncode != 0 and not (node.root / "new").exists()
    private.unlink()
    proc = node.run(script("upload-start", str(node.etc / "munge.key"), "600", str(private)))
    assert proc.returncode == 0, proc.stderr
    assert private.stat().st_mode & 0o777 == 0o700
    assert (private / "new").stat().st_mode & 0o777 == 0o600


def test_the_venv_fact_names_a_parent_another_user_owns(node):
    """Preflight's fact (WritableByOthers) on the node: the venv's parent is named when it is
    another user's, or a directory higher up others may write."""
    from rocm_fleet.facts.files import WritableByOthers

    venv = node.etc / "venv"  # not made yet: its parents alone are checked
    fact = WritableByOthers()

    def found(owners=None) -> str | None:
        return fact.process(node.run(fact.command(str(venv)), owners).stdout.splitlines())

    assert found() is None
    assert found({node.etc: "1000 alice"}) == f"alice 755 {node.etc}"
    node.root.chmod(0o775)
    assert found() == f"root 775 {node.root}"


def test_a_removal_through_a_directory_others_may_write_is_refused(node):
    """With: /etc/slurm a link into a directory others may write, holding their gres.conf:
    the deploy's removal of its own gres.conf (text_file, present=False) removes nothing."""
    from rocm_fleet.facts.files import FileDigest
    from rocm_fleet.operations import files
    from unit.opcases import run_op
    from unit.surveys import digest, fact_key

    shared = node.root / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "gres.conf").write_text("theirs\n")
    (node.etc / "slurm").symlink_to(shared)
    path = str(node.etc / "slurm/gres.conf")
    (command,) = run_op(
        files.text_file, {fact_key(FileDigest, path=path): digest("theirs\n")},
        path=path, present=False,
    ).commands  # fmt: skip
    refused(node, node.run(command), shared, "root")
    assert (shared / "gres.conf").read_text() == "theirs\n"
    shared.chmod(0o755)
    assert node.run(command).returncode == 0 and not (shared / "gres.conf").exists()


def test_the_reboot_marks_replace_links_at_them(node):
    """/run/reboot-required and its .pkgs were written with ``>`` and ``>>``: links there are
    replaced now, the file they named untouched."""
    run = node.root / "run"
    run.mkdir()
    marks = [run / key for key in ("REBOOT_REQUIRED", "REBOOT_PACKAGES", "REBOOT_REASONS")]
    for mark in marks:
        mark.symlink_to(node.victim)
    before = node.victim.read_text()
    name, *args = WRITERS["dkms-driver"](node.etc)
    proc = node.run(script(name, *args))
    assert proc.returncode == 0, proc.stderr
    assert node.victim.read_text() == before
    assert [mark.is_symlink() for mark in marks] == [False] * 3
    assert marks[1].read_text() == "amdgpu-dkms\n"
    assert marks[2].read_text() == "new driver amdgpu-dkms\n"
