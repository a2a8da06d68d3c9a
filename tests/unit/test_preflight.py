"""Preflight: the facts it reads (run for real under dash with fake tools) and its checks."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

from tasks.facts import NvidiaStack

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
