"""Lifecycle logic without a host: how wheels are pinned and which ones a move uninstalls,
which wheels are CUDA's, and dpkg's interruption fact."""

from __future__ import annotations

from rocm_fleet.facts.apt import DpkgInterrupted
from rocm_fleet.matrix import TORCH_RUNTIME_WHEELS, release
from rocm_fleet.operations.python import cuda_wheels, requirement_met, version_matches
from rocm_fleet.pytorch import owned_wheels, wanted_wheels


def test_every_wheel_is_pinned_with_the_index_label():
    rel = release("6.4.3")
    assert wanted_wheels(rel.torch_builds[-1], rel.torch_index) == {
        "torch": "2.9.1+rocm6.4",
        "torchvision": "0.24.1+rocm6.4",
        "torchaudio": "2.9.1+rocm6.4",
    }
    core = release("7.14.1")
    assert wanted_wheels(core.torch_builds[-1], core.torch_index) == {
        "torch": "2.14.1+rocm7.14",
        "torchvision": "0.29.1+rocm7.14",
    }
    # A companion of another build with the same public version is drift.
    assert not version_matches("0.24.1+cu128", "0.24.1+rocm6.4")
    assert not version_matches("0.20.1+rocm6.1", "0.20.1+rocm6.2")
    assert not version_matches("0.24.1", "0.24.1+rocm6.4")
    assert version_matches("0.24.1+rocm6.4", "0.24.1+rocm6.4")


def test_the_pip_runtime_requirement_is_met_by_any_matching_version():
    requirement = release("7.14.0").torch_runtime
    assert requirement_met({"rocm": "7.14.0.post1"}, requirement)
    assert requirement_met({"rocm": "7.14.2"}, requirement)
    assert not requirement_met({"rocm": "7.15.0"}, requirement)
    assert not requirement_met({"rocm-sdk-core": "7.14.0"}, requirement)
    assert not requirement_met({"rocm": "not-a-version"}, requirement)


def test_a_bundling_release_owns_the_pip_runtime_a_core_sdk_one_leaves_to_pip():
    assert owned_wheels(release("7.2.1"))[1] == TORCH_RUNTIME_WHEELS.pattern
    assert owned_wheels(release("7.14.1")) == ["torch|torchvision|torchaudio"]


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
        "nvidia-cublas-cu12", "nvidia-cudnn-cu12", "torch", "torchvision", "triton"
    ]  # fmt: skip
    assert cuda_wheels({"torch": "2.9.1+rocm6.4", "numpy": "2.3.5"}) == []


def test_dpkg_interruption_fact():
    fact = DpkgInterrupted()
    assert fact.process([]) == []
    assert fact.process(["journal", "half-configured rocm-core", ""]) == [
        "journal",
        "half-configured rocm-core",
    ]
