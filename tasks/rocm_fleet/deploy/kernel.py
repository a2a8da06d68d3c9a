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
from rocm_fleet.model.versions import kernel_key
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


def kernel_findings(
    config: Config, distro_key: str, running: str, packages: dict[str, str]
) -> tuple[matrix.NewerKernel | None, str | None, list[str]]:
    """(newer kernel to install or None, why, warnings)."""
    warnings: list[str] = []
    wanted = config.rocm_kernel_backports
    needed = matrix.inbox_min_kernel(config.expected_gfx_list)
    too_old = bool(needed) and bool(running) and kernel_key(running) < kernel_key(needed or "")
    newer = matrix.NEWER_KERNELS.get(distro_key)
    if wanted == "never" or (wanted == "auto" and not too_old and not _installed(newer, packages)):
        if too_old and config.rocm_driver == "inbox":
            warnings.append(
                f"running kernel {running} is older than {needed}, which the inbox amdgpu "
                f"driver needs for {'/'.join(config.expected_gfx_list)}; rocm_kernel_backports "
                f"is {wanted}: install a newer kernel or use rocm_driver: dkms"
            )
        return None, None, warnings
    if newer is None:
        if too_old or wanted == "always":
            warnings.append(
                f"no newer kernel is known for {distro_key} (running {running}"
                + (f", {needed} needed" if needed else "")
                + ")"
            )
        return None, None, warnings
    why = (
        f"running kernel {running} is older than {needed} ({'/'.join(config.expected_gfx_list)})"
        if too_old
        else "rocm_kernel_backports: " + wanted
    )
    return newer, why, warnings


def _installed(newer: matrix.NewerKernel | None, packages: dict[str, str]) -> bool:
    """Was the newer kernel installed before (then `auto` keeps it managed)?"""
    if newer is None:
        return False
    if newer.kind == "backports":
        return "~bpo" in packages.get(newer.packages[0], "")
    return all(p in packages for p in newer.packages)


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
