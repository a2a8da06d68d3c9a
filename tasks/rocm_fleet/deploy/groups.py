"""GPU device access: ``video`` and ``render`` exist and the configured users are in both."""

from pyinfra.api import deploy

from rocm_fleet.model.config import Config
from rocm_fleet.model.paths import GPU_GROUPS
from rocm_fleet.operations.users import gpu_access


@deploy("GPU groups")
def configure_groups(config: Config) -> None:
    gpu_access(
        name="Give the GPU users video and render", groups=list(GPU_GROUPS), users=config.rocm_users
    )
