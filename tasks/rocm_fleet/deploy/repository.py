"""AMD's apt repository of the release's stream, and nothing of the other stream's."""

from __future__ import annotations

from pyinfra.api import deploy
from pyinfra.api.exceptions import DeployError
from pyinfra.operations import files
from pyinfra.operations.util import any_changed

from rocm_fleet.deploy.apt_repository import AptFile, AptKey, Leftovers, apt_repository
from rocm_fleet.model import matrix, paths, streams
from rocm_fleet.model.config import Config
from rocm_fleet.model.secrets import SecretError, read_secret
from rocm_fleet.model.sources import rocm_repository
from rocm_fleet.operations.apt import apt_update, debian_packages, dpkg_repaired, verified_keyring
from rocm_fleet.operations.files import files_absent, text_file, uploaded_file

PREREQUISITES = ["ca-certificates", "curl", "gnupg"]

SOURCES = tuple(dict.fromkeys(repo.source for repo in streams.REPOSITORIES))
KEYRINGS = tuple(dict.fromkeys(stream.keyring for stream in streams.STREAMS))
PINS = tuple(dict.fromkeys(stream.pin for stream in streams.STREAMS))


def foreign_files(config: Config) -> Leftovers:
    """The other stream's or repository's sources, pins and keyrings."""
    stream, repo = config.stream, config.repository
    keep = {stream.keyring, config.amdgpu_keyring}
    return Leftovers(
        "the other ROCm stream's",
        sources=tuple(path for path in SOURCES if path != repo.source),
        pins=tuple(path for path in PINS if path != stream.pin),
        keyrings=tuple(path for path in KEYRINGS if path not in keep),
    )


@deploy("ROCm apt repository")
def install_repository(config: Config, row: matrix.Distro) -> None:
    stream, repository = config.stream, rocm_repository(config, row)
    served = repository.via(config.mirror)  # the fleet mirror's copy, when there is one
    dpkg_repaired(name="Finish an interrupted dpkg run")
    debian_packages(
        name="Install the tools that fetch and check AMD's key",
        packages=PREREQUISITES,
        ledger=paths.PACKAGE_LEDGER,
    )
    configure_apt_credentials(config)
    apt_repository(
        key=AptKey.of("Install AMD's signing key (fingerprint checked)", served, config),
        source=AptFile(
            "Point apt at the ROCm release for this distro",
            repository.source,
            served.source_text(),
        ),
        pin=AptFile(
            "Pin AMD's repository above the distribution's own ROCm packages",
            stream.pin,
            stream.pin_text(),
        ),
        leftovers=foreign_files(config),
        refresh="Refresh apt lists after a source or key change",
        stamp=paths.APT_LISTS_STAMP,
    )


def secret_file(source: str | None, path: str, give: str, remove: str) -> None:
    """``source``'s secret as root's 0600 ``path``; without one, ``path`` removed when there."""
    if source:
        try:
            secret = read_secret(source)
        except SecretError as exc:  # checked when the run started; gone since
            raise DeployError(str(exc)) from None
        uploaded_file(name=give, path=path, content=secret, mode="600")
    else:
        files_absent((remove, path))


def configure_apt_credentials(config: Config, present: bool = True) -> None:
    """``rocm_apt_auth`` as root's 0600 auth.conf.d file, else its removal."""
    secret_file(
        config.rocm_apt_auth if present else None,
        paths.APT_AUTH,
        "Give apt the repository's credentials (root only)",
        "Remove apt's credentials",
    )


@deploy("Remove ROCm apt repository")
def remove_repository(config: Config) -> None:
    configure_apt_credentials(config, present=False)
    removed = [
        text_file(name=f"Remove the ROCm source {path}", path=path, present=False)
        for path in SOURCES
    ]
    removed.append(
        text_file(name="Remove the amdgpu driver source", path=paths.AMDGPU_SOURCE, present=False)
    )
    for path in PINS:
        text_file(name=f"Remove AMD's pin {path}", path=path, present=False)
    for path in KEYRINGS:
        verified_keyring(name=f"Remove AMD's keyring {path}", path=path, present=False)
    apt_update(name="Forget AMD's package lists", _if=any_changed(*removed))
    debian_packages(
        name="Purge the distribution packages the deploy installed",
        ledger=paths.PACKAGE_LEDGER,
        present=False,
    )
    files.directory(name="Remove rocm-fleet's state", path=paths.STATE_DIR, present=False)
