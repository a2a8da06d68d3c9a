"""Every fact's command is POSIX sh (facts/_shell.py's idioms): parsed by dash with odd
arguments.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

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
