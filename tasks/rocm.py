"""ROCm user space from AMD's repository, its libraries on the loader path, its tools on PATH."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.operations import files, server

from tasks import FILES, settings
from tasks.operations import dpkg_repaired, release_packages, release_packages_absent, text_file

if TYPE_CHECKING:
    from tasks.config import Config

SETTINGS = (
    settings.Setting(
        "rocm_state", "present",
        "Whether ROCm is `present`; `absent` removes what the deploy added (sources, key, "
        "pin, ROCm packages, venv, loader and PATH files); users, groups and kernels stay",
        settings.one_of("present", "absent"),
    ),
    settings.Setting(
        "rocm_packages", ["rocm-hip-runtime"],
        "AMD meta packages to install, e.g. `[\"rocm\"]` for the whole stack",
        settings.list_of(settings.package_name, "Debian package names"),
    ),
)  # fmt: skip

LD_CONF_PATH = "/etc/ld.so.conf.d/rocm.conf"
PROFILE_PATH = "/etc/profile.d/rocm.sh"


@deploy("ROCm packages")
def install_rocm(config: Config) -> None:
    release_packages(
        name="Install the ROCm packages of the release",
        packages=config.rocm_packages,
        numeric_tag=config.release.numeric_tag,
    )
    ld_conf = text_file(
        name="Put /opt/rocm/lib on the dynamic loader path",
        path=LD_CONF_PATH,
        content=(FILES / "rocm-ld.conf").read_text(),
    )
    server.shell(
        name="Rebuild the loader cache",
        commands=["ldconfig"],
        _if=ld_conf.did_change,
    )
    text_file(
        name="Put /opt/rocm/bin on login shells' PATH",
        path=PROFILE_PATH,
        content=(FILES / "rocm-profile.sh").read_text(),
    )


@deploy("Remove ROCm packages")
def remove_rocm(config: Config) -> None:
    dpkg_repaired(name="Finish an interrupted dpkg run")
    release_packages_absent(name="Purge AMD's ROCm packages (every release)")
    ld_conf = files.file(name="Remove the loader path entry", path=LD_CONF_PATH, present=False)
    server.shell(name="Rebuild the loader cache", commands=["ldconfig"], _if=ld_conf.did_change)
    files.file(name="Remove the PATH snippet", path=PROFILE_PATH, present=False)
