"""Every fact's command is POSIX sh (facts/_shell.py's idioms): parsed by dash with odd
arguments.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess

import pytest

from rocm_fleet.facts import _shell
from rocm_fleet.facts._shell import print_file
from rocm_fleet.facts.apt import (
    AptSourceLines,
    DebianMirror,
    InstalledPackages,
    KeyringFingerprints,
)
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.gpu import (
    KfdNodes,
    PciGpus,
    RocmAgents,
    RocmVersion,
)
from rocm_fleet.facts.python import TorchBuildStrings, TorchInfo, VenvDistributions
from rocm_fleet.facts.secureboot import MokKeyState, SecureBoot
from rocm_fleet.facts.system import (
    AmdgpuModule,
    Architecture,
    DistroRelease,
    FreeSpace,
    Identity,
    LoadedModules,
    Nameservers,
    RebootRequired,
    Wsl,
)
from rocm_fleet.facts.users import GroupMembership
from unit.facts.support import ODD_PATH


def test_sysfs_commands_are_posix_sh():
    if not shutil.which("dash"):
        pytest.skip("dash not installed")
    for fact in (PciGpus(), KfdNodes(), RocmAgents(), SecureBoot(), DistroRelease(),
                 InstalledPackages(), DebianMirror(), Architecture(), Identity(), Wsl(),
                 LoadedModules(), AmdgpuModule(), RebootRequired()):  # fmt: skip
        proc = subprocess.run(
            ["dash", "-n", "-c", fact.command()], capture_output=True, check=False
        )
        assert proc.returncode == 0, proc.stderr
    for fact, kwargs in (
        (RocmVersion(), {"rocm_path": "/opt/rocm"}),
        (MokKeyState(), {"path": ODD_PATH}),
        (TorchInfo(), {"python": ODD_PATH}),
        (VenvDistributions(), {"venv": ODD_PATH}),
        (TorchBuildStrings(), {"venv": ODD_PATH}),
        (FileDigest(), {"path": ODD_PATH}),
        (KeyringFingerprints(), {"path": ODD_PATH}),
        (AptSourceLines(), {"hosts": ["repo.radeon.com", "repo.amd.com"]}),
        (FreeSpace(), {"paths": ["/opt", ODD_PATH]}),
        (GroupMembership(), {"groups": ["video", "render"], "users": ["alice"]}),
    ):
        proc = subprocess.run(
            ["dash", "-n", "-c", fact.command(**kwargs)], capture_output=True, check=False
        )
        assert proc.returncode == 0, proc.stderr


# Hostile or odd file content read by print_file (Ledger, DistroRelease, KfdNodes): what cat
# printed, line for line; a NUL byte is dropped (dash's read skips it; cat passed it): every
# file read so is root's (ledgers in rocm-fleet's state directory, /etc/subuid, /etc/subgid,
# the CDI spec, /etc/os-release, sysfs), so no one else can put one there.
ODD_CONTENT = {
    "backslashes": b"c:\\new\\tab \\\\ \\\n",
    "printf formats": b"%s %d %n %%\n%\n",
    "dashes": b"-n\n-e\n--\n-\n",
    "blanks kept": b"  lead\ttab  \n\n\n trail \n",
    "carriage returns": b"crlf\r\nend\r\n",
    "no trailing newline": b"first\nlast",
    "empty": b"",
    "only a newline": b"\n",
    "glob and expansion": b"* ? [a] $HOME $(id) `id`\n",
    "long line": b"x" * 100_000 + b"\n",
    "not UTF-8": b"\xff\xfe caf\xe9\n",
}


@pytest.mark.parametrize("name", sorted(ODD_CONTENT))
def test_print_file_prints_what_cat_printed(tmp_path, name):
    path = tmp_path / "ledger"
    path.write_bytes(ODD_CONTENT[name])
    printed = subprocess.run(
        ["dash", "-c", print_file(shlex.quote(str(path)))], capture_output=True, check=False
    )
    assert printed.returncode == 0
    cat = subprocess.run(["cat", str(path)], capture_output=True, check=True).stdout
    assert printed.stdout == (cat if cat.endswith(b"\n") or not cat else cat + b"\n")


def test_print_file_drops_nul_and_prints_nothing_for_no_file(tmp_path):
    path = tmp_path / "ledger"
    path.write_bytes(b"a\0b\n")
    for target, printed in ((path, b"ab\n"), (tmp_path / "none", b""), (tmp_path, b"")):
        proc = subprocess.run(
            ["dash", "-c", print_file(shlex.quote(str(target)))],
            capture_output=True, check=False, timeout=10,
        )  # fmt: skip
        assert (proc.stdout, proc.stderr) == (printed, b"")


def test_a_script_s_exit_status_is_the_section_s(monkeypatch):
    """script_command's subshell ends with the script's own status, as ``sh -c`` did."""
    monkeypatch.setattr(_shell.files, "text", lambda name: 'echo "$# $1"; exit 3')
    proc = subprocess.run(
        ["dash", "-c", f"{_shell.script_command(('any',), ('-n', 'two'))}; echo $?"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.stdout == "2 -n\n3\n"


def test_nameservers_reads_what_sed_read(tmp_path):
    """The builtin loop beside the ``sed`` it replaced, on an odd resolv.conf."""
    conf = tmp_path / "resolv.conf"
    conf.write_bytes(
        b"# nameserver 10.0.0.1\n nameserver 10.0.0.2\nnameserver 192.0.2.1\n"
        b"nameserver\t \t2001:db8::1 # here\nnameserver\nnameserverX\n\\nameserver 1\n"
        b"nameserver -n %s \\t\nnameserver 198.51.100.7"
    )
    command = Nameservers.command.replace("/etc/resolv.conf", shlex.quote(str(conf)))
    new = subprocess.run(["dash", "-c", command], capture_output=True, check=False).stdout
    sed = ["sed", "-n", "s/^nameserver[[:space:]]*//p", str(conf)]
    old = subprocess.run(sed, capture_output=True, check=True).stdout
    assert new == old + b"\n"  # sed kept the last line's missing newline missing
