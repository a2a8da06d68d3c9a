"""Secure Boot and DKMS: the signing key exists and is enrolled as a MOK."""

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.model import matrix, paths
from rocm_fleet.model.config import Config
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.secureboot import mok_enrolled, signing_key


@deploy("Secure Boot")
def configure_secure_boot(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """The signing key and its enrollment; (reboot reason, operation) pairs."""
    if config.rocm_driver != "dkms":
        return []
    cert, key = paths.MOK_KEYS[row.id]
    # Recorded with the driver's packages: going back to inbox or uninstalling purges them.
    debian_packages(name="Install mokutil and openssl", packages=["mokutil", "openssl"],
                    ledger=paths.DRIVER_LEDGER)  # fmt: skip
    if row.id == "ubuntu":  # update-secureboot-policy; the boot chain, so never purged
        debian_packages(name="Install shim-signed", packages=["shim-signed"])
    signing_key(name="Create the DKMS signing key if missing", cert=cert, key=key, distro_id=row.id)
    queued = mok_enrolled(
        name="Queue the DKMS signing key for MOK enrollment",
        cert=cert,
        password_env=config.rocm_mok_password_env,
    )
    return [("MOK enrollment pending", queued)]
