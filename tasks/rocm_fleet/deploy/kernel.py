"""A kernel new enough for the GPU's inbox amdgpu driver: Debian backports, Ubuntu HWE.

The matrix knows the oldest kernel each GPU family needs (``matrix.INBOX_MIN_KERNEL``). With
``rocm_kernel_backports: auto`` a Debian 12 host whose running kernel is older gets
bookworm-backports (a deb822 source signed by the Debian archive keyring, on the mirror
the host's own Debian sources use, pinned at 100 so nothing else comes from it unasked)
and ``linux-image-amd64`` + ``linux-headers-amd64`` from it, installed with
``apt-get --no-remove`` so the running kernel (and anything else) can never be removed.
Ubuntu's equivalent is the HWE kernel. The host is then marked as needing a reboot where
Debian and Ubuntu do it (``/run/reboot-required`` and ``.pkgs``), plus the reason in
rocm-fleet's reboot-reasons file; tasks/rocm_fleet/deploy/reboot.py reads it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.deploy.apt_repository import AptFile, apt_repository
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.apt import DebianMirror, InstalledPackages
from rocm_fleet.facts.system import RunningKernel
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.kernels import kernel_findings
from rocm_fleet.operations.host import fail
from rocm_fleet.operations.kernel import newer_kernel

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config

logger = logging.getLogger("pyinfra")


def backports_source(mirror: str, suite: str) -> str:
    """The deb822 source (backports.debian.org/Instructions; fact sheet §6)."""
    return (
        "Types: deb\n"
        f"URIs: {mirror}\n"
        f"Suites: {suite}\n"
        "Components: main\n"
        f"Signed-By: {paths.DEBIAN_ARCHIVE_KEYRING}\n"
    )


def backports_pin(suite: str) -> str:
    """Priority 100, what NotAutomatic/ButAutomaticUpgrades gives backports anyway: nothing
    is installed from it unless asked (``-t``), and what was comes on updating from it."""
    return f"Package: *\nPin: release n={suite}\nPin-Priority: 100\n"


@deploy("Kernel")
def configure_kernel(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """Returns (reboot reason, operation) pairs for tasks.reboot."""
    running = read_fact(RunningKernel) or ""
    newer, why, warnings = kernel_findings(
        config, row.key, running, read_fact(InstalledPackages) or {}
    )
    for warning in warnings:
        logger.warning(f"{host.print_prefix}warning: {warning}")
    if newer is None:
        return []
    if newer.kind == "backports" and newer.suite:
        mirror = config.rocm_kernel_backports_mirror or read_fact(DebianMirror)
        if mirror is None:
            fail(
                name="Refuse backports without a Debian mirror",
                reason=(
                    f"{host.name} names no Debian mirror in {' or '.join(paths.DEBIAN_SOURCES)}: "
                    "set rocm_kernel_backports_mirror"
                ),
            )
            return []
        # Signed by the Debian archive keyring the distribution keeps: no key to add.
        apt_repository(
            source=AptFile(
                "Add the Debian backports source (archive key)",
                paths.BACKPORTS_SOURCE,
                backports_source(mirror, newer.suite),
            ),
            pin=AptFile(
                "Keep backports at priority 100", paths.BACKPORTS_PIN, backports_pin(newer.suite)
            ),
            refresh="Refresh apt lists after adding backports",
            stamp=paths.BACKPORTS_LISTS_STAMP,
        )
    install = newer_kernel(
        name="Install the newer kernel (the running one stays)",
        packages=list(newer.packages),
        target_release=newer.suite,
        hwe=newer.kind == "hwe",
    )
    return [(f"new kernel ({why})", install)]
