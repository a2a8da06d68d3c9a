"""Reboots that are safe: only when allowed, only hosts that need one, N at a time.

A host needs a reboot when ``/run/reboot-required`` exists: a new kernel (kernel.py), a
new driver (driver.py), a MOK enrollment just queued (secureboot.py), or anything
else Debian/Ubuntu marked. Reasons come from ``/run/reboot-required.pkgs`` and rocm-fleet's
own reboot-reasons file; /run is a tmpfs, so a reboot clears them.

* Without ``rocm_reboot: allow`` nothing reboots; the run ends with the list of hosts that
  need one and why (and those that wait for someone at the console).
* With it, the hosts that need one reboot ``rocm_reboot_parallel`` at a time. This is
  pyinfra's ``_parallel`` global argument on this one operation: pyinfra runs an operation
  for all hosts in batches of that size and waits for a whole batch before starting the
  next (pyinfra/api/operations.py ``_run_single_op``), and every host's operation returns
  only once its host is back (or failed). Hosts that need no reboot finish their turn at
  once. ``--serial`` would serialise every operation of the deploy, and a python.call with
  a semaphore would re-implement the batching pyinfra already has, so neither is used.
* Never into a kernel that would strand the host: the kernel GRUB boots next must have the
  chosen amdgpu driver (DKMS built, installed and signed for it where Secure Boot is on, or
  the kernel's own module), an initramfs, and /boot room for one more (``model.boot``).
  Otherwise the reboot is refused with the reason and the host fails; the end-of-run report
  lists it, and a host that may not reboot is listed with what isn't ready yet.
* The operation (operations/reboot.py) comes before rocm_fleet/deploy/verify.py's, so every rebooted
  host is verified again.

``rocm_reboot_parallel`` is read per host, but pyinfra takes an operation's global arguments
from one host: set it once for the whole fleet (group_data/all.py or the inventory's groups).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.engine.run import after_operation
from rocm_fleet.model import paths
from rocm_fleet.operations.reboot import NEEDS_REBOOT, NOTES, REFUSED, reboot_when_needed

if TYPE_CHECKING:
    from rocm_fleet.model import matrix
    from rocm_fleet.model.config import Config

logger = logging.getLogger("pyinfra")


def _report() -> None:
    """Print the hosts that still need a reboot (or a person), once the reboot operation has
    ended on every host."""
    lines = []
    for name in sorted(NEEDS_REBOOT):
        lines.append(f"  {name}: {'; '.join(NEEDS_REBOOT[name])}")
    if lines:
        logger.warning(
            "Hosts that need a reboot (not allowed: set rocm_reboot: allow, or reboot them "
            "yourself):\n" + "\n".join(lines)
        )
    refused = [f"  {name}: {'; '.join(REFUSED[name])}" for name in sorted(REFUSED)]
    if refused:
        logger.warning(
            "Reboots refused: the kernel the host boots next isn't ready for its GPU "
            "driver:\n" + "\n".join(refused)
        )
    console = [f"  {name}: {'; '.join(NOTES[name])}" for name in sorted(NOTES)]
    if console:
        logger.warning("Hosts waiting for someone at the console:\n" + "\n".join(console))


def wanted_driver(config: Config) -> str | None:
    """The amdgpu driver the next kernel must have; None where no GPU is expected."""
    if config.rocm_state != "present" or config.expected_gpu_count == 0:
        return None
    return config.rocm_driver


@deploy("Reboot")
def reboot_if_needed(
    config: Config, planned: list[tuple[str, OperationMeta]], distro: matrix.Distro
) -> None:
    """Reboot (if allowed and safe) the hosts that need it; ``planned``: (reason, operation)
    pairs of this run whose change will need one."""
    reasons = [reason for reason, op in planned if op.will_change]
    meta = reboot_when_needed(
        name="Reboot hosts that need it (when allowed)",
        allowed=config.rocm_reboot == "allow",
        timeout=config.rocm_reboot_timeout,
        planned=reasons,
        driver=wanted_driver(config),
        mok_cert=paths.MOK_KEYS[distro.id][0] if config.rocm_driver == "dkms" else None,
        _parallel=config.rocm_reboot_parallel,
    )
    after_operation(meta, _report)
