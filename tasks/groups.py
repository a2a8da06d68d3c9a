"""GPU device access: `video` and `render` exist and the configured users are in both.

/dev/kfd (compute) and /dev/dri/renderD* (render nodes) must be read-write for the user;
AMD's prerequisites put users in both groups (fact sheet §4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.operations import server

from tasks import settings
from tasks.operations import group_members

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
    for group in host.loop(GPU_GROUPS):
        server.group(name=f"Ensure group {group} exists", group=group, system=True)
    if config.rocm_users:
        group_members(
            name="Add the GPU users to video and render", users=config.rocm_users, groups=GPU_GROUPS
        )
