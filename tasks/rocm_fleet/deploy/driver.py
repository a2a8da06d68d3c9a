"""The amdgpu kernel driver: the kernel's own (``inbox``) or AMD's ``amdgpu-dkms``.

``inbox`` (the default) changes nothing: the distro kernel's amdgpu driver is signed by the
distro and works with Secure Boot on; deploy/kernel.py makes sure the kernel is new enough.
``dkms``: AMD's driver repository (``amdgpu/<version>/ubuntu`` on repo.radeon.com: the ROCm
version up to 6.4, the driver's own version from 7.0 and for the ROCm Core SDK, all from the
matrix, described in ``rocm_fleet.model.sources``) in repo.radeon.com's suite for the distro,
signed by repo.radeon.com's key: the classic stream's own keyring, which a Core SDK release
installs for the driver alone; the headers of the running kernel and of every newer
installed kernel (DKMS builds for each); then ``amdgpu-dkms``. Installing or upgrading the
driver marks the host as needing a reboot. rocm_fleet/deploy/secureboot.py enrols the signing key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.deploy.apt_repository import AptFile, AptKey, apt_repository
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.apt import InstalledPackages, kernel_releases
from rocm_fleet.facts.system import RunningKernel
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.sources import amdgpu_repository, proxy_environment
from rocm_fleet.model.versions import newer_kernels
from rocm_fleet.operations.host import fail
from rocm_fleet.operations.kernel import dkms_driver

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config

DRIVER_PACKAGE = matrix.AMDGPU_DRIVER_PACKAGE


def header_packages(row: matrix.Distro, running: str, installed: list[str]) -> list[str]:
    """Headers for the running kernel and every newer installed one, Debian ABI bumps
    included (6.1.0-31 is newer than a running 6.1.0-28); Ubuntu: and the running kernel's
    extra modules, AMD's documented prerequisite (fact sheet §4)."""
    wanted = [f"linux-headers-{k}" for k in [running, *newer_kernels(running, installed)]]
    if row.id == "ubuntu":
        wanted.append(f"linux-modules-extra-{running}")
    return wanted


@deploy("amdgpu driver")
def configure_driver(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """Returns (reboot reason, operation) pairs for tasks.reboot."""
    if config.rocm_driver != "dkms":
        return []
    repository = amdgpu_repository(config, row)
    if repository is None:
        fail(
            name="Refuse rocm_driver: dkms for this release",
            reason=(
                f"the matrix does not record which amdgpu driver ROCm {config.release.version} "
                "ships (rocm_fleet/matrix.py RELEASES); choose a release with a known driver "
                "or rocm_driver: inbox"
            ),
        )
        return []
    served = repository.via(config.mirror)
    # repo.radeon.com's keyring is the classic stream's own, which the ROCm repository
    # installs; a Core SDK release installs it here, for the driver alone.
    own_key = repository.keyring != config.stream.keyring
    apt_repository(
        key=AptKey(
            "Install repo.radeon.com's signing key for the driver (fingerprint checked)",
            repository.keyring,
            served.key.url,
            repository.key.fingerprint,
            proxy_environment(config),
        )
        if own_key
        else None,
        signed_by=repository.keyring,
        source=AptFile(
            "Point apt at AMD's amdgpu driver repository",
            repository.source,
            served.source_text(),
        ),
        refresh="Refresh apt lists after a driver source change",
        stamp=paths.AMDGPU_LISTS_STAMP,
    )
    running = read_fact(RunningKernel) or ""
    installed = kernel_releases(read_fact(InstalledPackages) or {})
    install = dkms_driver(
        name="Install kernel headers and amdgpu-dkms",
        packages=[*header_packages(row, running, installed), DRIVER_PACKAGE],
        driver=DRIVER_PACKAGE,
    )
    return [("new driver amdgpu-dkms", install)]
