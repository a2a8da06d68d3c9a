"""Kernel and kernel driver operations: a newer kernel, AMD's DKMS driver."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import operation

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.apt import InstalledPackages
from rocm_fleet.facts.survey import Read
from rocm_fleet.facts.system import RunningKernel
from rocm_fleet.operations._script import script

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@operation()
def newer_kernel(packages: list[str], target_release: str | None, hwe: bool):
    """
    Install a newer kernel from backports (or Ubuntu's HWE meta package) and mark the host
    as needing a reboot into it. Never removes a package (``--no-remove``), so the running
    kernel stays.

    + packages: meta packages, e.g. ["linux-image-amd64", "linux-headers-amd64"]
    + target_release: the backports suite (-t), or None for Ubuntu's HWE packages
    + hwe: Ubuntu HWE (installed with its Recommends, as Ubuntu documents)
    """
    installed = read_fact(InstalledPackages)
    if target_release:
        missing = [p for p in packages if "~bpo" not in installed.get(p, "")]
    else:
        missing = [p for p in packages if p not in installed]
    if not missing:
        where = f" from {target_release}" if target_release else ""
        host.noop(f"{', '.join(packages)} installed{where}")
        return
    recommends = "--install-recommends" if hwe else "--no-install-recommends"
    running = read_fact(RunningKernel)
    yield script("newer-kernel", running, target_release or "", recommends, *missing)


@operation()
def dkms_driver(packages: list[str], driver: str):
    """
    Install the kernel headers and AMD's DKMS driver; a new driver marks the host as
    needing a reboot. Never removes a package.

    + packages: header packages, then the driver package
    + driver: the driver package (``amdgpu-dkms``)
    """
    installed = read_fact(InstalledPackages)
    missing = [p for p in packages if p not in installed]
    if not missing:
        host.noop(f"{', '.join(packages)} installed")
        return
    yield script("dkms-driver", driver, *missing)


# --- what these operations read on a converged host ---------------------------------------------


def survey_reads(config: Config) -> list[Read]:
    """The installed packages (the kernels among them) and the running kernel."""
    return [Read("packages", InstalledPackages), Read("kernel", RunningKernel)]
