"""Unit tests for rocm_fleet.facts: fixture outputs through process(), and the commands themselves.

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

from rocm_fleet.facts import (
    DistroRelease,
    KfdNodes,
    MokKeyState,
    PciGpus,
    PythonDistVersions,
    RocmAgents,
    RocmVersion,
    SecureBoot,
    TorchInfo,
    gfx_from_target_version,
)

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


def test_rocminfo_command_prefers_opt_rocm_and_always_exits_zero(tmp_path):
    command = RocmAgents().command()
    assert command.startswith("if [ -x /opt/rocm/bin/rocminfo ]; then R=/opt/rocm/bin/rocminfo;")
    assert "command -v rocminfo" in command
    # run it: the host has no /opt/rocm here, so only PATH counts
    if Path("/opt/rocm/bin/rocminfo").exists():
        pytest.skip("a real rocminfo is installed on this machine")
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    assert run_sh(command, env) == (0, ["__absent"])
    fake_tool(tmp_path, "rocminfo", 'cat "$FIXTURE"; exit 1\n')
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
    assert RocmVersion().command() == (
        "! test -e /opt/rocm/.info/version || cat /opt/rocm/.info/version"
    )
    odd = tmp_path / "rocm 6.4 's"
    assert RocmVersion().command(rocm_path=str(odd) + "/") == (
        f"! test -e '{tmp_path}/rocm 6.4 '\"'\"'s/.info/version' || "
        f"cat '{tmp_path}/rocm 6.4 '\"'\"'s/.info/version'"
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


def test_python_dist_versions_keeps_local_version_labels():
    output = [
        '__dists_json={"torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+rocm6.4", '
        '"torchaudio": null}',
        "__rc=0",
    ]
    assert PythonDistVersions().process(output) == {
        "torch": "2.9.1+rocm6.4",
        "torchvision": "0.24.1+rocm6.4",
        "torchaudio": None,
    }
    assert PythonDistVersions().process(["__absent"]) is None


def test_python_dist_versions_garbage_raises():
    with pytest.raises(FactProcessError):
        PythonDistVersions().process(["SyntaxError: invalid syntax", "__rc=1"])


def test_python_dist_versions_command_quotes_python_and_names():
    command = PythonDistVersions().command(python=ODD_PATH, names=["torch", "we'ird name"])
    assert "'/opt/my venv/it'\"'\"'s $HOME/bin/python'" in command
    assert command.split(" </dev/null")[0].endswith(" torch 'we'\"'\"'ird name'")
    with pytest.raises(TypeError):
        PythonDistVersions().command(python=ODD_PATH, names="torch")


def test_python_dist_versions_without_names_lists_every_distribution():
    import subprocess
    import sys

    fact = PythonDistVersions()
    run = subprocess.run(["dash", "-c", fact.command(python=sys.executable)],
                         capture_output=True, text=True)  # fmt: skip
    everything = fact.process(run.stdout.splitlines())
    assert everything["pytest"] == pytest.__version__
    assert everything["pyinfra"].startswith("3.")


@pytest.mark.skipif(not shutil.which("python3"), reason="needs python3")
def test_python_dist_versions_runs_against_a_real_interpreter(tmp_path):
    command = PythonDistVersions().command(
        python=shutil.which("python3"), names=["pip", "surely-not-installed-dist"]
    )
    rc, out = run_sh(command)
    result = PythonDistVersions().process(out)
    assert rc == 0
    assert result["surely-not-installed-dist"] is None
    assert set(result) == {"pip", "surely-not-installed-dist"}


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


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (
            "rx7900xtx",
            [{"slot": "0000:03:00.0", "device": "0x744c", "class": "0x030000", "driver": "amdgpu"}],
        ),
        (
            "rx9070xt_igpu",
            [
                {
                    "slot": "0000:03:00.0",
                    "device": "0x7550",
                    "class": "0x030000",
                    "driver": "amdgpu",
                },
                {"slot": "0000:76:00.0", "device": "0x164e", "class": "0x030000", "driver": None},
            ],
        ),
        (
            "mi300x_x8",
            [
                {
                    "slot": f"0000:{bus}:00.0",
                    "device": "0x74a1",
                    "class": "0x120000",
                    "driver": "amdgpu",
                }
                for bus in ("1b", "3d", "4e", "5f", "9d", "bd", "cd", "dd")
            ],
        ),
    ],
)
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
    pci = {g["slot"] for g in run_fact(PciGpus(), "mi300x_x8")}
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
    for fact in (PciGpus(), KfdNodes(), RocmAgents(), SecureBoot(), DistroRelease()):
        proc = subprocess.run(
            ["dash", "-n", "-c", fact.command()], capture_output=True, check=False
        )
        assert proc.returncode == 0, proc.stderr
    for fact, kwargs in (
        (RocmVersion(), {"rocm_path": "/opt/rocm"}),
        (MokKeyState(), {"path": ODD_PATH}),
        (TorchInfo(), {"python": ODD_PATH}),
        (PythonDistVersions(), {"python": ODD_PATH, "names": ["torch"]}),
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


# --- state facts behind tasks.operations ------------------------------------------------

GPG_COLONS = """\
pub:-:4096:1:9386B48A1A693C5C:1471986011:::-:::scSC::::::23::0:
fpr:::::::::CA8BB4727A47B4D09B4EE8969386B48A1A693C5C:
uid:-::::1471986011::2D7C1A2B::James Adrian Edwards (ROCm Release Manager)::::::::::0:
sub:-:4096:1:1C4B6C0F6C2B0B7E:1471986011::::::e::::::23:
fpr:::::::::5C1D1AF1AF1B6B0C6B7E0D8E1C4B6C0F6C2B0B7E:
""".splitlines()


def test_keyring_fingerprints_keep_primary_keys_only():
    from rocm_fleet.facts import KeyringFingerprints

    fact = KeyringFingerprints()
    assert fact.process(GPG_COLONS) == ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"]
    assert fact.process(["__missing"]) is None
    assert fact.process([]) == []  # present but not a keyring gpg can read
    assert "'/etc/apt/keyrings/my keys.gpg'" in fact.command("/etc/apt/keyrings/my keys.gpg")


def test_stale_against():
    from rocm_fleet.facts import StaleAgainst

    fact = StaleAgainst()
    command = fact.command(stamp="/var/lib/x.stamp", inputs=["/etc/a", "/etc/b c"])
    assert "test /etc/a -nt /var/lib/x.stamp" in command
    assert "test '/etc/b c' -nt /var/lib/x.stamp" in command
    assert fact.process(["stale"]) is True and fact.process(["fresh"]) is False


def test_group_membership_in_one_read():
    import subprocess

    from rocm_fleet.facts import GroupMembership

    fact = GroupMembership()
    output = ["__group video", "__user alice alice video", "__nouser bob"]
    assert fact.process(output) == {
        "groups": ["video"],
        "users": {"alice": ["alice", "video"], "bob": None},
    }
    # The command runs under dash and reports this machine's root and a missing user.
    command = fact.command(groups=["root", "no-such-group"], users=["root", "no-such-user"])
    lines = subprocess.run(["dash", "-c", command], capture_output=True, text=True).stdout
    parsed = fact.process(lines.splitlines())
    assert parsed["groups"] == ["root"]
    assert parsed["users"]["root"][0] == "root" and parsed["users"]["no-such-user"] is None


def test_file_digest_reads_mode_and_sha256(tmp_path):
    import hashlib
    import subprocess

    from rocm_fleet.facts import FileDigest

    path = tmp_path / "rocm pin"
    path.write_text("Package: *\n")
    path.chmod(0o640)
    fact = FileDigest()
    run = subprocess.run(["dash", "-c", fact.command(str(path))], capture_output=True, text=True)
    assert fact.process(run.stdout.splitlines()) == {
        "mode": "640",
        "sha256": hashlib.sha256(b"Package: *\n").hexdigest(),
    }
    missing = subprocess.run(
        ["dash", "-c", fact.command(str(tmp_path / "none"))], capture_output=True, text=True
    )
    assert fact.process(missing.stdout.splitlines()) is None


def test_read_fact_reuses_a_value_until_an_operation_changes_the_host():
    from pyinfra.api import Config, Inventory, State, StringCommand
    from pyinfra.api.operation import OperationMeta
    from pyinfra.api.state import StateOperationHostData
    from pyinfra.connectors.util import CommandOutput
    from pyinfra.context import ctx_host, ctx_state

    from rocm_fleet.facts import RunningKernel, read_fact, remember_fact

    inventory = Inventory((["node"], {}))
    state = State(inventory, Config())
    host = inventory.get_host("node")
    answers = iter(["6.1.0-50-amd64", "6.12.95+deb12-amd64"])
    calls = []

    def get_fact(fact, **kwargs):
        calls.append(fact.__name__)
        return next(answers)

    host.get_fact = get_fact
    with ctx_state.use(state), ctx_host.use(host):
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert read_fact(RunningKernel) == "6.1.0-50-amd64"
        assert calls == ["RunningKernel"]  # the second read was served from the first

        # An operation that changed the host (say, a reboot) makes the value stale.
        meta = OperationMeta("hash", True)
        state.ops[host]["hash"] = StateOperationHostData(lambda: iter(()), {}, meta)
        meta.set_complete(True, [StringCommand("reboot")], CommandOutput([]))
        assert read_fact(RunningKernel) == "6.12.95+deb12-amd64"
        assert calls == ["RunningKernel", "RunningKernel"]

        remember_fact(RunningKernel, "7.0.0-1-amd64")  # read as part of a larger read
        assert read_fact(RunningKernel) == "7.0.0-1-amd64" and len(calls) == 2
