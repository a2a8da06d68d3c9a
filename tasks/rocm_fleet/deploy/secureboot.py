"""Secure Boot and DKMS: the module signing key exists and is enrolled as a MOK (or queued).

Only with ``rocm_driver: dkms`` (the distro's inbox driver is signed by the distro) and only
when ``mokutil --sb-state`` says Secure Boot is enabled. Then:

1. the DKMS signing certificate exists (Debian ``/var/lib/dkms/mok.pub``, Ubuntu
   ``/var/lib/shim-signed/mok/MOK.der``), made the way DKMS makes it when missing
   (dkms.in ``prepare_mok``; Ubuntu: ``update-secureboot-policy --new-key``; fact sheet §5);
2. enrolled (``mokutil --test-key``, text parsed: the exit codes flipped between releases)
   or already queued (``mokutil --list-new`` lists its SHA1): nothing to do;
3. otherwise queued with ``mokutil --import <cert> --hash-file <file>`` and a one-time
   password from the environment variable ``rocm_mok_password_env`` names (or a prompt),
   of which only a crypt hash ever reaches the host (operations/secureboot.py).

Secure Boot, shim validation and existing keys are never touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta

from rocm_fleet.model import matrix, paths
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.secureboot import mok_enrolled, signing_key

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@deploy("Secure Boot")
def configure_secure_boot(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """Returns (reboot reason, operation) pairs for tasks.reboot."""
    if config.rocm_driver != "dkms":
        return []
    cert, key = paths.MOK_KEYS[row.id]
    packages = ["mokutil", "openssl"] + (["shim-signed"] if row.id == "ubuntu" else [])
    debian_packages(name="Install mokutil and openssl", packages=packages)
    signing_key(name="Create the DKMS signing key if missing", cert=cert, key=key, distro_id=row.id)
    queued = mok_enrolled(
        name="Queue the DKMS signing key for MOK enrollment",
        cert=cert,
        password_env=config.rocm_mok_password_env,
    )
    return [("MOK enrollment pending", queued)]
