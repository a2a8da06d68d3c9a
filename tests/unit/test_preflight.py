"""Preflight: the facts it reads (run for real under dash with fake tools) and its checks."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.facts import NvidiaStack

DASH = shutil.which("dash") or shutil.which("sh")


def run_sh(command: str, path: Path | None = None) -> tuple[int, list[str]]:
    env = {"PATH": f"{path}:/usr/bin:/bin" if path else "/usr/bin:/bin"}
    proc = subprocess.run(
        [DASH, "-c", command], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    return proc.returncode, proc.stdout.splitlines()


def fake_tool(directory: Path, name: str, script: str) -> None:
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


# --- NvidiaStack ----------------------------------------------------------------------------


def test_nvidia_stack_lists_installed_driver_and_cuda_packages_only():
    output = [
        "pkg ii  nvidia-driver",
        "pkg ii  libcuda1:amd64",
        "pkg iU  nvidia-kernel-dkms",  # unpacked, not configured: still there
        "pkg rc  nvidia-driver-535",  # removed, config files left: gone
        "pkg un  cuda-toolkit-12-8",  # known to dpkg, never installed
        "pkg ii  libnvidia-egl-wayland1",  # Mesa desktops have it: not NVIDIA's driver
        "pkg ii  nvidia-texture-tools",
        "mod nvidia_uvm",
        "mod nvidia",
    ]
    assert NvidiaStack().process(output) == {
        "packages": ["libcuda1", "nvidia-driver", "nvidia-kernel-dkms"],
        "modules": ["nvidia", "nvidia_uvm"],
    }


def test_nvidia_stack_command_passes_patterns_and_always_exits_zero(tmp_path):
    fake_tool(
        tmp_path,
        "dpkg-query",
        'for a in "$@"; do echo "arg $a"; done\necho "ii  libcudnn9-cuda-12"\nexit 1\n',
    )
    command = NvidiaStack().command().replace("-f='pkg ${db:Status-Abbrev} ${Package}\\n'", "")
    rc, out = run_sh(command, tmp_path)
    assert rc == 0
    assert "arg nvidia-*" in out and "arg libnccl*" in out and "arg cuda" in out


def test_nvidia_stack_on_this_machine_runs_under_dash():
    rc, out = run_sh(NvidiaStack().command())
    assert rc == 0
    result = NvidiaStack().process(out)
    assert set(result) == {"packages", "modules"}


# --- NodeSurvey -----------------------------------------------------------------------------


def test_node_survey_runs_read_only_under_dash_on_this_machine(tmp_path):
    from rocm_fleet.facts import NodeSurvey

    fact = NodeSurvey()
    command = fact.command(
        str(tmp_path / "venv"), ["root", "no-such-user"], ["libc6"], ["/opt/x/y"]
    )
    rc, out = run_sh(command)
    assert rc == 0
    survey = fact.process(out)
    assert survey["uid"] is not None and survey["distro"]["id"]
    assert survey["groups"]["no-such-user"] is None
    assert survey["torch"] is None  # no venv there
    assert survey["disk"][0]["path"] == "/opt/x/y" and survey["disk"][0]["avail"] > 0


@pytest.mark.parametrize(
    ("message", "need"),
    [
        ("After this operation, 2,345 MB of additional disk space will be used.", 2345 * 10**6),
        ("0 upgraded, 3 newly installed, 0 to remove. "
         "After this operation, 12.5 kB of additional disk space will be used.", 12500),
        ("0 upgraded, 0 newly installed, 0 to remove and 3 not upgraded.", 0),
        ("E: Unable to locate package rocm-hip-runtime", None),
        ("", None),
    ],
)  # fmt: skip
def test_apt_need_parses_apts_summary(message, need):
    from rocm_fleet.facts import _apt_need

    assert _apt_need(message) == need


def test_node_survey_reads_torch_versions_from_files(tmp_path):
    """dist-info names and torch/version.py: no Python runs, torch is never imported."""
    from rocm_fleet.facts import NodeSurvey

    site = tmp_path / "venv/lib/python3.11/site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch/version.py").write_text(
        "from typing import Optional\n__version__ = '2.9.1+cu128'\n"
        "cuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n"
    )
    (site / "torch-2.9.1+cu128.dist-info").mkdir()
    (site / "torchvision-0.24.1+cu128.dist-info").mkdir()
    fact = NodeSurvey()
    rc, out = run_sh(fact.command(str(tmp_path / "venv")))
    assert rc == 0
    torch = fact.process(out)["torch"]
    assert torch == {"torch": "2.9.1+cu128", "torchvision": "0.24.1+cu128", "torchaudio": None,
                     "hip": None, "cuda": "12.8", "error": None}  # fmt: skip
    assert fact.process(run_sh(fact.command(str(tmp_path / "none")))[1])["torch"] is None


def test_node_survey_skips_apt_sizing_when_the_release_is_installed():
    """Sizing loads apt's whole cache; a host with every package of the release needs none.
    Run under dash against this machine's dpkg: bash is installed, no-such-package isn't."""
    from rocm_fleet.facts import NodeSurvey

    fact = NodeSurvey()
    version = run_sh("dpkg-query -W -f='${Version}' bash")[1][0]
    tag = version.split("-")[0].rsplit(".", 1)[-1]  # a tag that matches bash's version
    other_release = fact.command("/none", packages=["bash"], release_tag="99999")
    assert (
        fact.process(run_sh(other_release)[1])["apt_message"]
        != "already installed from this release"
    )
    assert f".{tag}-" in version
    command = fact.command("/none", packages=["bash"], release_tag=tag)
    assert fact.process(run_sh(command)[1])["apt_need"] == 0


def test_node_survey_nvidia_from_the_dpkg_listing():
    from rocm_fleet.facts import _nvidia

    packages = {"nvidia-driver": "1", "libnvidia-egl-wayland1": "1", "curl": "1", "cuda": "1"}
    assert _nvidia(packages, ["nvidia_uvm", "ext4"]) == {
        "packages": ["cuda", "nvidia-driver"], "modules": ["nvidia_uvm"]
    }  # fmt: skip


# --- findings ---------------------------------------------------------------------------------


def config(**data):
    from rocm_fleet.config import load_config

    return load_config({"rocm_version": "6.4.3", **data}, "node")


def check(data=None, **survey):
    from rocm_fleet.preflight import findings
    from unit.surveys import fresh_survey

    return findings(config(**(data or {})), fresh_survey(**survey))


DEBIAN_11 = {"ID": "debian", "VERSION_ID": "11", "VERSION_CODENAME": "bullseye"}
MINT_22 = {"ID": "linuxmint", "ID_LIKE": "ubuntu debian", "VERSION_ID": "22"}
UBUNTU_2404 = {"ID": "ubuntu", "VERSION_ID": "24.04"}
MI300X = {"slot": "0000:1b:00.0", "device": "0x74a1", "class": "0x120000", "driver": "amdgpu"}


def test_fresh_debian_12_with_an_rx7900xtx_passes():
    result = check({"expected_gfx": "gfx1100", "expected_gpu_count": 1})
    assert result.problems == [] and result.row.key == "debian 12"
    assert result.warnings == ["AMD lists debian 12 for Instinct only; gfx1100 on it is unofficial"]


@pytest.mark.parametrize(
    ("data", "survey", "message"),
    [
        ({}, {"arch": "arm64"}, "architecture is arm64; AMD publishes ROCm for amd64 only"),
        ({}, {"os_release": DEBIAN_11}, "debian 11 is not supported"),
        ({}, {"os_release": MINT_22}, "linuxmint 22 is not supported"),
        ({}, {"pci": []}, "no AMD GPU found"),
        ({"expected_gfx": "gfx942"}, {}, "expected at least 1 x gfx942, found 1 x gfx1100"),
        ({"expected_gfx": "gfx942", "expected_gpu_count": 8}, {"pci": [MI300X]},
         "too few GPUs: expected 8 x gfx942, found 1"),
        ({}, {"wsl": True}, "this is WSL"),
        ({}, {"uid": 1000, "user": "admin"}, "connected as admin (uid 1000), not root"),
        ({}, {"kernel": "5.10.0-30-amd64"}, "kernel 5.10.0-30-amd64 is older than 6.1"),
        ({}, {"nvidia": {"packages": ["libcuda1", "nvidia-driver"], "modules": ["nvidia"]}},
         "NVIDIA driver/CUDA stack installed (packages: libcuda1, nvidia-driver; loaded "
         "modules: nvidia): set migrate_from_cuda: true"),
        ({}, {"packages": {"rocminfo": "5.2.3-2", "curl": "7.88.1"}},
         "the distribution's own ROCm packages are installed (rocminfo 5.2.3-2)"),
        ({}, {"sources": [["/etc/apt/sources.list.d/amdgpu-rocm.list",
                           "deb https://repo.radeon.com/rocm/apt/6.2 jammy main"]]},
         "apt sources of another ROCm release: /etc/apt/sources.list.d/amdgpu-rocm.list (6.2)"),
        ({}, {"torch": {"torch": "2.9.1+cu128", "hip": None, "cuda": "12.8"}},
         "/opt/rocm-fleet/venv holds a CUDA torch (2.9.1+cu128)"),
        ({}, {"torch": {"torch": "2.9.1", "hip": None, "cuda": None}},
         "holds a CPU torch (2.9.1)"),
        ({}, {"disk": [{"path": "/opt", "mount": "/opt", "avail": 64 * 2**20}]},
         "not enough free space on /opt (for /opt): 0.07 GB free, 10.00 GB needed"),
    ],
)  # fmt: skip
def test_each_problem_names_itself_and_its_fix(data, survey, message):
    from rocm_fleet.preflight import findings
    from unit.surveys import fresh_survey

    os_release = survey.pop("os_release", None)
    result = findings(config(**data), fresh_survey(os_release, **survey))
    assert result.row is None
    assert any(message in problem for problem in result.problems), result.problems


def test_gpu_less_host_is_fine_when_the_inventory_says_so():
    assert check({"expected_gpu_count": 0, "pytorch_install": False}, pci=[]).problems == []


def test_kfd_topology_wins_over_the_pci_table():
    kfd = [{"node": 1, "gfx": "gfx1101", "device_id": "0x747e", "slot": "0000:03:00.0"}]
    result = check({"expected_gfx": "gfx1100"}, kfd=kfd)
    assert "found 1 x gfx1101" in result.problems[0]


def test_unknown_amd_device_is_named_by_its_id():
    odd = {"slot": "0000:03:00.0", "device": "0x1234", "class": "0x030000", "driver": None}
    result = check({"expected_gfx": "gfx1100"}, pci=[odd])
    assert "found 1 x unknown AMD device 0x1234" in result.problems[0]


def test_distro_override_deploys_an_unknown_distro_with_a_warning():
    from rocm_fleet.preflight import findings
    from unit.surveys import fresh_survey

    result = findings(config(rocm_distro_override="ubuntu 24.04"), fresh_survey(MINT_22))
    assert result.problems == [] and result.row.suite == "noble"
    assert "deploying it as ubuntu 24.04 (rocm_distro_override): unofficial" in result.warnings[0]


def test_apt_figure_replaces_the_floor_once_apt_can_size_the_packages():
    small = [{"path": "/opt", "mount": "/", "avail": 3 * 10**9}]
    assert check(disk=small, apt_need=2 * 10**9).problems == []
    assert "4.00 GB needed (what apt says" in check(disk=small, apt_need=4 * 10**9).problems[0]


def test_our_own_source_of_another_release_is_not_a_conflict():
    ours = [
        ["/etc/apt/sources.list.d/rocm.list", "deb https://repo.radeon.com/rocm/apt/6.2 jammy main"]
    ]
    assert check(sources=ours).problems == []


def test_amd_packages_and_a_rocm_torch_are_not_conflicts():
    packages = {"rocminfo": "1.0.0.60403-128~22.04", "rocm-core": "6.4.3.60403-128~22.04"}
    torch = {"torch": "2.9.1+rocm6.4", "hip": "6.4.43482", "cuda": None}
    assert check(packages=packages, torch=torch).problems == []


def test_migrate_from_cuda_turns_the_nvidia_stack_into_a_warning():
    from rocm_fleet.config import Config
    from rocm_fleet.preflight import findings
    from unit.surveys import fresh_survey

    base = config()
    migrating = Config({**base.values, "migrate_from_cuda": True}, base.release, base.torch_build)
    survey = fresh_survey(nvidia={"packages": ["nvidia-driver"], "modules": []})
    result = findings(migrating, survey)
    assert result.problems == [] and "migrate_from_cuda" in result.warnings[-1]


def test_pci_table_maps_the_issue_examples():
    from rocm_fleet.pci_ids import lookup

    assert lookup("0x744C").gfx == "gfx1100" and "Navi 31" in lookup("744c").name
    assert lookup("0x74a1").gfx == "gfx942" and "MI300X" in lookup("0x74a1").name
    assert lookup("0xffff") is None
