"""AMD's apt repository: verified key, source line for the host's suite, and AMD's pin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.operations import files
from pyinfra.operations.util import any_changed

from rocm_fleet import paths
from rocm_fleet.files import text
from rocm_fleet.operations.apt import (
    apt_lists_fresh,
    apt_update,
    debian_packages,
    dpkg_repaired,
    verified_keyring,
)
from rocm_fleet.operations.files import text_file
from rocm_fleet.sources import proxy_environment, rocm_repository, served

if TYPE_CHECKING:
    from rocm_fleet.config import Config
    from rocm_fleet.matrix import Distro

# Fetching and checking the key needs these before anything from AMD can be trusted.
PREREQUISITES = ["ca-certificates", "curl", "gnupg"]


def source_line(config: Config, row: Distro) -> str:
    """AMD's one-line source: suite from the matrix (Debian 12 -> jammy), keyring by path;
    the fleet mirror's URL for it when the host uses one."""
    return rocm_repository(config, row).via(config.mirror).source_line()


@deploy("ROCm apt repository")
def install_repository(config: Config, row: Distro) -> None:
    dpkg_repaired(name="Finish an interrupted dpkg run")
    debian_packages(
        name="Install the tools that fetch and check AMD's key",
        packages=PREREQUISITES,
        ledger=paths.PACKAGE_LEDGER,
    )
    verified_keyring(
        name="Install AMD's signing key (fingerprint checked)",
        path=paths.ROCM_KEYRING,
        url=served(config.rocm_key_url, config.mirror),
        fingerprint=config.rocm_key_fingerprint,
        proxy=proxy_environment(config),
    )
    text_file(
        name="Point apt at the ROCm release for this distro",
        path=paths.ROCM_SOURCE,
        content=source_line(config, row),
    )
    text_file(
        name="Pin repo.radeon.com above the distribution's own ROCm packages",
        path=paths.ROCM_PIN,
        content=text("rocm-pin-600"),
    )
    apt_lists_fresh(
        name="Refresh apt lists after a source or key change",
        inputs=[paths.ROCM_SOURCE, paths.ROCM_KEYRING],
        stamp=paths.APT_LISTS_STAMP,
    )


@deploy("Remove ROCm apt repository")
def remove_repository(config: Config) -> None:
    source = text_file(name="Remove the ROCm source", path=paths.ROCM_SOURCE, present=False)
    amdgpu = text_file(
        name="Remove the amdgpu driver source", path=paths.AMDGPU_SOURCE, present=False
    )
    text_file(name="Remove AMD's pin", path=paths.ROCM_PIN, present=False)
    verified_keyring(name="Remove AMD's keyring", path=paths.ROCM_KEYRING, present=False)
    apt_update(name="Forget repo.radeon.com's package lists", _if=any_changed(source, amdgpu))
    debian_packages(
        name="Purge the distribution packages the deploy installed",
        ledger=paths.PACKAGE_LEDGER,
        present=False,
    )
    files.directory(name="Remove rocm-fleet's state", path=paths.STATE_DIR, present=False)
