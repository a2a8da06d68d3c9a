"""Moving a node from NVIDIA to AMD: NVIDIA's driver and CUDA stack off before ROCm goes on.

Only with ``migrate_from_cuda: true``; without it preflight reports what it found of NVIDIA's
stack and stops the host (tasks/preflight.py). With it, the NVIDIA and CUDA packages
preflight found (the ``NvidiaStack`` fact) are purged, and the CUDA wheels in the PyTorch
venv (NVIDIA's ``nvidia-*`` runtime libraries, ``triton``, CUDA/CPU builds of torch,
torchvision and torchaudio) are uninstalled; tasks/pytorch.py then installs the ROCm build
into the same venv. A driver that was loaded stays in memory until the next reboot, which
is handed to tasks/reboot.py.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation

from tasks import settings
from tasks.facts import NvidiaStack, PythonDistVersions, read_fact
from tasks.kernel import MARK_REBOOT
from tasks.operations import APT_GET

if TYPE_CHECKING:
    from pyinfra.api.operation import OperationMeta

    from tasks.config import Config

SETTINGS = (
    settings.Setting(
        "migrate_from_cuda", False,
        "Remove what preflight finds of NVIDIA's stack (driver and CUDA packages, CUDA wheels "
        "in the venv) before installing ROCm; false: its presence stops the host",
        settings.boolean,
    ),
)  # fmt: skip

REBOOT_REASON = "NVIDIA driver removed (still loaded until a reboot)"

# The wheels a CUDA torch brings (PyPI's torch pulls nvidia-cublas-cu12, nvidia-cudnn-cu12,
# ..., and triton), and torch and its companions when they are not a ROCm build.
_CUDA_WHEEL = re.compile(r"^(nvidia-.*|triton)$")
_TORCH_FAMILY = ("torch", "torchvision", "torchaudio")


def cuda_wheels(installed: dict[str, str]) -> list[str]:
    """The CUDA-only distributions of a venv: NVIDIA's libraries, triton, and torch,
    torchvision and torchaudio unless they are a ROCm build (``+rocm`` label)."""
    names = []
    for name, version in installed.items():
        normal = name.lower().replace("_", "-")
        if _CUDA_WHEEL.match(normal) or (normal in _TORCH_FAMILY and "+rocm" not in version):
            names.append(name)
    return sorted(names)


@operation()
def nvidia_packages_absent():
    """
    Purge NVIDIA's driver and CUDA packages (those the ``NvidiaStack`` fact finds), and
    mark a reboot needed when an NVIDIA kernel module is loaded.
    """
    stack = read_fact(NvidiaStack)
    if not stack["packages"]:
        host.noop("no NVIDIA driver or CUDA package installed")
        return
    purge = StringCommand(APT_GET, "purge", *map(QuoteString, stack["packages"]))
    if not stack["modules"]:
        yield purge
        return
    yield StringCommand(
        "sh", "-c",
        QuoteString(MARK_REBOOT.strip() + '\nmark_reboot "$1"'), "mark-reboot",
        QuoteString(REBOOT_REASON), "&&", purge,
    )  # fmt: skip


@operation()
def cuda_wheels_absent(python: str):
    """
    Uninstall the CUDA wheels from a venv (see ``cuda_wheels``), so the ROCm build goes
    into it without NVIDIA's libraries beside it.

    + python: the venv's python
    """
    installed = host.get_fact(PythonDistVersions, python=python)  # every distribution
    names = cuda_wheels(installed or {})
    if not names:
        host.noop(f"no CUDA wheel in {python}'s environment")
        return
    yield StringCommand(
        QuoteString(python), "-m", "pip", "uninstall", "--yes", "--no-input",
        "--disable-pip-version-check", *map(QuoteString, names),
    )  # fmt: skip


@deploy("Migrate from CUDA")
def migrate_from_cuda(config: Config) -> list[tuple[str, OperationMeta]]:
    """Take NVIDIA's stack off; returns the (reason, operation) pairs that need a reboot."""
    needs_reboot = []
    purge = nvidia_packages_absent(name="Purge NVIDIA's driver and CUDA packages")
    if read_fact(NvidiaStack)["modules"]:
        needs_reboot.append((REBOOT_REASON, purge))
    if config.pytorch_install:
        cuda_wheels_absent(
            name="Uninstall the CUDA wheels from the PyTorch venv",
            python=f"{config.pytorch_venv.rstrip('/')}/bin/python",
        )
    return needs_reboot
