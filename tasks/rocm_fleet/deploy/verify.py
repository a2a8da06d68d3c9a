"""Proof that the node works, checked last; a mismatch fails the host."""

from pyinfra.api import deploy

from rocm_fleet.model.config import Config
from rocm_fleet.operations.gpu import gpu_verified


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
    """What the GPU check covers, as text."""
    rel = config.release
    lines = [f"rocm {rel.version} ({rel.stream.name}, {rel.rocminfo})"]
    if config.torch is not None:
        lines.append("torch " + " ".join(config.torch.requirements()))
    return "\n".join(lines) + "\n"
