"""A venv with the PyTorch ROCm wheels that match the ROCm release, from download.pytorch.org.

What must match is the index: torch X+rocmA.B from whl/rocmA.B (fact sheet §7.1). The wheels
of the classic releases' indexes bundle their own HIP runtime (torch/lib/libamdhip64.so);
the ROCm Core SDK's (rocm7.14) require it from pip instead, ``rocm[device-all,libraries]``
from the same index (``matrix.TORCH_RUNTIME``), which pip installs with them. The torch
default is the newest the matrix lists for the release; torchvision and torchaudio follow it.
Distributions of the family the release no longer wants (a torchaudio after torch 2.12, the
pip ROCm runtime after a move back to a classic release) are uninstalled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy

from rocm_fleet.model import paths
from rocm_fleet.model.matrix import TORCH_RUNTIME_WHEELS, Release
from rocm_fleet.model.sources import proxy_environment, served
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.python import pinned_wheels, venv

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config

PREREQUISITES = ["python3-venv"]
# torch and its companions, whichever index they came from.
TORCH_FAMILY = r"torch|torchvision|torchaudio"


def owned_wheels(rel: Release) -> list[str]:
    """The distributions the release's pins manage: the torch family, and the pip ROCm
    runtime unless the release's torch requires it (then pip manages its parts)."""
    return [TORCH_FAMILY] + ([] if rel.torch_runtime else [TORCH_RUNTIME_WHEELS.pattern])


@deploy("PyTorch")
def install_pytorch(config: Config) -> None:
    """The venv with ``config.torch`` (the build the model decided; the caller plans this
    only when there is one)."""
    torch = config.torch
    if torch is None:
        raise ValueError("install_pytorch needs config.torch (pytorch_install)")
    debian_packages(
        name="Install python3-venv", packages=PREREQUISITES, ledger=paths.PACKAGE_LEDGER
    )
    venv(name="Create the PyTorch venv", path=config.pytorch_venv, ledger=paths.DIRECTORY_LEDGER)
    pinned_wheels(
        name="Install the torch wheels built for the ROCm release",
        venv_path=config.pytorch_venv,
        index_url=served(torch.index_url, config.mirror),
        wanted=dict(torch.wanted),
        requires=list(torch.requires),
        owned=owned_wheels(config.release),
        proxy=proxy_environment(config),
    )


@deploy("Remove PyTorch")
def remove_pytorch(config: Config) -> None:
    venv(
        name="Remove the PyTorch venv and the directories made for it",
        path=config.pytorch_venv,
        ledger=paths.DIRECTORY_LEDGER,
        present=False,
    )
