"""The PyTorch venv with the release's ROCm wheels, every wheel pinned by hash."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.api.exceptions import DeployError

from rocm_fleet.deploy.repository import secret_file
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.refuse import refuse_after_preflight
from rocm_fleet.facts.python import VenvDistributions
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.sources import torch_pip
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.files import on_host
from rocm_fleet.operations.python import pinned_wheels, venv

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config
    from rocm_fleet.upstream.lock import Locks

logger = logging.getLogger("pyinfra")


@deploy("PyTorch")
def install_pytorch(config: Config, distro: matrix.Distro | None = None) -> None:
    """The venv and the release's wheels; refuses the host when the set can't be locked."""
    debian_packages(
        name="Install python3-venv", packages=["python3-venv"], ledger=paths.PACKAGE_LEDGER
    )
    venv(name="Create the PyTorch venv", path=config.pytorch_venv, ledger=paths.DIRECTORY_LEDGER)
    installed = read_fact(VenvDistributions, venv=config.pytorch_venv)
    pip = torch_pip(config, matrix.HOST_RUNTIMES[distro.key] if distro else None)
    if pip is None:
        return  # the caller plans this only when config.torch is set
    wheels = pip.wheels
    requirements = wheels.requirements()
    pip_runs = wheels.unmet_in(installed)
    bundle = config.mirror.bundle if config.mirror else None
    locked = None
    if bundle and wheels.runtime is not None:
        from rocm_fleet.upstream.manifest import BundleError, bundle_lock

        try:
            locked = bundle_lock(bundle, wheels.index_url, wheels.runtime.python, requirements)
        except BundleError as exc:
            raise DeployError(str(exc)) from None
    elif pip_runs:
        from rocm_fleet.upstream.lock import LockError, LockRequest  # requests: only here

        try:
            request = LockRequest.of(wheels.index_url, requirements, wheels.runtime)
            locked = controller_locks().lines(request)
        except LockError as exc:
            refuse_after_preflight(str(exc))
            return
    pinned_wheels(
        name="Install the torch wheels built for the ROCm release",
        venv_path=config.pytorch_venv,
        index_url=pip.index_url,
        wanted=dict(wheels.wanted),
        requires=list(wheels.requires),
        owned=pip.owned,
        proxy=pip.environment,
        locked=locked,
        ca=pip.ca,
    )


@deploy("PyTorch")
def configure_pip_credentials(config: Config, present: bool = True) -> None:
    """``rocm_pip_netrc`` as root's 0600 netrc, else its removal."""
    secret_file(
        config.rocm_pip_netrc if present else None,
        paths.PIP_NETRC,
        "Give pip the wheel index's credentials (root only)",
        "Remove pip's credentials",
    )


@functools.cache
def controller_locks() -> Locks:
    """The run's wheel-set locks (``upstream.lock``), shared by every host."""
    from rocm_fleet.upstream.lock import Locks

    return Locks(note=lambda text: logger.info(f"rocm-fleet: {text}"))


@deploy("PyTorch")
def remove_created_venv(config: Config) -> None:
    """Remove the venv if rocm-fleet created it (``pytorch_install: false``)."""
    if not on_host(paths.venv_marker(config.pytorch_venv)):
        return
    venv(
        name="Remove the PyTorch venv rocm-fleet created (pytorch_install: false)",
        path=config.pytorch_venv,
        ledger=paths.DIRECTORY_LEDGER,
        present=False,
        created_only=True,
    )


@deploy("Remove PyTorch")
def remove_pytorch(config: Config) -> None:
    venv(
        name="Remove the PyTorch venv and the directories made for it",
        path=config.pytorch_venv,
        ledger=paths.DIRECTORY_LEDGER,
        present=False,
    )
