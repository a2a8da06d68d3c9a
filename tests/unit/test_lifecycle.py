"""Lifecycle logic without a host: which packages are AMD's, which wheels are CUDA's, how
wheels are pinned, and what an uninstall or a migration plans."""

from __future__ import annotations

from rocm_fleet.cuda import cuda_wheels
from rocm_fleet.facts import DpkgInterrupted
from rocm_fleet.matrix import release
from rocm_fleet.operations import amd_release_tags, version_matches
from rocm_fleet.pytorch import wanted_wheels

INSTALLED = {
    "rocm-core": ["6.4.3.60403-128~22.04"],
    "rocminfo": ["1.0.0.60403-128~22.04"],
    "amdgpu-dkms": ["1:6.12.12.60403-2194681.22.04"],
    "librocm-smi64-1": ["6.1.2-1"],  # Debian's own
    "curl": ["7.88.1-10+deb12u14"],
}


def test_release_moves_leave_the_driver_and_uninstall_takes_it():
    assert amd_release_tags(INSTALLED) == {"rocm-core": "60403", "rocminfo": "60403"}
    assert amd_release_tags(INSTALLED, with_driver=True) == {
        "rocm-core": "60403",
        "rocminfo": "60403",
        "amdgpu-dkms": "60403",
    }


def test_every_wheel_is_pinned_with_the_index_label():
    rel = release("6.4.3")
    assert wanted_wheels(rel.torch_builds[-1], rel.torch_index) == {
        "torch": "2.9.1+rocm6.4",
        "torchvision": "0.24.1+rocm6.4",
        "torchaudio": "2.9.1+rocm6.4",
    }
    # A companion of another build with the same public version is drift.
    assert not version_matches("0.24.1+cu128", "0.24.1+rocm6.4")
    assert not version_matches("0.20.1+rocm6.1", "0.20.1+rocm6.2")
    assert not version_matches("0.24.1", "0.24.1+rocm6.4")
    assert version_matches("0.24.1+rocm6.4", "0.24.1+rocm6.4")


def test_cuda_wheels_are_nvidias_and_non_rocm_torch():
    venv = {
        "torch": "2.9.1+cu128",
        "torchvision": "0.24.1",
        "nvidia-cublas-cu12": "12.8.4.1",
        "nvidia_cudnn_cu12": "9.10.2.21",
        "triton": "3.5.1",
        "numpy": "2.3.5",
        "pip": "23.0.1",
    }
    assert cuda_wheels(venv) == [
        "nvidia-cublas-cu12", "nvidia_cudnn_cu12", "torch", "torchvision", "triton"
    ]  # fmt: skip
    assert cuda_wheels({"torch": "2.9.1+rocm6.4", "numpy": "2.3.5"}) == []


def test_dpkg_interruption_fact():
    fact = DpkgInterrupted()
    assert fact.process([]) == []
    assert fact.process(["journal", "half-configured rocm-core", ""]) == [
        "journal",
        "half-configured rocm-core",
    ]
