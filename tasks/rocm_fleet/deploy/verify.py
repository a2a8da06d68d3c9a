"""Proof that the node works: rocminfo sees the expected GPUs, torch sees them and computes.

The checks run when the deploy executes, after everything else, on facts read then; a
mismatch fails the host with what was expected and what was found. Planning (and --dry)
never fails here, because before the install rocminfo and torch don't exist yet. A passed
check is remembered until a reboot or until what it checked changes (release, wheels,
kernel, GPUs), so a converged run doesn't import torch on every host again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy

from rocm_fleet.operations.gpu import gpu_verified

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@deploy("Verify")
def verify_node(config: Config) -> None:
    gpu_verified(
        name="Check rocminfo and torch see the expected GPUs",
        rocminfo=config.release.rocminfo,
        expected_gfx=config.expected_gfx_list,
        expected_count=config.expected_gpu_count,
        python=config.venv_python if config.torch else None,
        installed=installed(config),
    )


def installed(config: Config) -> str:
    """What the deploy installs that the GPU check covers: the release, named with its
    stream and the rocminfo the check runs, and the wheels (with the pip ROCm runtime a
    Core SDK torch requires)."""
    rel = config.release
    lines = [f"rocm {rel.version} ({rel.stream.name}, {rel.rocminfo})"]
    if config.torch is not None:
        lines.append("torch " + " ".join(config.torch.requirements()))
    return "\n".join(lines) + "\n"
