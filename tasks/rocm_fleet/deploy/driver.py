"""The amdgpu driver (inbox, or ``amdgpu-dkms`` with headers), its Secure Boot key, NVIDIA's off."""

from pyinfra.api import deploy
from pyinfra.api.operation import OperationMeta
from pyinfra.operations.util import any_changed

from rocm_fleet.deploy.apt_repository import AptFile, AptKey, apt_repository
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.apt import InstalledPackages
from rocm_fleet.facts.files import Ledger
from rocm_fleet.facts.system import NvidiaStack, RunningKernel
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.config import Config
from rocm_fleet.model.sources import amdgpu_repository
from rocm_fleet.model.versions import kernel_releases, newer_kernels
from rocm_fleet.operations.apt import apt_update, debian_packages, nvidia_packages_absent
from rocm_fleet.operations.files import on_host, text_file
from rocm_fleet.operations.host import fail
from rocm_fleet.operations.kernel import dkms_driver, dkms_driver_absent
from rocm_fleet.operations.python import cuda_wheels_absent
from rocm_fleet.operations.secureboot import mok_enrolled, signing_key

DRIVER_PACKAGE = matrix.AMDGPU_DRIVER_PACKAGE
DRIVER_REMOVED = f"driver {DRIVER_PACKAGE} removed"
NVIDIA_REMOVED = "NVIDIA driver removed (still loaded until a reboot)"


def header_packages(row: matrix.Distro, running: str, installed: list[str]) -> list[str]:
    """Headers for the running kernel and every newer installed one."""
    wanted = [f"linux-headers-{k}" for k in [running, *newer_kernels(running, installed)]]
    if row.id == "ubuntu":
        wanted.append(f"linux-modules-extra-{running}")
    return wanted


@deploy("amdgpu driver")
def configure_driver(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """The DKMS driver, or its leftovers' removal; (reboot reason, operation) pairs."""
    if config.rocm_driver != "dkms":
        return remove_driver()
    repository = amdgpu_repository(config, row)
    if repository is None:
        fail(
            name="Refuse rocm_driver: dkms for this release",
            reason=(
                f"the matrix does not record which amdgpu driver ROCm {config.release.version} "
                f"ships ({matrix.missing_driver(config.release)}; `rocm-fleet matrix` lists "
                "each release's driver); choose a release "
                "with a known driver or rocm_driver: inbox"
            ),
        )
        return []
    served = repository.via(config.mirror)
    # The classic stream's keyring; a Core SDK release installs it here for the driver.
    own_key = repository.keyring != config.stream.keyring
    apt_repository(
        key=AptKey.of(
            "Install repo.radeon.com's signing key for the driver (fingerprint checked)",
            served,
            config,
        )
        if own_key
        else None,
        signed_by=repository.keyring,
        source=AptFile(
            "Point apt at AMD's amdgpu driver repository", repository.source, served.source_text()
        ),
        refresh="Refresh apt lists after a driver source change",
        stamp=paths.AMDGPU_LISTS_STAMP,
    )
    running = read_fact(RunningKernel) or ""
    installed = kernel_releases(read_fact(InstalledPackages) or {})
    install = dkms_driver(
        name="Install kernel headers and amdgpu-dkms",
        packages=[*header_packages(row, running, installed), DRIVER_PACKAGE],
        driver=DRIVER_PACKAGE,
        ledger=paths.DRIVER_LEDGER,
    )
    return [("new driver amdgpu-dkms", install)]


def remove_driver_packages() -> None:
    """Uninstall: purge what ``rocm_driver: dkms`` installed (its ledger: amdgpu-dkms, headers,
    mokutil and openssl where it installed them), keeping what the admin's packages need."""
    debian_packages(
        name="Purge what rocm_driver: dkms installed (its ledger)",
        ledger=paths.DRIVER_LEDGER,
        present=False,
    )


def remove_driver() -> list[tuple[str, OperationMeta]]:
    """Remove what ``rocm_driver: dkms`` added, if any; the purge's (reboot reason, operation)."""
    installed = read_fact(InstalledPackages) or {}
    if not on_host(paths.AMDGPU_SOURCE, paths.AMDGPU_LISTS_STAMP) and not any(
        name in installed for name in read_fact(Ledger, path=paths.DRIVER_LEDGER) or []
    ):
        return []
    purge = dkms_driver_absent(
        name="Purge amdgpu-dkms and the headers the deploy installed for it",
        driver=DRIVER_PACKAGE,
        ledger=paths.DRIVER_LEDGER,
        reboot_reason=DRIVER_REMOVED,
    )
    source = text_file(
        name="Remove AMD's amdgpu driver source", path=paths.AMDGPU_SOURCE, present=False
    )
    text_file(
        name="Remove the driver source's apt-lists stamp",
        path=paths.AMDGPU_LISTS_STAMP,
        present=False,
    )
    apt_update(name="Forget the driver repository's package lists", _if=any_changed(source))
    return [(DRIVER_REMOVED, purge)]


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


@deploy("Migrate from CUDA")
def migrate_from_cuda(config: Config) -> list[tuple[str, OperationMeta]]:
    """Take NVIDIA's stack off; returns the (reason, operation) pairs that need a reboot."""
    needs_reboot = []
    purge = nvidia_packages_absent(
        name="Purge NVIDIA's driver and CUDA packages", reboot_reason=NVIDIA_REMOVED
    )
    if read_fact(NvidiaStack)["modules"]:
        needs_reboot.append((NVIDIA_REMOVED, purge))
    if config.torch is not None:
        cuda_wheels_absent(
            name="Uninstall the CUDA wheels from the PyTorch venv", venv_path=config.pytorch_venv
        )
    return needs_reboot
