"""AMD's apt repository: verified key, source line for the host's suite, and AMD's pin."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.operations import files, server
from pyinfra.operations.util import any_changed

from tasks import FILES, settings
from tasks.matrix import (
    AMDGPU_SOURCE_PATH,
    ROCM_APT_BASE_URL,
    ROCM_KEY_FINGERPRINT,
    ROCM_KEY_URL,
    ROCM_KEYRING_PATH,
    ROCM_PIN_PATH,
    ROCM_SOURCE_PATH,
)
from tasks.operations import (
    apt_lists_fresh,
    debian_packages,
    dpkg_repaired,
    recorded_packages_absent,
    text_file,
    verified_keyring,
)

if TYPE_CHECKING:
    from tasks.config import Config
    from tasks.matrix import Distro

# Fetching and checking the key needs these before anything from AMD can be trusted.
PREREQUISITES = ["ca-certificates", "curl", "gnupg"]

# rocm-fleet's own state on the host; uninstalling removes it last.
STATE_DIR = "/var/lib/rocm-fleet"
# Written after each `apt-get update` this deploy runs (see operations.apt_lists_fresh).
APT_LISTS_STAMP = f"{STATE_DIR}/apt-lists.stamp"
# Distribution packages the deploy installed (not the ones already there), for uninstalling.
PACKAGE_LEDGER = f"{STATE_DIR}/installed-packages"
# Directories the deploy created (the venv's parents, e.g. /opt/rocm-fleet), for uninstalling.
DIRECTORY_LEDGER = f"{STATE_DIR}/created-directories"

SETTINGS = (
    settings.Setting(
        "rocm_version", None, "ROCm release to install, e.g. `6.4.3` or `7.2.1` (required)",
        settings.string,
    ),
    settings.Setting(
        "rocm_apt_base_url", ROCM_APT_BASE_URL,
        "Base of AMD's ROCm apt repository (a mirror of it, if you have one)", settings.http_url,
    ),
    settings.Setting(
        "rocm_key_url", ROCM_KEY_URL, "URL of AMD's ASCII-armored signing key", settings.http_url,
    ),
    settings.Setting(
        "rocm_key_fingerprint", ROCM_KEY_FINGERPRINT,
        "Fingerprint the fetched key must have; a mismatch fails the host, writing nothing",
        settings.fingerprint,
    ),
)  # fmt: skip


def source_line(config: Config, row: Distro) -> str:
    """AMD's one-line source: suite from the matrix (Debian 12 -> jammy), keyring by path."""
    url = f"{config.rocm_apt_base_url.rstrip('/')}/{config.release.apt_path}"
    return f"deb [arch=amd64 signed-by={ROCM_KEYRING_PATH}] {url} {row.suite} main\n"


@deploy("ROCm apt repository")
def configure_repository(config: Config, row: Distro) -> None:
    dpkg_repaired(name="Finish an interrupted dpkg run")
    debian_packages(
        name="Install the tools that fetch and check AMD's key",
        packages=PREREQUISITES,
        ledger=PACKAGE_LEDGER,
    )
    verified_keyring(
        name="Install AMD's signing key (fingerprint checked)",
        url=config.rocm_key_url,
        fingerprint=config.rocm_key_fingerprint,
        path=ROCM_KEYRING_PATH,
    )
    text_file(
        name="Point apt at the ROCm release for this distro",
        path=ROCM_SOURCE_PATH,
        content=source_line(config, row),
    )
    text_file(
        name="Pin repo.radeon.com above the distribution's own ROCm packages",
        path=ROCM_PIN_PATH,
        content=(FILES / "rocm-pin-600").read_text(),
    )
    apt_lists_fresh(
        name="Refresh apt lists after a source or key change",
        inputs=[ROCM_SOURCE_PATH, ROCM_KEYRING_PATH],
        stamp=APT_LISTS_STAMP,
    )


@deploy("Remove ROCm apt repository")
def remove_repository(config: Config) -> None:
    source = files.file(name="Remove the ROCm source", path=ROCM_SOURCE_PATH, present=False)
    amdgpu = files.file(
        name="Remove the amdgpu driver source", path=AMDGPU_SOURCE_PATH, present=False
    )
    files.file(name="Remove AMD's pin", path=ROCM_PIN_PATH, present=False)
    files.file(name="Remove AMD's keyring", path=ROCM_KEYRING_PATH, present=False)
    server.shell(
        name="Forget repo.radeon.com's package lists",
        commands=["DEBIAN_FRONTEND=noninteractive apt-get update"],
        _if=any_changed(source, amdgpu),
    )
    recorded_packages_absent(
        name="Purge the distribution packages the deploy installed", ledger=PACKAGE_LEDGER
    )
    files.directory(name="Remove rocm-fleet's state", path=STATE_DIR, present=False)
