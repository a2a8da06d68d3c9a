"""An APU's GPU memory (``rocm_apu_gtt_gib``): the TTM page limit in modprobe.d."""

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.model import apu, paths
from rocm_fleet.model.config import Config
from rocm_fleet.operations.files import on_host
from rocm_fleet.operations.kernel import module_options


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
