"""Kernel and kernel driver operations: a newer kernel, AMD's DKMS driver, module options."""

import hashlib
import logging

from pyinfra import host
from pyinfra.api import operation

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.apt import HeldPackages, InstalledPackages
from rocm_fleet.facts.files import FileDigest, Ledger
from rocm_fleet.facts.system import RunningKernel
from rocm_fleet.model.kernels import kernel_hold, kernel_meta_packages
from rocm_fleet.operations._script import failure, script
from rocm_fleet.operations.apt import show_packages
from rocm_fleet.operations.files import show_file, show_removal

logger = logging.getLogger("pyinfra")


@operation()
def newer_kernel(packages: list[str], target_release: str | None, hwe: bool, hold_ledger: str):
    """Install a newer kernel from backports (``target_release``) or Ubuntu's HWE (``hwe``, with
    Recommends) with ``--no-remove``, marking a reboot needed; rocm-fleet's holds (``hold_ledger``)
    are released for it and placed again, also on failure; another's hold fails the host."""
    installed = read_fact(InstalledPackages)
    if target_release:
        missing = [p for p in packages if "~bpo" not in installed.get(p, "")]
    else:
        missing = [p for p in packages if p not in installed]
    if not missing:
        where = f" from {target_release}" if target_release else ""
        host.noop(f"{', '.join(packages)} installed{where}")
        return
    held = set(read_fact(HeldPackages) or [])
    ours = set(read_fact(Ledger, path=hold_ledger) or [])
    theirs = [p for p in missing if p in held and p not in ours]
    if theirs:
        yield failure(
            f"{', '.join(theirs)} {'is' if len(theirs) == 1 else 'are'} on hold (apt-mark "
            "showhold), not by rocm-fleet, and the newer kernel (rocm_kernel_backports) needs "
            "to install them: `apt-mark unhold` them to move the kernel, or set "
            "rocm_kernel_backports: never"
        )
        return
    recommends = "--install-recommends" if hwe else "--no-install-recommends"
    running = read_fact(RunningKernel)
    released = " ".join(p for p in missing if p in held)
    # backports' version (-t picks it), else apt's candidate
    show_packages(installed, missing, version_regex="~bpo" if target_release else None)
    yield script("newer-kernel", running, target_release or "", recommends, released, *missing)


@operation()
def kernel_holds(hold: bool, coming: list[str], ledger: str):
    """Hold the kernel meta packages (installed or ``coming``; none unless ``hold``) and release the
    other holds rocm-fleet placed, others' left alone; ``ledger`` is written before a hold and
    after a release, so no hold of ours is ever unrecorded."""
    installed = read_fact(InstalledPackages) or {}
    packages = kernel_meta_packages([*installed, *coming]) if hold else []
    try:
        change = kernel_hold(
            packages,
            read_fact(HeldPackages) or [],
            read_fact(Ledger, path=ledger) or [],
            ledger_path=ledger,
        )
    except ValueError as exc:
        yield failure(str(exc))
        return
    if not change.changes:
        held = ", ".join(change.record) or "none"
        host.noop(f"kernel packages held by rocm-fleet: {held}")
        return
    host.log_styled(f"kernel hold: {change.describe()}", log_func=logger.info)
    yield script(
        "kernel-hold",
        ledger,
        *(f"+{name}" for name in change.hold),
        *(f"-{name}" for name in change.release),
        *(f"={name}" for name in change.record if name not in change.hold),
    )


@operation()
def module_options(path: str, content: str, reboot_reason: str):
    """Write a modprobe.d file whole (mode 644), or remove it (``content`` ""); a change marks a
    reboot needed with ``reboot_reason``."""
    current = read_fact(FileDigest, path=path)
    digest = hashlib.sha256(content.encode()).hexdigest()
    if not content and current is None:
        host.noop(f"{path} is absent")
        return
    if content and current is not None and (current["mode"], current["sha256"]) == ("644", digest):
        host.noop(f"{path} is up to date")
        return
    if content:
        show_file(path, content, "644", current)
    else:
        show_removal(path)
    yield script("module-options", path, content, reboot_reason)


@operation()
def dkms_driver(packages: list[str], driver: str, ledger: str):
    """Install the header ``packages`` and AMD's DKMS ``driver`` (the last), appending what it
    installs to ``ledger``; a new driver marks a reboot needed. Never removes a package."""
    installed = read_fact(InstalledPackages)
    missing = [p for p in packages if p not in installed]
    if not missing:
        host.noop(f"{', '.join(packages)} installed")
        return
    show_packages(installed, missing)
    yield script("dkms-driver", ledger, driver, *missing)


@operation()
def dkms_driver_absent(driver: str, ledger: str, reboot_reason: str):
    """Purge what ``ledger`` says ``dkms_driver`` installed (with what it pulled in, keeping what
    the admin's packages need), then forget the ledger; marks a reboot needed."""
    installed = read_fact(InstalledPackages)
    names = sorted({name for name in read_fact(Ledger, path=ledger) if name in installed})
    if not names:
        host.noop(f"no package the DKMS driver's install added is left ({driver} included)")
        return
    show_packages(installed, remove=names)
    yield script("dkms-driver-purge", ledger, driver, reboot_reason, *names)
