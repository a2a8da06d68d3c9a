"""A venv with the PyTorch ROCm wheels that match the ROCm release, from download.pytorch.org.

The wheels bundle their own HIP runtime (torch/lib/libamdhip64.so), so what must match is the
index: torch X+rocmA.B from whl/rocmA.B (fact sheet §7.1). The torch default is the newest the
matrix lists for the release; torchvision and torchaudio follow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy

from rocm_fleet import paths
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.python import pinned_wheels, venv
from rocm_fleet.sources import proxy_environment, served, wanted_wheels

if TYPE_CHECKING:
    from rocm_fleet.config import Config

PREREQUISITES = ["python3-venv"]


@deploy("PyTorch")
def install_pytorch(config: Config) -> None:
    debian_packages(
        name="Install python3-venv", packages=PREREQUISITES, ledger=paths.PACKAGE_LEDGER
    )
    venv(name="Create the PyTorch venv", path=config.pytorch_venv, ledger=paths.DIRECTORY_LEDGER)
    if config.torch_build is None or config.release.torch_index is None:
        return  # load_config refuses pytorch_install for a release without an index
    pinned_wheels(
        name="Install the torch wheels built for the ROCm release",
        venv_path=config.pytorch_venv,
        index_url=served(config.torch_index_url, config.mirror),
        wanted=wanted_wheels(config.torch_build, config.release.torch_index),
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
