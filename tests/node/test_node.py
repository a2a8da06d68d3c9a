"""What a converged ROCm + PyTorch node looks like, checked from outside with testinfra.

Users run these against their real nodes (see conftest.py); the e2e suite runs them
against the lab fleet. Parsing here is deliberately independent of rocm_fleet.facts.
"""

from __future__ import annotations

import json
import re

import pytest

from rocm_fleet.matrix import distro
from rocm_fleet.paths import ROCM_KEYRING, ROCM_PIN, ROCM_ROOT, ROCM_SOURCE, ROCM_VERSION_FILE

ROCMINFO = f"{ROCM_ROOT}/bin/rocminfo"

TORCH_PROBE = r"""
import json, torch
out = {"version": torch.__version__, "hip": torch.version.hip,
       "available": torch.cuda.is_available(), "count": torch.cuda.device_count()}
out["archs"] = [torch.cuda.get_device_properties(i).gcnArchName.split(":")[0]
                for i in range(out["count"])]
if out["available"]:
    a = torch.ones(32, 32, device="cuda")
    out["matmul"] = (a @ a).sum().item()
print(json.dumps(out))
"""


def test_rocm_source_uses_keyring_and_suite(host, node):
    row = distro(host.system_info.distribution, host.system_info.release)
    assert row is not None, f"{host.system_info.distribution} {host.system_info.release}"
    source = host.file(ROCM_SOURCE)
    assert source.is_file, f"{ROCM_SOURCE} is missing: the ROCm apt source was not written"
    line = f"signed-by={ROCM_KEYRING}] "
    assert line in source.content_string
    assert f"/rocm/apt/{node.release.apt_path} {row.suite} main" in source.content_string
    assert host.file(ROCM_KEYRING).is_file


def test_pin_prefers_repo_radeon_com(host):
    assert host.file(ROCM_PIN).is_file, f"{ROCM_PIN} is missing: Debian's ROCm packages win"
    pin = host.file(ROCM_PIN).content_string
    assert "Pin: release o=repo.radeon.com" in pin
    assert "Pin-Priority: 600" in pin


def test_rocm_packages_come_from_the_release(host, node):
    tag = node.release.numeric_tag
    for package in [*node.rocm_packages, "rocminfo", "rocm-core"]:
        pkg = host.package(package)
        assert pkg.is_installed, package
        assert f".{tag}-" in pkg.version, f"{package} {pkg.version} is not ROCm {tag}"
    assert host.file(ROCM_VERSION_FILE).is_file, f"{ROCM_VERSION_FILE} is missing"
    version = host.file(ROCM_VERSION_FILE).content_string.strip()
    assert version.startswith(node.release.version + "-"), version


def test_users_can_reach_the_gpu(host, node):
    if not node.rocm_users:
        pytest.skip("no rocm_users to check")
    for user in node.rocm_users:
        groups = host.user(user).groups
        assert "video" in groups and "render" in groups, (user, groups)


def test_rocminfo_reports_expected_gpus(host, node):
    if node.expected_gpu_count == 0:
        pytest.skip("GPU-less host by configuration")
    assert host.file(ROCMINFO).exists, f"{ROCMINFO} is missing: AMD's rocminfo is not installed"
    out = host.check_output(ROCMINFO)
    agents = re.findall(r"^\s+Name:\s+(gfx[0-9a-f]+)\s*$", out, re.M)
    assert agents, out
    expected = node.expected_gfx_list or agents
    matching = [a for a in agents if a in expected]
    assert matching, f"expected {expected}, rocminfo lists {agents}"
    if node.expected_gpu_count is not None:
        assert len(matching) == node.expected_gpu_count


def test_torch_is_the_rocm_build_and_sees_the_gpus(host, node):
    if not node.pytorch_install:
        pytest.skip("pytorch_install is false")
    python = node.venv_python
    assert host.file(python).exists, f"{python} is missing: the PyTorch venv was not created"
    info = json.loads(host.check_output("%s -c %s", python, TORCH_PROBE))
    assert info["version"] == f"{node.torch_build.torch}+{node.release.torch_index}"
    assert info["hip"], "torch.version.hip is empty: not a ROCm build"
    if node.expected_gpu_count == 0:
        return
    assert info["available"] is True
    assert info["count"] >= 1
    for gfx in node.expected_gfx_list:
        assert gfx in info["archs"], info["archs"]
    assert info["matmul"] == 32 * 32 * 32
