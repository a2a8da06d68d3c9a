"""rocm_fleet.facts: fixture outputs through process(), and the commands themselves.

Outputs are split into lines the way pyinfra hands them to ``process()`` (one string per
line, newline removed). The sysfs facts' commands are also run for real under ``dash``
against the trees in tests/fixtures/sysfs, and the marker/quoting logic of the other
commands is run with fake tools on PATH, so the POSIX sh is exercised, not just read.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from pyinfra.api.exceptions import FactProcessError
from pyinfra.facts.deb import DebArch

from rocm_fleet.engine.factcache import read_fact, remember_fact
from rocm_fleet.facts.apt import (
    AptSourceLines,
    DebianMirror,
    DpkgInterrupted,
    InstalledPackages,
    KeyringFingerprints,
    kernel_releases,
)
from rocm_fleet.facts.files import DirectoryExists, FileDigest
from rocm_fleet.facts.gpu import (
    KfdNodes,
    PciGpus,
    RocmAgents,
    RocmVersion,
    gfx_from_target_version,
)
from rocm_fleet.facts.python import TorchBuildStrings, TorchInfo, VenvDistributions
from rocm_fleet.facts.secureboot import MokKeyState, SecureBoot
from rocm_fleet.facts.survey import Read, Survey
from rocm_fleet.facts.system import (
    AmdgpuModule,
    Architecture,
    DaemonRunning,
    DistroRelease,
    FreeSpace,
    Identity,
    LoadedModules,
    RebootRequired,
    RunningKernel,
    Wsl,
)
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.model.pci_ids import AMD_VENDOR

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DASH = shutil.which("dash") or shutil.which("sh")
ODD_PATH = "/opt/my venv/it's $HOME/bin/python"


def lines(text: str) -> list[str]:
    return text.splitlines()


def fixture(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text()


def run_sh(command: str, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    proc = subprocess.run(
        [DASH, "-c", command], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    return proc.returncode, lines(proc.stdout)


def fake_tool(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "gfx"),
    [
        (110000, "gfx1100"),
        (110001, "gfx1101"),
        (90010, "gfx90a"),
        (90402, "gfx942"),
        (90500, "gfx950"),
        (90008, "gfx908"),
        (100300, "gfx1030"),
        (100306, "gfx1036"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
        (0, None),
    ],
)
def test_gfx_from_target_version_decodes_like_rocm_agent_enumerator(value, gfx):
    assert gfx_from_target_version(value) == gfx


# ---------------------------------------------------------------------------------------
# RocmAgents
# ---------------------------------------------------------------------------------------


def agents(name: str, rc: int) -> dict:
    return RocmAgents().process([*lines(fixture("rocminfo", name)), f"__rc={rc}"])


def test_rocminfo_rx7900xtx_ignores_cpu_agent_and_strips_colour():
    result = agents("rx7900xtx.txt", 0)
    assert result["status"] == "ok"
    assert result["rc"] == 0
    assert result["message"] == "ROCk module version 6.7.0 is loaded"
    assert result["gpus"] == [
        {
            "name": "gfx1100",
            "marketing_name": "Radeon RX 7900 XTX",
            "uuid": "GPU-fff29e921a701d68",
            "vendor": "AMD",
            "node": 1,
            "chip_id": "0x744c",
            "compute_units": 96,
            "pci_bdf": "0d:00.0",
            "apu": False,
            "isa": ["amdgcn-amd-amdhsa--gfx1100"],
        }
    ]
    json.dumps(result)  # audit-ready


def test_rocminfo_mi300x_x8_lists_eight_gpus_in_agent_order():
    result = agents("mi300x_x8.txt", 0)
    gpus = result["gpus"]
    assert result["status"] == "ok"
    assert result["message"] == "ROCk module version 6.8.5 is loaded"
    assert len(gpus) == 8
    assert {gpu["name"] for gpu in gpus} == {"gfx942"}
    assert {gpu["marketing_name"] for gpu in gpus} == {"AMD Instinct MI300X"}
    assert [gpu["node"] for gpu in gpus] == list(range(2, 10))
    assert gpus[0]["uuid"] == "GPU-07386a321fa45d1e"
    assert gpus[-1]["uuid"] == "GPU-6f890acb8eb0492b"
    assert len({gpu["uuid"] for gpu in gpus}) == 8
    assert [gpu["pci_bdf"] for gpu in gpus] == [
        f"{bus}:00.0" for bus in ("1b", "3d", "4e", "5f", "9d", "bd", "cd", "dd")
    ]
    assert all(gpu["isa"] == ["amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"] for gpu in gpus)
    assert all(gpu["chip_id"] == "0x74a1" and gpu["compute_units"] == 304 for gpu in gpus)


def test_rocminfo_igpu_beside_dgpu_reports_both_and_flags_the_apu():
    gpus = agents("rx9070xt_igpu_gfx1036.txt", 0)["gpus"]
    assert [(g["name"], g["marketing_name"], g["apu"]) for g in gpus] == [
        ("gfx1201", "AMD Radeon RX 9070 XT", False),
        ("gfx1036", "AMD Radeon Graphics", True),
    ]
    assert gpus[0]["isa"] == ["amdgcn-amd-amdhsa--gfx1201", "amdgcn-amd-amdhsa--gfx12-generic"]
    assert gpus[1]["isa"] == ["amdgcn-amd-amdhsa--gfx1036", "amdgcn-amd-amdhsa--gfx10-3-generic"]
    assert gpus[1]["uuid"] == "GPU-XX"
    assert (gpus[0]["pci_bdf"], gpus[1]["pci_bdf"]) == ("03:00.0", "76:00.0")


@pytest.mark.parametrize(
    ("name", "rc", "status", "message"),
    [
        ("not_loaded.txt", 1, "not_loaded", "ROCk module is NOT loaded, possibly no GPU devices"),
        ("not_live.txt", 1, "not_loaded", "ROCk module is NOT live, possibly no GPU devices"),
        (
            "kfd_permission_denied.txt",
            1,
            "no_access",
            'Unable to open /dev/kfd read-write: Permission denied tux is not member of "render"',
        ),
        (
            "hsa_out_of_resources.txt",
            8,
            "error",
            "hsa api call failure at: /src/rocminfo/rocminfo.cc:1142",
        ),
    ],
)
def test_rocminfo_failures(name, rc, status, message):
    result = agents(name, rc)
    assert result["status"] == status
    assert result["rc"] == rc
    assert result["gpus"] == []
    assert message in result["message"]
    assert "\x1b" not in result["message"]


def test_rocminfo_error_on_nonzero_exit_even_with_agent_listing():
    # e.g. a crash in hsa_shut_down() after printing everything: do not trust the listing
    result = agents("rx7900xtx.txt", 139)
    assert result["status"] == "error"
    assert result["gpus"] == []
    assert "*** Done ***" in result["message"]


def test_rocminfo_timeout_is_reported():
    result = RocmAgents().process(["ROCk module is loaded", "__rc=124"])
    assert result["status"] == "error"
    assert result["message"].startswith("rocminfo timed out after 120s")


def test_rocminfo_absent_is_none_not_a_status():
    assert RocmAgents().process(["__absent"]) is None


def test_rocminfo_output_without_trailer_raises():
    with pytest.raises(FactProcessError):
        RocmAgents().process(["garbage"])


def test_rocminfo_command_runs_the_releases_own_and_always_exits_zero(tmp_path):
    """The release's rocminfo (its path comes from the matrix), never one on PATH: that may
    be Debian's, which would vouch for AMD's packages it isn't."""
    rocminfo = tmp_path / "core 10.1's" / "bin" / "rocminfo"
    command = RocmAgents().command(rocminfo=str(rocminfo))
    assert "command -v" not in command
    fake_tool(tmp_path, "rocminfo", "echo Debian\n")  # on PATH, never run
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    assert run_sh(command, env) == (0, ["__absent"])
    rocminfo.parent.mkdir(parents=True)
    fake_tool(rocminfo.parent, "rocminfo", 'cat "$FIXTURE"; exit 1\n')
    env["FIXTURE"] = str(FIXTURES / "rocminfo" / "not_loaded.txt")
    rc, out = run_sh(command, env)
    assert rc == 0
    assert out[-1] == "__rc=1"
    assert RocmAgents().process(out)["status"] == "not_loaded"


# ---------------------------------------------------------------------------------------
# RocmVersion
# ---------------------------------------------------------------------------------------


def test_rocm_version_parses_info_file():
    assert RocmVersion().process(lines(fixture("rocm", "version-6.4.3"))) == "6.4.3-128"
    assert RocmVersion().process(["", "  "]) is None


def test_rocm_version_command_idiom_and_quoting(tmp_path):
    # Both streams' files, the classic one first (/opt/rocm is a link to the release there,
    # a directory of links with core -> core-X.Y under the Core SDK).
    assert RocmVersion().command() == (
        "for f in /opt/rocm/.info/version /opt/rocm/core/.info/version; do "
        'if [ -r "$f" ]; then cat "$f"; break; fi; done; true'
    )
    odd = tmp_path / "rocm 6.4 's"
    assert RocmVersion().command(rocm_path=str(odd) + "/") == (
        f"for f in '{tmp_path}/rocm 6.4 '\"'\"'s/.info/version'; do "
        'if [ -r "$f" ]; then cat "$f"; break; fi; done; true'
    )
    assert run_sh(RocmVersion().command(rocm_path=str(odd))) == (0, [])  # absent: exit 0
    (odd / ".info").mkdir(parents=True)
    (odd / ".info" / "version").write_text(fixture("rocm", "version-6.4.3"))
    rc, out = run_sh(RocmVersion().command(rocm_path=str(odd)))
    assert (rc, RocmVersion().process(out)) == (0, "6.4.3-128")


# ---------------------------------------------------------------------------------------
# TorchInfo / PythonDistVersions
# ---------------------------------------------------------------------------------------

TORCH_ROCM = {
    "torch": "2.9.1+rocm6.4",
    "hip": "6.4.43484",
    "cuda": None,
    "available": True,
    "device_count": 1,
    "devices": [
        {"index": 0, "name": "AMD Radeon RX 7900 XTX", "arch": "gfx1100", "arch_full": "gfx1100"}
    ],
    "matmul": "ok",
    "error": None,
    "device_error": None,
}


def test_torch_info_picks_the_json_line_among_warnings():
    output = [
        "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:61: UserWarning: x",
        "__torch_json=" + json.dumps(TORCH_ROCM),
        "__rc=0",
    ]
    assert TorchInfo().process(output) == TORCH_ROCM


def test_torch_info_import_error_is_a_dict_with_error():
    data = dict.fromkeys(TORCH_ROCM)
    data["error"] = "ModuleNotFoundError: No module named 'torch'"
    result = TorchInfo().process(["__torch_json=" + json.dumps(data), "__rc=0"])
    assert result["error"] == "ModuleNotFoundError: No module named 'torch'"
    assert result["torch"] is None


def test_torch_info_missing_python_is_none():
    assert TorchInfo().process(["__absent"]) is None


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (["Segmentation fault (core dumped)", "__rc=139"], "python exited with 139: Segmentation"),
        (["__rc=124"], "python timed out"),
    ],
)
def test_torch_info_crash_never_fails_the_host(output, expected):
    result = TorchInfo().process(output)
    assert result["error"].startswith(expected)
    assert set(result) == set(TORCH_ROCM)


def test_torch_info_command_quotes_odd_python_path():
    command = TorchInfo().command(python=ODD_PATH)
    quoted = "'/opt/my venv/it'\"'\"'s $HOME/bin/python'"
    assert command.startswith(
        f"if command -v {quoted} >/dev/null 2>&1; then timeout 300 {quoted} -c '"
    )
    assert command.endswith('echo "__rc=$?"; else echo __absent; fi')


@pytest.mark.skipif(not shutil.which("python3"), reason="needs python3")
def test_torch_info_script_runs_and_reports_import_error(tmp_path):
    venv_bin = tmp_path / "my venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    # a python without torch: isolate from any torch installed for the test runner
    fake_tool(venv_bin, "python", f'exec {shutil.which("python3")} -I -S "$@"\n')
    rc, out = run_sh(TorchInfo().command(python=str(python)))
    result = TorchInfo().process(out)
    assert rc == 0
    assert result["error"] == "ModuleNotFoundError: No module named 'torch'"
    assert run_sh(TorchInfo().command(python=str(tmp_path / "nope")))[1] == ["__absent"]


def test_torch_info_script_with_fake_rocm_torch(tmp_path):
    # A stand-in torch module shaped like a ROCm build: proves the script's shape/arch logic.
    pkg = tmp_path / "site" / "torch"
    (pkg / "cuda").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from . import cuda, version\n__version__ = '2.9.1+rocm6.4'\n"
        "class _T:\n"
        "    def __init__(self, v): self.v = v\n"
        "    def __matmul__(self, o): return _T(self.v * 64)\n"
        "    def sum(self): return _T(self.v * 64 * 64)\n"
        "    def item(self): return float(self.v)\n"
        "def ones(*shape, device=None): return _T(1)\n"
    )
    (pkg / "version.py").write_text("hip = '6.4.43484'\ncuda = None\n")
    (pkg / "cuda" / "__init__.py").write_text(
        "class P:\n    gcnArchName = 'gfx942:sramecc+:xnack-'\n"
        "def is_available(): return True\n"
        "def device_count(): return 2\n"
        "def get_device_properties(i): return P()\n"
        "def get_device_name(i): return 'AMD Instinct MI300X'\n"
    )
    python = tmp_path / "python"
    fake_tool(
        tmp_path, "python", f'PYTHONPATH={tmp_path}/site exec {shutil.which("python3")} "$@"\n'
    )
    rc, out = run_sh(TorchInfo().command(python=str(python)))
    result = TorchInfo().process(out)
    assert rc == 0
    assert result["hip"] == "6.4.43484"
    assert result["device_count"] == 2
    assert [d["arch"] for d in result["devices"]] == ["gfx942", "gfx942"]
    assert result["devices"][0]["arch_full"] == "gfx942:sramecc+:xnack-"
    assert result["matmul"] == "ok"
    assert result["error"] is None


def make_venv(root: Path, python: str = "python3.11", dists=(), version_py: str | None = None):
    """A venv's files as pip leaves them: one ``<name>-<version>.dist-info`` directory per
    distribution, and torch's generated ``torch/version.py``."""
    site = root / "lib" / python / "site-packages"
    site.mkdir(parents=True)
    for dist in dists:
        (site / f"{dist}.dist-info").mkdir()
        (site / f"{dist}.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\n")
    if version_py is not None:
        (site / "torch").mkdir()
        (site / "torch" / "version.py").write_text(version_py)
    (site / "README.txt").write_text("This directory exists so that 3rd party packages...\n")
    return site


# torch/version.py as torch's setup writes it (torch 2.9 ROCm and CUDA wheels).
ROCM_VERSION_PY = """\
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '2.9.1+rocm6.4'
debug = False
cuda: Optional[str] = None
git_version = 'd38164a545b4a4e4e0cf73ce67173f70574890b6'
hip: Optional[str] = '6.4.43482-0f2d60242'
xpu: Optional[str] = None
"""
CUDA_VERSION_PY = (
    ROCM_VERSION_PY.replace("2.9.1+rocm6.4", "2.9.1+cu128")
    .replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12.8'")
    .replace("hip: Optional[str] = '6.4.43482-0f2d60242'", "hip: Optional[str] = None")
)
CPU_VERSION_PY = ROCM_VERSION_PY.replace("2.9.1+rocm6.4", "2.9.1+cpu").replace(
    "hip: Optional[str] = '6.4.43482-0f2d60242'", "hip: Optional[str] = None"
)
ROCM_DISTS = (
    "torch-2.9.1+rocm6.4",
    "torchvision-0.24.1+rocm6.4",
    "torchaudio-2.9.1+rocm6.4",
    "pytorch_triton_rocm-3.5.1",
    "numpy-2.3.5",
    "pip-23.0.1",
)


def test_venv_distributions_read_dist_info_names_with_local_labels(tmp_path):
    venv = tmp_path / "my venv" / "it's"
    make_venv(venv, dists=ROCM_DISTS)
    rc, out = run_sh(VenvDistributions().command(str(venv) + "/"))
    assert rc == 0
    assert VenvDistributions().process(out) == {
        "torch": "2.9.1+rocm6.4",
        "torchvision": "0.24.1+rocm6.4",
        "torchaudio": "2.9.1+rocm6.4",
        "pytorch_triton_rocm": "3.5.1",
        "numpy": "2.3.5",
        "pip": "23.0.1",
    }


def test_venv_distributions_no_venv_empty_venv_and_two_pythons(tmp_path):
    fact = VenvDistributions()
    assert fact.process(run_sh(fact.command(str(tmp_path / "none")))[1]) is None
    make_venv(tmp_path / "empty")
    assert fact.process(run_sh(fact.command(str(tmp_path / "empty")))[1]) == {}


@pytest.mark.parametrize(
    ("version_py", "expected"),
    [
        (ROCM_VERSION_PY, {"hip": "6.4.43482-0f2d60242", "cuda": None}),
        (CUDA_VERSION_PY, {"hip": None, "cuda": "12.8"}),
        (CPU_VERSION_PY, {"hip": None, "cuda": None}),
        ("hip = '6.2.41133-dd7f95766'\ncuda = None\n",
         {"hip": "6.2.41133-dd7f95766", "cuda": None}),
    ],
    ids=["rocm", "cuda", "cpu", "untyped"],
)  # fmt: skip
def test_torch_build_strings_read_version_py_without_importing_torch(
    tmp_path, version_py, expected
):
    venv = tmp_path / "my venv"
    make_venv(venv, dists=ROCM_DISTS[:1], version_py=version_py)
    rc, out = run_sh(TorchBuildStrings().command(str(venv)))
    assert rc == 0
    assert TorchBuildStrings().process(out) == expected


def test_torch_build_strings_without_torch_is_none(tmp_path):
    fact = TorchBuildStrings()
    assert run_sh(fact.command(str(tmp_path / "none"))) == (0, [])
    assert fact.process([]) is None
    make_venv(tmp_path / "venv", dists=["pip-23.0.1"])
    assert fact.process(run_sh(fact.command(str(tmp_path / "venv")))[1]) is None


# ---------------------------------------------------------------------------------------
# SecureBoot / MokKeyState
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "rc", "state", "shim_off", "setup"),
    [
        ("sb_state_enabled.txt", 0, "enabled", False, False),
        ("sb_state_enabled_validation_disabled.txt", 0, "enabled", True, False),
        ("sb_state_disabled.txt", 0, "disabled", False, False),
        ("sb_state_disabled_setup_mode.txt", 0, "disabled", False, True),
        ("sb_state_no_efi.txt", 1, "no_efi", False, False),
        ("sb_state_unsupported.txt", 255, "unsupported", False, False),
    ],
)
def test_secure_boot_states(name, rc, state, shim_off, setup):
    text = fixture("mokutil", name)
    result = SecureBoot().process([*lines(text), f"__rc={rc}"])
    assert result == {
        "state": state,
        "shim_validation_disabled": shim_off,
        "setup_mode": setup,
        "message": text.strip(),
    }


def test_secure_boot_absent_and_unknown():
    assert SecureBoot().process(["__absent"])["state"] == "absent"
    assert SecureBoot().process(["Failed to read SecureBoot", "__rc=1"])["state"] == "unknown"


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("test_key_enrolled.txt", "enrolled"),
        ("test_key_ubuntu_enrolled.txt", "enrolled"),
        ("test_key_pending.txt", "pending"),
        ("test_key_not_enrolled.txt", "not_enrolled"),
        ("test_key_blocked.txt", "blocked"),
    ],
)
@pytest.mark.parametrize("rc", [0, 1])  # exit codes flipped between mokutil releases
def test_mok_key_state_parses_text_not_exit_code(name, state, rc):
    text = fixture("mokutil", name)
    assert MokKeyState().process([*lines(text), f"__rc={rc}"]) == {
        "state": state,
        "message": text.strip(),
    }


def test_mok_key_state_markers_and_unknown():
    assert MokKeyState().process(["__absent"]) == {"state": "absent", "message": ""}
    assert MokKeyState().process(["__missing"]) == {"state": "missing", "message": ""}
    result = MokKeyState().process(["EFI variables are not supported on this system", "__rc=1"])
    assert result == {
        "state": "unknown",
        "message": "EFI variables are not supported on this system",
    }


def test_mok_key_state_command_runs_with_fake_mokutil(tmp_path):
    cert = tmp_path / "mok dir" / "it's.der"
    command = MokKeyState().command(path=str(cert))
    assert f"elif ! test -e '{tmp_path}/mok dir/it'\"'\"'s.der'; then echo __missing;" in command
    env = {"PATH": f"{tmp_path}/bin:/usr/bin:/bin"}
    (tmp_path / "bin").mkdir()
    if shutil.which("mokutil", path=env["PATH"]) is None:
        assert run_sh(command, env) == (0, ["__absent"])
    fake_tool(tmp_path / "bin", "mokutil", 'echo "$2 is not enrolled"; exit 0\n')
    assert run_sh(command, env) == (0, ["__missing"])
    cert.parent.mkdir()
    cert.write_bytes(b"0\x82")
    rc, out = run_sh(command, env)
    assert rc == 0
    assert MokKeyState().process(out) == {
        "state": "not_enrolled",
        "message": f"{cert} is not enrolled",
    }


def test_secure_boot_command_always_exits_zero(tmp_path):
    fake_tool(
        tmp_path, "mokutil", 'echo "This system doesn\'t support Secure Boot" >&2; exit 255\n'
    )
    rc, out = run_sh(SecureBoot().command(), {"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert rc == 0
    assert SecureBoot().process(out)["state"] == "unsupported"


# ---------------------------------------------------------------------------------------
# sysfs: PciGpus / KfdNodes (commands run under dash against fixture trees)
# ---------------------------------------------------------------------------------------


def sysfs_command(command: str, host: str) -> str:
    root = FIXTURES / "sysfs" / host
    assert " " not in str(root)
    return command.replace("/sys/", f"{root}/")


def run_fact(fact, host: str):
    rc, out = run_sh(sysfs_command(fact.command(), host))
    assert rc == 0
    return fact.process(out) if out else fact.default()


def amd(slot: str, device: str, pci_class: str = "0x030000", driver: str | None = "amdgpu"):
    return {"slot": slot, "vendor": "0x1002", "device": device, "class": pci_class,
            "driver": driver}  # fmt: skip


# Every display and accelerator device, whatever its vendor (the MI300X server's ASPEED BMC
# VGA too: preflight says what a host has when it has no AMD GPU); audio functions and the
# host bridge are not read.
@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("rx7900xtx", [amd("0000:03:00.0", "0x744c")]),
        ("rx9070xt_igpu",
         [amd("0000:03:00.0", "0x7550"), amd("0000:76:00.0", "0x164e", driver=None)]),
        (
            "mi300x_x8",
            [{"slot": "0000:02:00.0", "vendor": "0x1a03", "device": "0x2000",
              "class": "0x030000", "driver": "ast"}]
            + [amd(f"0000:{bus}:00.0", "0x74a1", "0x120000")
               for bus in ("1b", "3d", "4e", "5f", "9d", "bd", "cd", "dd")],
        ),
    ],
)  # fmt: skip
def test_pci_gpus_from_sysfs(host, expected):
    assert run_fact(PciGpus(), host) == expected


def test_pci_gpus_without_devices(tmp_path):
    command = PciGpus().command().replace("/sys/bus/pci/devices", str(tmp_path))
    assert run_sh(command) == (0, [])
    assert PciGpus().default() == []


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("rx7900xtx", [(1, "gfx1100", "0x744c", "0000:03:00.0", 128)]),
        (
            "rx9070xt_igpu",
            [
                (1, "gfx1201", "0x7550", "0000:03:00.0", 128),
                (2, "gfx1036", "0x164e", "0000:76:00.0", 129),
            ],
        ),
        (
            "mi300x_x8",
            [
                (node, "gfx942", "0x74a1", f"0000:{bus}:00.0", 128 + 8 * (node - 2))
                for node, bus in zip(
                    range(2, 10), ("1b", "3d", "4e", "5f", "9d", "bd", "cd", "dd"), strict=True
                )
            ],
        ),
    ],
)
def test_kfd_nodes_skip_cpu_nodes_and_decode_gfx(host, expected):
    nodes = run_fact(KfdNodes(), host)
    got = [(n["node"], n["gfx"], n["device_id"], n["slot"], n["drm_render_minor"]) for n in nodes]
    assert got == expected
    json.dumps(nodes)


def test_kfd_slots_match_pci_and_rocminfo():
    kfd = {n["slot"] for n in run_fact(KfdNodes(), "mi300x_x8")}
    pci = {g["slot"] for g in run_fact(PciGpus(), "mi300x_x8") if g["vendor"] == AMD_VENDOR}
    rocm = {"0000:" + g["pci_bdf"] for g in agents("mi300x_x8.txt", 0)["gpus"]}
    assert kfd == pci == rocm


def test_kfd_nodes_sorted_numerically_and_absent_tree(tmp_path):
    output = ["__kfd"]
    for node in (10, 2, 0):
        output += [f"__node={node}", f"gfx_target_version {90402 if node else 0}", "simd_count 4"]
    assert [n["node"] for n in KfdNodes().process(output)] == [2, 10]
    assert KfdNodes().process([]) is None
    command = KfdNodes().command().replace("/sys/class/kfd/kfd/topology/nodes", str(tmp_path / "x"))
    assert run_sh(command) == (0, [])


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


# ---------------------------------------------------------------------------------------
# DistroRelease
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("debian-12", ("debian", [], "12", "bookworm", "12.9")),
        ("debian-13", ("debian", [], "13", "trixie", "13.1")),
        ("debian-11", ("debian", [], "11", "bullseye", None)),
        ("ubuntu-22.04", ("ubuntu", ["debian"], "22.04", "jammy", "22.04.5")),
        ("ubuntu-24.04", ("ubuntu", ["debian"], "24.04", "noble", "24.04.3")),
    ],
)
def test_distro_release(name, expected):
    output = lines(fixture("os-release", name))
    companion = FIXTURES / "os-release" / f"{name}.debian_version"
    if companion.exists():
        output.append("__debian_version=" + companion.read_text().strip())
    result = DistroRelease().process(output)
    got = (
        result["id"],
        result["id_like"],
        result["version_id"],
        result["codename"],
        result["point_release"],
    )
    assert got == expected
    assert result["pretty_name"].startswith(("Debian GNU/Linux", "Ubuntu"))


def test_distro_release_without_os_release():
    assert DistroRelease().process([]) is None
    assert DistroRelease().process(["__debian_version=12.9"]) is None


def test_distro_release_command_runs_on_this_machine():
    rc, out = run_sh(DistroRelease().command())
    assert rc == 0
    if os.path.exists("/etc/os-release"):
        assert DistroRelease().process(out)["id"]


# ---------------------------------------------------------------------------------------
# apt and dpkg
# ---------------------------------------------------------------------------------------


def test_keyring_fingerprints_reads_the_file_itself(tmp_path):
    # Keys gpg made are read against gpg in test_matrix_check; here the fact's plumbing.
    fact = KeyringFingerprints()
    assert fact.process(["__missing"]) is None
    assert fact.process([]) == []  # an empty file holds no key
    assert fact.process(["not base64!"]) == []
    assert "'/etc/apt/keyrings/my keys.gpg'" in fact.command("/etc/apt/keyrings/my keys.gpg")
    assert fact.process(run_sh(fact.command(str(tmp_path / "none")))[1]) is None
    garbage = tmp_path / "garbage.gpg"
    garbage.write_bytes(bytes(range(256)) * 8)  # not OpenPGP packets: no fingerprint
    assert fact.process(run_sh(fact.command(str(garbage)))[1]) == []


# dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n' on a Debian 12 host midway
# through an interrupted install (Status-Abbrev is want, status, error flag).
DPKG_LISTING = """\
ii |curl|7.88.1-10+deb12u14
ii |libc6:amd64|2.36-9+deb12u9
ii |linux-image-6.1.0-31-amd64|6.1.128-1
ii |linux-image-amd64|6.1.128-1
iU |rocm-core|6.4.3.60403-128~22.04
iF |rocminfo|1.0.0.60403-128~22.04
iH |hipcc|1.1.1.60403-128~22.04
rc |nvidia-driver|535.216.01-1~deb12u1
un |cuda-toolkit-12-8|
pn |rocm-smi-lib|
""".splitlines()


def test_installed_packages_count_half_installed_ones_and_drop_removed_ones():
    assert InstalledPackages().process(DPKG_LISTING) == {
        "curl": "7.88.1-10+deb12u14",
        "libc6": "2.36-9+deb12u9",  # architecture qualifier dropped
        "linux-image-6.1.0-31-amd64": "6.1.128-1",
        "linux-image-amd64": "6.1.128-1",
        "rocm-core": "6.4.3.60403-128~22.04",  # unpacked
        "rocminfo": "1.0.0.60403-128~22.04",  # half-configured
        "hipcc": "1.1.1.60403-128~22.04",  # half-installed
    }
    assert InstalledPackages().default() == {}


def test_installed_packages_command_under_dash(tmp_path):
    fake_tool(tmp_path, "dpkg-query", 'printf "%s\\n" "ii |curl|7.88.1" "rc |gone|1"; exit 1\n')
    rc, out = run_sh(InstalledPackages().command(), {"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert (rc, InstalledPackages().process(out)) == (0, {"curl": "7.88.1"})
    if shutil.which("dpkg-query"):  # this machine's own listing
        packages = InstalledPackages().process(run_sh(InstalledPackages().command())[1])
        bash = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "bash"], capture_output=True,
                              text=True, check=False).stdout  # fmt: skip
        assert packages["bash"] == bash


def test_kernel_releases_from_the_image_packages():
    packages = {
        "linux-image-6.1.0-31-amd64": "6.1.128-1",
        "linux-image-6.12.38+deb12-amd64": "6.12.38-1~bpo12+1",
        "linux-image-amd64": "6.12.38-1~bpo12+1",  # meta package
        "linux-image-unsigned-6.8.0-50-generic": "6.8.0-50.51",
        "linux-image-generic-hwe-24.04": "6.14.0-37.37~24.04.1",  # meta package
        "linux-headers-6.1.0-31-amd64": "6.1.128-1",
        "curl": "7.88.1-10+deb12u14",
    }
    assert kernel_releases(packages) == [
        "6.1.0-31-amd64", "6.12.38+deb12-amd64", "6.8.0-50-generic"
    ]  # fmt: skip
    assert kernel_releases({}) == []


def test_dpkg_interrupted_command_under_dash(tmp_path):
    fake_tool(
        tmp_path,
        "dpkg-query",
        r"""printf '%s\t%s\n' 'install ok installed' curl \
'install ok half-configured' rocm-core 'install ok unpacked' rocminfo \
'deinstall ok config-files' old 'unknown ok not-installed' never
""",
    )
    fact = DpkgInterrupted()
    rc, out = run_sh(fact.command, {"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert (rc, fact.process(out)) == (0, ["half-configured rocm-core", "unpacked rocminfo"])


APT_SOURCES = {
    "sources.list": "# deb cdrom:[Debian GNU/Linux 12.9.0 _Bookworm_]/ bookworm main\n"
    "deb http://deb.debian.org/debian/ bookworm main non-free-firmware\n",
    "sources.list.d/rocm.list": "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
    "https://repo.radeon.com/rocm/apt/6.2 jammy main\n",
    "sources.list.d/amdgpu.list": "#deb [arch=amd64] https://repo.radeon.com/amdgpu/6.2/ubuntu "
    "jammy main\n",
    "sources.list.d/rocm.sources": "Types: deb\n"
    "URIs: https://repo.amd.com/rocm/packages/ubuntu2404\nSuites: noble\nComponents: main\n",
}


def etc_apt(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        (root / "apt" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "apt" / name).write_text(content)
    return root


def test_apt_source_lines_of_amds_hosts_one_line_and_deb822(tmp_path):
    etc = etc_apt(tmp_path, APT_SOURCES)
    fact = AptSourceLines()
    command = fact.command(hosts=["repo.radeon.com", "repo.amd.com"]).replace("/etc/", f"{etc}/")
    rc, out = run_sh(command)
    assert rc == 0
    assert sorted(fact.process(out)) == [
        [f"{etc}/apt/sources.list.d/rocm.list", APT_SOURCES["sources.list.d/rocm.list"].strip()],
        [f"{etc}/apt/sources.list.d/rocm.sources",
         "URIs: https://repo.amd.com/rocm/packages/ubuntu2404"],
    ]  # fmt: skip
    (tmp_path / "none").mkdir()
    assert run_sh(command.replace(str(etc), str(tmp_path / "none"))) == (0, [])
    assert fact.default() == []


DEBIAN_SOURCES_822 = """\
Types: deb deb-src
URIs: http://ftp.de.debian.org/debian/
Suites: trixie trixie-updates
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.pgp

Types: deb deb-src
URIs: http://security.debian.org/debian-security
Suites: trixie-security
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.pgp
"""
SECURITY_FIRST = """\
deb http://security.debian.org/debian-security bookworm-security main non-free-firmware
deb-src http://deb.debian.org/debian bookworm main

# bookworm-updates, to get updates before a point release is made;
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] https://mirror.example.org/debian bookworm main non-free-firmware
"""  # noqa: E501 - a sources.list line as written


@pytest.mark.parametrize(
    ("files", "mirror"),
    [
        ({"sources.list.d/debian.sources": DEBIAN_SOURCES_822}, "http://ftp.de.debian.org/debian"),
        ({"sources.list": SECURITY_FIRST}, "https://mirror.example.org/debian"),
        ({"sources.list": APT_SOURCES["sources.list"]}, "http://deb.debian.org/debian"),
        ({"sources.list.d/debian.sources": DEBIAN_SOURCES_822,
          "sources.list": "# moved to debian.sources\n"}, "http://ftp.de.debian.org/debian"),
        ({"sources.list": "deb http://archive.ubuntu.com/ubuntu noble main\n"}, None),
        ({}, None),
    ],
    ids=["deb822", "one-line with options", "one-line", "both", "ubuntu", "no sources"],
)  # fmt: skip
def test_debian_mirror_from_deb822_and_one_line_sources(tmp_path, files, mirror):
    etc = etc_apt(tmp_path, files)
    (etc / "apt").mkdir(exist_ok=True)
    fact = DebianMirror()
    rc, out = run_sh(fact.command().replace("/etc/", f"{etc}/"))
    assert rc == 0
    assert fact.process(out) == mirror


def test_group_membership_in_one_read():
    fact = GroupMembership()
    output = ["__group video", "__user alice alice video", "__nouser bob"]
    assert fact.process(output) == {
        "groups": ["video"],
        "users": {"alice": ["alice", "video"], "bob": None},
    }
    # The command runs under dash and reports this machine's root and a missing user.
    command = fact.command(groups=["root", "no-such-group"], users=["root", "no-such-user"])
    parsed = fact.process(run_sh(command)[1])
    assert parsed["groups"] == ["root"]
    assert parsed["users"]["root"][0] == "root" and parsed["users"]["no-such-user"] is None
    assert fact.default() == {"groups": [], "users": {}}


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


# ---------------------------------------------------------------------------------------
# system
# ---------------------------------------------------------------------------------------


def test_identity_architecture_wsl_and_modules_on_this_machine():
    rc, out = run_sh(Identity().command())
    assert rc == 0 and Identity().process(out)["uid"] == os.getuid()
    assert Identity().process([]) == Identity().default() == {"uid": None, "user": None}
    assert Identity().process(["1000", "admin"]) == {"uid": 1000, "user": "admin"}
    if shutil.which("dpkg"):
        assert (
            Architecture().process(run_sh(Architecture().command())[1])
            == subprocess.run(
                ["dpkg", "--print-architecture"], capture_output=True, text=True, check=False
            ).stdout.strip()
        )
    # pyinfra's own DebArch: no dpkg answers its default, None, alone (pyinfra checks for
    # the command) or surveyed (the section is empty).
    assert Architecture is DebArch and Architecture().default() is None
    survey = Survey()
    rc, out = run_sh(
        survey.command(reads=[Read("arch", Architecture)]).replace("dpkg ", "no-dpkg ")
    )
    assert rc == 0 and survey.process(out) == {"arch": None}
    assert run_sh(Wsl().command())[0] == 0
    assert Wsl().process(["interop"]) is True and Wsl().process([]) is False
    rc, out = run_sh(LoadedModules().command())
    assert rc == 0 and LoadedModules().process(out) == sorted(set(LoadedModules().process(out)))
    assert LoadedModules().process(["nvidia_uvm", "amdgpu", "", "nvidia_uvm"]) == [
        "amdgpu", "nvidia_uvm"
    ]  # fmt: skip


def test_amdgpu_module_inbox_dkms_and_absent():
    assert AmdgpuModule().process(["loaded", "initstate=live"]) == {
        "loaded": True, "version": None, "initstate": "live"
    }  # fmt: skip
    assert AmdgpuModule().process(["loaded", "version=6.12.12", "initstate=live"])["version"] == (
        "6.12.12"
    )
    assert AmdgpuModule().process([]) == AmdgpuModule().default()
    assert AmdgpuModule().default() == {"loaded": False, "version": None, "initstate": None}


def test_free_space_measures_a_missing_path_at_its_parent(tmp_path):
    fact = FreeSpace()
    missing = tmp_path / "opt" / "rocm-fleet" / "venv"
    rc, out = run_sh(fact.command([str(tmp_path), str(missing)]))
    assert rc == 0
    (here, there) = fact.process(out)
    assert here["path"] == str(tmp_path) and there["path"] == str(missing)
    assert here["mount"] == there["mount"] and here["avail"] > 0
    assert fact.process([
        "__path=/opt",
        "__path=/var/cache/apt/archives",
        "Filesystem     1024-blocks      Used Available Capacity Mounted on",
        "/dev/nvme0n1p2   479597248 120000000 335191204      27% /",
        "/dev/nvme0n1p3    98304000  90000000   8304000      92% /var",
    ]) == [
        {"path": "/opt", "mount": "/", "avail": 335191204 * 1024},
        {"path": "/var/cache/apt/archives", "mount": "/var", "avail": 8304000 * 1024},
    ]  # fmt: skip
    assert fact.command([]) == "true" and fact.default() == []
    # a mount point with a space; and df failing for one path measures none
    assert fact.process(["__path=/srv", "/dev/sdb1 100 10 90 10% /mnt/big disk"]) == [
        {"path": "/srv", "mount": "/mnt/big disk", "avail": 90 * 1024}
    ]
    assert fact.process(["__path=/a", "__path=/b", "/dev/sda1 100 10 90 10% /"]) == []


def test_reboot_required_reads_debians_files_and_our_reasons():
    output = ["__required", "__pkg=linux-image-6.12.38+deb12-amd64", "__pkg=amdgpu-dkms",
              "__reason=new driver amdgpu-dkms", "__reason=new driver amdgpu-dkms"]  # fmt: skip
    assert RebootRequired().process(output) == {
        "required": True,
        "packages": ["linux-image-6.12.38+deb12-amd64", "amdgpu-dkms"],
        "reasons": ["new driver amdgpu-dkms"],
    }
    assert RebootRequired().process([]) == RebootRequired().default()


# ---------------------------------------------------------------------------------------
# Survey: many facts in one command
# ---------------------------------------------------------------------------------------


def survey_reads(tmp_path: Path) -> list[Read]:
    pin = tmp_path / "rocm-pin-600"
    pin.write_text("Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n")
    return [
        Read("kernel", RunningKernel),
        Read("arch", Architecture),
        Read("groups", GroupMembership, {"groups": ["root"], "users": ["root", "nobody-here"]}),
        Read("dpkg", DpkgInterrupted),  # a fact whose command is a string
        Read("pin", FileDigest, {"path": str(pin)}),
        Read("missing", FileDigest, {"path": str(tmp_path / "none")}),
        Read("rocm", RocmVersion, {"rocm_path": str(tmp_path / "rocm")}),
        Read("reboot", RebootRequired),
    ]


def test_survey_answers_each_read_as_the_fact_alone_would(tmp_path):
    reads = survey_reads(tmp_path)
    fact = Survey()
    rc, out = run_sh(fact.command(reads=reads))
    assert rc == 0
    survey = fact.process(out)
    assert list(survey) == [read.key for read in reads]
    for read in reads:
        alone = read.fact()
        command = alone.command if isinstance(alone.command, str) else alone.command(**read.kwargs)
        lines = run_sh(command)[1]
        assert survey[read.key] == (alone.process(lines) if lines else alone.default()), read.key
    assert survey["groups"]["users"]["nobody-here"] is None
    assert survey["pin"]["mode"] == "644" and survey["missing"] is None
    assert repr(reads[0]) == "kernel"  # what pyinfra's debug log prints


def test_survey_gives_defaults_for_empty_sections_and_survives_a_failing_one(tmp_path):
    (tmp_path / "rocm" / ".info" / "version").mkdir(parents=True)  # cat fails: a directory
    reads = [
        Read("rocm", RocmVersion, {"rocm_path": str(tmp_path / "rocm")}),
        Read("packages", InstalledPackages),
        Read("reboot", RebootRequired),
        Read("groups", GroupMembership, {"groups": ["root"], "users": []}),
    ]
    fact = Survey()
    fact.command(reads=reads)
    assert fact.process([f"__survey_section={i}" for i in range(4)]) == {
        "rocm": None,
        "packages": {},
        "reboot": {"required": False, "packages": [], "reasons": []},
        "groups": {"groups": [], "users": {}},
    }
    rc, out = run_sh(fact.command(reads=reads))
    survey = fact.process(out)
    assert rc == 0 and survey["rocm"] is None
    assert survey["groups"] == {"groups": ["root"], "users": {}}  # the next section still ran


def test_survey_incomplete_output_raises_and_keys_are_unique(tmp_path):
    reads = survey_reads(tmp_path)
    fact = Survey()
    fact.command(reads=reads)
    with pytest.raises(FactProcessError, match="incomplete survey output"):
        fact.process(["__survey_section=0", "6.1.0-31-amd64", "__survey_section=1"])
    with pytest.raises(ValueError, match="unique"):
        Survey().command(reads=[Read("kernel", RunningKernel), Read("kernel", RunningKernel)])


# ---------------------------------------------------------------------------------------
# cache: one read between two changes
# ---------------------------------------------------------------------------------------


def test_read_fact_reuses_a_value_until_an_operation_changes_the_host():
    from pyinfra.api import Config, Inventory, State, StringCommand
    from pyinfra.api.operation import OperationMeta
    from pyinfra.api.state import StateOperationHostData
    from pyinfra.connectors.util import CommandOutput
    from pyinfra.context import ctx_host, ctx_state

    inventory = Inventory((["node"], {}))
    state = State(inventory, Config())
    host = inventory.get_host("node")
    answers = iter(["6.1.0-50-amd64", "6.12.95+deb12-amd64"])
    calls = []

    def get_fact(fact, **kwargs):
        calls.append((fact.__name__, kwargs))
        return next(answers) if fact is RunningKernel else {"mode": "644", "sha256": "0" * 64,
                                                                "mtime": 1}  # fmt: skip

    host.get_fact = get_fact
    with ctx_state.use(state), ctx_host.use(host):
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert calls == [("KernelVersion", {})]  # the second read was served from the first
        read_fact(FileDigest, path="/a")
        read_fact(FileDigest, path="/b")  # other arguments: another read
        read_fact(FileDigest, path="/a")
        assert [c[1] for c in calls[1:]] == [{"path": "/a"}, {"path": "/b"}]

        # An operation that changed the host (say, a reboot) makes the value stale.
        meta = OperationMeta("hash", True)
        state.ops[host]["hash"] = StateOperationHostData(lambda: iter(()), {}, meta)
        meta.set_complete(True, [StringCommand("reboot")], CommandOutput([]))
        assert read_fact(RunningKernel) == "6.12.95+deb12-amd64"
        assert len(calls) == 4

        # One that ran without changing anything doesn't.
        quiet = OperationMeta("quiet", False)
        state.ops[host]["quiet"] = StateOperationHostData(lambda: iter(()), {}, quiet)
        quiet.set_complete(True, [], CommandOutput([]))
        assert read_fact(RunningKernel) == "6.12.95+deb12-amd64" and len(calls) == 4

        remember_fact(RunningKernel, "7.0.0-1-amd64")  # read as part of a larger read
        assert read_fact(RunningKernel) == "7.0.0-1-amd64" and len(calls) == 4
