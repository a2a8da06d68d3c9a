"""Moving a node from NVIDIA to AMD (``rocm_migrate_from_cuda``)."""

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.system import NvidiaStack
from rocm_fleet.model.config import Config
from rocm_fleet.operations.apt import nvidia_packages_absent
from rocm_fleet.operations.python import cuda_wheels_absent

REBOOT_REASON = "NVIDIA driver removed (still loaded until a reboot)"


@deploy("Migrate from CUDA")
def migrate_from_cuda(config: Config) -> list[tuple[str, OperationMeta]]:
    """Take NVIDIA's stack off; returns the (reason, operation) pairs that need a reboot."""
    needs_reboot = []
    purge = nvidia_packages_absent(
        name="Purge NVIDIA's driver and CUDA packages", reboot_reason=REBOOT_REASON
    )
    if read_fact(NvidiaStack)["modules"]:
        needs_reboot.append((REBOOT_REASON, purge))
    if config.torch is not None:
        cuda_wheels_absent(
            name="Uninstall the CUDA wheels from the PyTorch venv", venv_path=config.pytorch_venv
        )
    return needs_reboot
