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
from rocm_fleet.operations.reboot import NEEDS_REBOOT, NOTES, reboot_when_needed

if TYPE_CHECKING:
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
    console = [f"  {name}: {'; '.join(NOTES[name])}" for name in sorted(NOTES)]
    if console:
        logger.warning("Hosts waiting for someone at the console:\n" + "\n".join(console))


@deploy("Reboot")
def reboot_if_needed(config: Config, planned: list[tuple[str, OperationMeta]]) -> None:
    """Reboot (if allowed) the hosts that need it; ``planned``: (reason, operation) pairs of
    this run whose change will need one."""
    reasons = [reason for reason, op in planned if op.will_change]
    meta = reboot_when_needed(
        name="Reboot hosts that need it (when allowed)",
        allowed=config.rocm_reboot == "allow",
        timeout=config.rocm_reboot_timeout,
        planned=reasons,
        _parallel=config.rocm_reboot_parallel,
    )
    after_operation(meta, _report)
