"""AMD's apt repository: verified key, source line for the host's suite, and AMD's pin."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.operations import files, server

from tasks import FILES, settings
from tasks.matrix import (
    ROCM_APT_BASE_URL,
    ROCM_KEY_FINGERPRINT,
    ROCM_KEY_URL,
    ROCM_KEYRING_PATH,
    ROCM_PIN_PATH,
    ROCM_SOURCE_PATH,
)
from tasks.operations import apt_lists_fresh, debian_packages, verified_keyring

if TYPE_CHECKING:
    from tasks.config import Config
    from tasks.matrix import Distro

# Fetching and checking the key needs these before anything from AMD can be trusted.
PREREQUISITES = ["ca-certificates", "curl", "gnupg"]

# Written after each `apt-get update` this deploy runs (see operations.apt_lists_fresh).
APT_LISTS_STAMP = "/var/lib/rocm-fleet/apt-lists.stamp"

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
    debian_packages(
        name="Install the tools that fetch and check AMD's key",
        packages=PREREQUISITES,
    )
    verified_keyring(
        name="Install AMD's signing key (fingerprint checked)",
        url=config.rocm_key_url,
        fingerprint=config.rocm_key_fingerprint,
        path=ROCM_KEYRING_PATH,
    )
    files.put(
        name="Point apt at the ROCm release for this distro",
        src=io.StringIO(source_line(config, row)),
        dest=ROCM_SOURCE_PATH,
        mode="644",
    )
    files.put(
        name="Pin repo.radeon.com above the distribution's own ROCm packages",
        src=str(FILES / "rocm-pin-600"),
        dest=ROCM_PIN_PATH,
        mode="644",
    )
    apt_lists_fresh(
        name="Refresh apt lists after a source or key change",
        inputs=[ROCM_SOURCE_PATH, ROCM_KEYRING_PATH],
        stamp=APT_LISTS_STAMP,
    )


@deploy("Remove ROCm apt repository")
def remove_repository(config: Config) -> None:
    source = files.file(name="Remove the ROCm source", path=ROCM_SOURCE_PATH, present=False)
    files.file(name="Remove AMD's pin", path=ROCM_PIN_PATH, present=False)
    files.file(name="Remove AMD's keyring", path=ROCM_KEYRING_PATH, present=False)
    files.directory(
        name="Remove rocm-fleet's state", path=APT_LISTS_STAMP.rsplit("/", 1)[0], present=False
    )
    server.shell(
        name="Forget repo.radeon.com's package lists",
        commands=["DEBIAN_FRONTEND=noninteractive apt-get update"],
        _if=source.did_change,
    )
