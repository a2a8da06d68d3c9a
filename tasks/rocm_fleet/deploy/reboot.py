"""Safe reboots (docs/decisions/reboots-and-kernels.md)."""

import logging

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.engine.run import after_operation
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.boot import dkms_limit, wanted_driver
from rocm_fleet.model.config import Config
from rocm_fleet.model.untrusted import visible
from rocm_fleet.operations.reboot import NEEDS_REBOOT, NOTES, REFUSED, reboot_when_needed

logger = logging.getLogger("pyinfra")


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
