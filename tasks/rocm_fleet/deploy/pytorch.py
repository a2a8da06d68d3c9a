"""A venv with the PyTorch ROCm wheels that match the ROCm release, from download.pytorch.org
(or, for ROCm 10.x, which PyTorch builds nothing for, from AMD's stable index
https://stable.repo.amd.com/rocm/whl-next/ with ``[device-<gfx>]`` extras: ``TorchInstall``).

What must match is the index: torch X+rocmA.B from whl/rocmA.B (fact sheet §7.1). The wheels
of the classic releases' indexes bundle their own HIP runtime (torch/lib/libamdhip64.so);
the ROCm Core SDK's (rocm7.14) require it from pip instead, ``rocm[device-all,libraries]``
from the same index (``matrix.TORCH_RUNTIME``), which pip installs with them. The torch
default is the newest the matrix lists for the release; torchvision and torchaudio follow it.
Distributions of the family the release no longer wants (a torchaudio after torch 2.12, the
pip ROCm runtime after a move back to a classic release) are uninstalled. With
``pytorch_install: false`` the venv goes, if rocm-fleet created it (``remove_created_venv``).

Every wheel a host installs is pinned by hash (pip's ``--require-hashes``), never trusted
from the page the host reads: to the hashes a bundle verified when the fleet mirror serves
one (``upstream.manifest.bundle_lock``), else to the controller's lock of the set
(``controller_locks``, ``upstream.lock``), made from the upstream index once per wheel set
for the whole fleet and only when some host is to install.
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.api.exceptions import DeployError

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.refuse import refuse_after_preflight
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.python import VenvDistributions
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.secrets import Secret, SecretError, read_secret
from rocm_fleet.model.sources import torch_pip
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.files import text_file, uploaded_file
from rocm_fleet.operations.python import pinned_wheels, venv

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config
    from rocm_fleet.upstream.lock import Locks

logger = logging.getLogger("pyinfra")

PREREQUISITES = ["python3-venv"]


@deploy("PyTorch")
def install_pytorch(config: Config, distro: matrix.Distro | None = None) -> None:
    """The venv and the release's wheels; ``distro`` gives the host's Python, whose wheel
    set a bundle pins by hash.

    Each step hands the next plain values, down the layers: what the venv holds (a fact),
    the wheel set and whether pip is to run (the model), the set's hashes (a bundle's or
    the controller's lock), then the operation that installs exactly those."""
    debian_packages(
        name="Install python3-venv", packages=PREREQUISITES, ledger=paths.PACKAGE_LEDGER
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
        # Every wheel pinned to the SHA-256 ``rocm-fleet bundle`` verified over TLS, when the
        # fleet mirror serves a bundle: the host's pip trusts neither the mirror nor the
        # network. Imported here: the bundle's reader is only needed with a bundle.
        from rocm_fleet.upstream.manifest import BundleError, bundle_lock

        try:
            locked = bundle_lock(bundle, wheels.index_url, wheels.runtime.python, requirements)
        except BundleError as exc:
            raise DeployError(str(exc)) from None
    elif pip_runs:
        # Live: the controller's lock, made only when pip is to run (a converged host
        # reads nothing upstream). A set that can't be locked refuses the host while
        # planning, before any change to it; the rest of the fleet goes on.
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
    """The netrc file of ``rocm_pip_netrc`` (root, 0600), read where pyinfra runs, before
    pip runs (``install_pytorch``); its removal when the setting or the torch goes (planned
    only when the file is there)."""
    if present and config.rocm_pip_netrc:
        uploaded_file(
            name="Give pip the wheel index's credentials (root only)",
            path=paths.PIP_NETRC,
            content=_secret(config.rocm_pip_netrc),
            mode="600",
        )
    elif read_fact(FileDigest, path=paths.PIP_NETRC) is not None:
        text_file(name="Remove pip's credentials", path=paths.PIP_NETRC, present=False)


def _secret(source: str) -> Secret:
    try:
        return read_secret(source)
    except SecretError as exc:  # checked when the run started (model.fleet); gone since
        raise DeployError(str(exc)) from None


@functools.cache
def controller_locks() -> Locks:
    """The run's locks (``upstream.lock``), shared by every host: one per wheel set."""
    from rocm_fleet.upstream.lock import Locks

    return Locks(note=lambda text: logger.info(f"rocm-fleet: {text}"))


@deploy("PyTorch")
def remove_created_venv(config: Config) -> None:
    """``pytorch_install: false``: the venv an earlier run created goes, with the directories
    made for it; one rocm-fleet didn't create (the ledger doesn't record it) stays. The
    python3-venv package stays, as it does for any other use of the host's Python. Planned
    only on a host that has a venv there (read from the survey), so a host that never had
    one shows no PyTorch concern."""
    if read_fact(FileDigest, path=paths.venv_marker(config.pytorch_venv)) is None:
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
