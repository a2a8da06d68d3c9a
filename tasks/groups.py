"""GPU device access: `video` and `render` exist and the configured users are in both.

/dev/kfd (compute) and /dev/dri/renderD* (render nodes) must be read-write for the user;
AMD's prerequisites put users in both groups (fact sheet §4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy

from tasks import settings
from tasks.operations import gpu_access

if TYPE_CHECKING:
    from tasks.config import Config

GPU_GROUPS = ["video", "render"]

SETTINGS = (
    settings.Setting(
        "rocm_users", [], "Existing users to add to `video` and `render` (other groups kept)",
        settings.list_of(settings.user_name, "user names"),
    ),
)  # fmt: skip


@deploy("GPU groups")
def configure_groups(config: Config) -> None:
    gpu_access(
        name="Give the GPU users video and render", groups=GPU_GROUPS, users=config.rocm_users
    )
