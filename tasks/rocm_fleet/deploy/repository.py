"""AMD's apt repository of the release's stream (nothing of the other's) and its ROCm packages."""

from pyinfra.api import deploy
from pyinfra.api.exceptions import DeployError
from pyinfra.operations import files, server
from pyinfra.operations.util import any_changed

from rocm_fleet.assets import text
from rocm_fleet.deploy.apt_repository import AptFile, AptKey, Leftovers, apt_repository
from rocm_fleet.model import matrix, paths, streams
from rocm_fleet.model.config import Config
from rocm_fleet.model.secrets import SecretError, read_secret
from rocm_fleet.model.sources import rocm_repository
from rocm_fleet.operations.apt import (
    apt_update,
    debian_packages,
    dpkg_repaired,
    ledgered_packages_absent,
    release_packages,
    verified_keyring,
)
from rocm_fleet.operations.files import files_absent, text_file, uploaded_file

SOURCES = tuple(dict.fromkeys(repo.source for repo in streams.REPOSITORIES))
KEYRINGS = tuple(dict.fromkeys(stream.keyring for stream in streams.STREAMS))
PINS = tuple(dict.fromkeys(stream.pin for stream in streams.STREAMS))


@deploy("ROCm apt repository")
def install_repository(config: Config, row: matrix.Distro) -> None:
    stream, repository = config.stream, rocm_repository(config, row)
    served = repository.via(config.mirror)  # the fleet mirror's copy, when there is one
    dpkg_repaired(name="Finish an interrupted dpkg run")
    debian_packages(
        name="Install the tools that fetch and check AMD's key",
        packages=["ca-certificates", "curl", "gnupg"],
        ledger=paths.PACKAGE_LEDGER,
    )
    configure_apt_credentials(config)
    apt_repository(
        key=AptKey.of("Install AMD's signing key (fingerprint checked)", served, config),
        source=AptFile(
            "Point apt at the ROCm release for this distro", repository.source, served.source_text()
        ),
        pin=AptFile(
            "Pin AMD's repository above the distribution's own ROCm packages",
            stream.pin,
            stream.pin_text(),
        ),
        leftovers=Leftovers(  # the other stream's or repository's
            "the other ROCm stream's",
            sources=tuple(path for path in SOURCES if path != config.repository.source),
            pins=tuple(path for path in PINS if path != stream.pin),
            keyrings=tuple(k for k in KEYRINGS if k not in {stream.keyring, config.amdgpu_keyring}),
        ),
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


@deploy("ROCm packages")
def install_rocm(config: Config, packages: list[str]) -> None:
    tools = [name for name in config.acceptance_packages if name not in packages]
    release_packages(
        name="Install the ROCm packages of the release",
        packages=packages + tools,
        release=config.release,
    )
    if tools:  # recorded, so that turning acceptance off removes only what it installed
        text_file(
            name="Record the acceptance tools installed (rocm_acceptance)",
            path=paths.ACCEPTANCE_LEDGER,
            content="".join(f"{name}\n" for name in tools),
            mode="600",
        )
    else:
        ledgered_packages_absent(
            name="Remove the acceptance tools (rocm_acceptance off)",
            ledger=paths.ACCEPTANCE_LEDGER,
            keep=packages,
        )
    ld_conf = text_file(
        name=f"Put {paths.ROCM_ROOT}/lib on the dynamic loader path",
        path=paths.LD_CONF,
        content=text("rocm-ld.conf"),
    )
    server.shell(name="Rebuild the loader cache", commands=["ldconfig"], _if=ld_conf.did_change)
    text_file(
        name=f"Put {paths.ROCM_ROOT}/bin on login shells' PATH",
        path=paths.PROFILE,
        content=text("rocm-profile.sh"),
    )


@deploy("Remove ROCm packages")
def remove_rocm(config: Config) -> None:
    dpkg_repaired(name="Finish an interrupted dpkg run")
    release_packages(name="Purge AMD's ROCm packages (every release and stream)", present=False)
    ld_conf = text_file(name="Remove the loader path entry", path=paths.LD_CONF, present=False)
    server.shell(name="Rebuild the loader cache", commands=["ldconfig"], _if=ld_conf.did_change)
    text_file(name="Remove the PATH snippet", path=paths.PROFILE, present=False)
