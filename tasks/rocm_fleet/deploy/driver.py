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

Back to ``inbox`` after ``dkms``, what the DKMS driver added goes on the same run: the
packages its install recorded (``paths.DRIVER_LEDGER``: amdgpu-dkms and the headers it was
built against, with what they pulled in; never one the admin installed), then the driver's
source and its apt-lists stamp, then apt's lists of it. The driver's keyring is the ROCm
repository's concern: the classic stream's own keyring stays with it, and a Core SDK release
removes it as the other stream's (``deploy.repository.foreign_files``). AMD's module stays
loaded until the host boots again, so the purge marks a reboot (``deploy.reboot``: only with
``rocm_reboot: allow``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta
from pyinfra.operations.util import any_changed

from rocm_fleet.deploy.apt_repository import AptFile, AptKey, apt_repository
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.apt import InstalledPackages, kernel_releases
from rocm_fleet.facts.files import FileDigest, Ledger
from rocm_fleet.facts.system import RunningKernel
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.sources import amdgpu_repository, mirror_ca, proxy_environment
from rocm_fleet.model.versions import newer_kernels
from rocm_fleet.operations.apt import apt_update
from rocm_fleet.operations.files import text_file
from rocm_fleet.operations.host import fail
from rocm_fleet.operations.kernel import dkms_driver, dkms_driver_absent

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config

DRIVER_PACKAGE = matrix.AMDGPU_DRIVER_PACKAGE
DRIVER_REMOVED = f"driver {DRIVER_PACKAGE} removed"


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
        return remove_driver() if driver_leftovers() else []
    repository = amdgpu_repository(config, row)
    if repository is None:
        fail(
            name="Refuse rocm_driver: dkms for this release",
            reason=(
                f"the matrix does not record which amdgpu driver ROCm {config.release.version} "
                "ships (`rocm-fleet matrix` lists each release's driver); choose a release "
                "with a known driver or rocm_driver: inbox"
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
            mirror_ca(config),
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
        ledger=paths.DRIVER_LEDGER,
    )
    return [("new driver amdgpu-dkms", install)]


def driver_leftovers() -> bool:
    """Whether the host holds anything ``rocm_driver: dkms`` added (read from the survey):
    the driver's source or stamp, or a package its ledger records that is still installed."""
    installed = read_fact(InstalledPackages) or {}
    files = (paths.AMDGPU_SOURCE, paths.AMDGPU_LISTS_STAMP)
    return any(read_fact(FileDigest, path=f) is not None for f in files) or any(
        name in installed for name in read_fact(Ledger, path=paths.DRIVER_LEDGER) or []
    )


def remove_driver() -> list[tuple[str, OperationMeta]]:
    """What ``rocm_driver: dkms`` added, taken off a host whose driver is ``inbox``: the
    (reboot reason, operation) pair of the purge."""
    purge = dkms_driver_absent(
        name="Purge amdgpu-dkms and the headers the deploy installed for it",
        driver=DRIVER_PACKAGE,
        ledger=paths.DRIVER_LEDGER,
        reboot_reason=DRIVER_REMOVED,
    )
    source = text_file(
        name="Remove AMD's amdgpu driver source", path=paths.AMDGPU_SOURCE, present=False
    )
    text_file(
        name="Remove the driver source's apt-lists stamp",
        path=paths.AMDGPU_LISTS_STAMP,
        present=False,
    )
    apt_update(name="Forget the driver repository's package lists", _if=any_changed(source))
    return [(DRIVER_REMOVED, purge)]
