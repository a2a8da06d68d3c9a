"""The kernel (new enough for the inbox driver, held for DKMS), an APU's TTM limit, safe reboots."""

import logging

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.assets import render
from rocm_fleet.deploy.apt_repository import AptFile, apt_repository
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.refuse import warn_host
from rocm_fleet.engine.run import after_operation
from rocm_fleet.facts.apt import DebianMirror, InstalledPackages
from rocm_fleet.facts.files import Ledger
from rocm_fleet.facts.system import RunningKernel
from rocm_fleet.model import apu, matrix, paths
from rocm_fleet.model.boot import dkms_limit, wanted_driver
from rocm_fleet.model.config import Config
from rocm_fleet.model.kernels import kernel_findings, kernel_meta_packages
from rocm_fleet.model.untrusted import visible
from rocm_fleet.operations.files import on_host
from rocm_fleet.operations.host import fail
from rocm_fleet.operations.kernel import kernel_holds, module_options, newer_kernel
from rocm_fleet.operations.reboot import NEEDS_REBOOT, NOTES, REFUSED, reboot_when_needed

logger = logging.getLogger("pyinfra")


def backports_source(mirror: str, suite: str) -> str:
    """The backports deb822 source on ``mirror``, signed by the Debian archive keyring."""
    return render(
        "apt-source.sources.j2",
        x_repo_id=None,
        uri=mirror,
        suite=suite,
        component="main",
        architecture=None,
        keyring=paths.DEBIAN_ARCHIVE_KEYRING,
        enabled=False,
    )


def backports_pin(suite: str) -> str:
    """Backports at priority 100: installed from only when asked (``-t``)."""
    return render("apt-pin.pref.j2", release=f"n={suite}", priority=100)


@deploy("Kernel")
def configure_kernel(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """The newer kernel when needed, then the holds; (reboot reason, operation) pairs."""
    running = read_fact(RunningKernel) or ""
    installed = read_fact(InstalledPackages) or {}
    newer, why, warnings = kernel_findings(config, row.key, running, installed)
    for warning in warnings:
        warn_host(warning)
    reboots = [] if newer is None or why is None else install_newer_kernel(config, newer, why)
    # After the install: the meta packages it brings are held on the same run.
    coming = newer.packages if newer is not None and reboots else ()
    hold_kernel(config, list(installed), coming)
    return reboots


@deploy("Kernel")
def release_kernel_holds(config: Config) -> None:
    """Release rocm-fleet's kernel holds (``rocm_state: absent``); the admin's stay."""
    hold_kernel(config, [], present=False)


def hold_kernel(
    config: Config, installed: list[str], coming: tuple[str, ...] = (), present: bool = True
) -> None:
    """Hold the kernel meta packages (``rocm_kernel_hold``, dkms), else release rocm-fleet's."""
    holding = present and config.rocm_kernel_hold
    if holding and config.rocm_driver != "dkms":
        warn_host(
            "rocm_kernel_hold holds the kernel for rocm_driver: dkms only (the inbox driver "
            "comes with every kernel): not held"
        )
    hold = holding and config.rocm_driver == "dkms"
    if (hold and kernel_meta_packages([*installed, *coming])) or read_fact(
        Ledger, path=paths.KERNEL_HOLD_LEDGER
    ):
        kernel_holds(
            name="Hold the kernel meta packages (rocm_kernel_hold)",
            hold=hold,
            coming=list(coming),
            ledger=paths.KERNEL_HOLD_LEDGER,
        )


def install_newer_kernel(
    config: Config, newer: matrix.NewerKernel, why: str
) -> list[tuple[str, OperationMeta]]:
    """The backports source (when backports) and the newer kernel's install."""
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
        hold_ledger=paths.KERNEL_HOLD_LEDGER,
    )
    return [(f"new kernel ({why})", install)]


@deploy("APU memory")
def configure_apu_memory(config: Config, present: bool = True) -> list[tuple[str, OperationMeta]]:
    """The (reboot reason, operation) pair, or []; ``present=False`` removes the file."""
    gib = config.rocm_apu_gtt_gib if present else None
    if gib is None and not on_host(paths.TTM_MODPROBE):
        return []  # nothing to set or remove: no concern of this host (the audit's columns)
    write = module_options(
        name=f"Set the APU's GTT to {gib} GiB (TTM page limit)"
        if gib is not None
        else "Remove rocm-fleet's TTM page limit",
        path=paths.TTM_MODPROBE,
        content=apu.modprobe_options(gib) if gib is not None else "",
        reboot_reason=apu.REBOOT_REASON,
    )
    return [(apu.REBOOT_REASON, write)]


def _report() -> None:
    """Log the hosts that still need a reboot, were refused one, or wait at the console."""
    for found, header in (
        (NEEDS_REBOOT, "Hosts that need a reboot (not allowed: set rocm_reboot: allow, or "
         "reboot them yourself):"),
        (REFUSED, "Reboots refused: the kernel the host boots next isn't ready for its GPU "
         "driver:"),
        (NOTES, "Hosts waiting for someone at the console:"),
    ):  # fmt: skip
        lines = [f"  {name}: {visible('; '.join(found[name]))}" for name in sorted(found)]
        if lines:
            logger.warning(header + "\n" + "\n".join(lines))


@deploy("Reboot")
def reboot_if_needed(
    config: Config, planned: list[tuple[str, OperationMeta]], distro: matrix.Distro
) -> None:
    """Reboot (if allowed and safe) the hosts that need it."""
    reasons = [reason for reason, op in planned if op.will_change]
    meta = reboot_when_needed(
        name="Reboot hosts that need it (when allowed)",
        allowed=config.rocm_reboot == "allow",
        timeout=config.rocm_reboot_timeout,
        planned=reasons,
        driver=wanted_driver(config),
        mok_cert=paths.MOK_KEYS[distro.id][0] if config.rocm_driver == "dkms" else None,
        dkms_max=dkms_limit(config),
        _parallel=config.rocm_reboot_parallel,
    )
    after_operation(meta, _report)
