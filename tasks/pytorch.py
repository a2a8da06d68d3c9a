"""A venv with the PyTorch ROCm wheels that match the ROCm release, from download.pytorch.org.

The wheels bundle their own HIP runtime (torch/lib/libamdhip64.so), so what must match is the
index: torch X+rocmA.B from whl/rocmA.B (fact sheet §7.1). The torch default is the newest the
matrix lists for the release; torchvision and torchaudio follow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.operations import files

from tasks import settings
from tasks.matrix import PYTORCH_INDEX_BASE_URL, TorchBuild
from tasks.operations import debian_packages, pinned_wheels, recorded_directories_absent, venv
from tasks.repository import DIRECTORY_LEDGER, PACKAGE_LEDGER

if TYPE_CHECKING:
    from tasks.config import Config

PREREQUISITES = ["python3-venv"]

SETTINGS = (
    settings.Setting(
        "pytorch_install", True, "Install the PyTorch venv (false: ROCm only)", settings.boolean,
    ),
    settings.Setting(
        "pytorch_venv", "/opt/rocm-fleet/venv", "Path of the venv holding torch",
        settings.absolute_path,
    ),
    settings.Setting(
        "pytorch_index_base_url", PYTORCH_INDEX_BASE_URL,
        "Base of the wheel indexes; `/rocmX.Y` from the matrix is appended", settings.http_url,
    ),
    settings.Setting(
        "torch_version", None,
        "The torch version, e.g. `2.9.1`; default: the newest the matrix lists for `rocm_version`",
        settings.optional(settings.string),
    ),
)  # fmt: skip


def venv_python(config: Config) -> str:
    return f"{config.pytorch_venv.rstrip('/')}/bin/python"


def wanted_wheels(build: TorchBuild, torch_index: str) -> dict[str, str]:
    """Each wheel pinned with the index's local label (``0.24.1+rocm6.4``).

    Pinning the companions by public version alone would keep a torchvision of another
    build in place whenever two indexes publish the same version (torchvision 0.20.1 is on
    rocm6.1 and rocm6.2; PyPI's CUDA 0.24.1 after a migration), leaving a mix in the venv.
    """
    wanted = {"torch": build.torch, "torchvision": build.torchvision}
    if build.torchaudio:
        wanted["torchaudio"] = build.torchaudio
    return {name: f"{version}+{torch_index}" for name, version in wanted.items()}


@deploy("PyTorch")
def install_pytorch(config: Config) -> None:
    debian_packages(name="Install python3-venv", packages=PREREQUISITES, ledger=PACKAGE_LEDGER)
    venv(name="Create the PyTorch venv", path=config.pytorch_venv, ledger=DIRECTORY_LEDGER)
    if config.torch_build is None or config.release.torch_index is None:
        return  # load_config refuses pytorch_install for a release without an index
    wanted = wanted_wheels(config.torch_build, config.release.torch_index)
    pinned_wheels(
        name="Install the torch wheels built for the ROCm release",
        python=venv_python(config),
        index_url=config.torch_index_url,
        wanted=wanted,
    )


@deploy("Remove PyTorch")
def remove_pytorch(config: Config) -> None:
    files.directory(name="Remove the PyTorch venv", path=config.pytorch_venv,
                    present=False)  # fmt: skip
    recorded_directories_absent(
        name="Remove the venv's parent directories the deploy created", ledger=DIRECTORY_LEDGER
    )
