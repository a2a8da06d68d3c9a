"""The whole node as one deploy: the checklist every rocm-fleet run follows."""

import logging
from collections.abc import Collection
from typing import Any

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.api.exceptions import DeployError

from rocm_fleet.deploy.driver import (
    configure_driver,
    configure_secure_boot,
    migrate_from_cuda,
    remove_driver_packages,
)
from rocm_fleet.deploy.groups import configure_groups
from rocm_fleet.deploy.kernel import (
    configure_apu_memory,
    configure_kernel,
    reboot_if_needed,
    release_kernel_holds,
)
from rocm_fleet.deploy.mirror import configure_mirror, configure_proxy
from rocm_fleet.deploy.preflight import preflight, refused
from rocm_fleet.deploy.pull import configure_pull
from rocm_fleet.deploy.pytorch import (
    configure_pip_credentials,
    install_pytorch,
    remove_created_venv,
    remove_pytorch,
)
from rocm_fleet.deploy.repository import (
    install_repository,
    install_rocm,
    remove_repository,
    remove_rocm,
)
from rocm_fleet.deploy.slurm import configure_slurm_gres, configure_slurm_health_check
from rocm_fleet.deploy.verify import verify_node
from rocm_fleet.engine.inventory_fleet import fleet_of
from rocm_fleet.engine.origin import origin, raise_at
from rocm_fleet.engine.speedups import planned_with_speedups
from rocm_fleet.model.config import Config, ConfigError
from rocm_fleet.model.settings import uncomposed
from rocm_fleet.model.streams import CLASSIC
from rocm_fleet.model.untrusted import VISIBLE_LOG

logger = logging.getLogger("pyinfra")


class InventoryError(ConfigError, DeployError):
    """Bad inventory data, as pyinfra's CLI stops a run for (a DeployError)."""


def host_config(current: Any, every_host: bool = False) -> Config:
    """A host's validated settings; ``InventoryError`` at the line that set the bad key."""
    fleet = fleet_of(current.inventory)
    try:
        config = fleet.config(current.name)
        _verify_site_data(config, current.name)
        return config
    except ConfigError as exc:
        others = [str(other) for other in fleet.refusals(current.name)] if every_host else []
        raise_at(InventoryError("\n".join([str(exc), *others]), exc.key), current, exc.key)


def refuse_uncomposed(current: Any, composed: Collection[str]) -> None:
    """``InventoryError`` at the line that set a feature's key the running deploy doesn't compose
    (``model.settings.uncomposed``)."""
    found = uncomposed(current.data.dict(), current.name, composed, lambda k: origin(current, k))
    if found is not None:
        key, line = found
        raise_at(InventoryError(line, key), current, key)


def _verify_site_data(config: Config, name: str) -> None:
    """ConfigError unless upstream is seen to publish the site matrix data's release."""
    if config.matrix_data is None:
        return
    from rocm_fleet.upstream.matrix_check import SiteDataUnverified, verify

    fingerprints = {}
    if config.rocm_key_fingerprint:
        fingerprints[config.stream.name] = config.rocm_key_fingerprint
    if config.rocm_amdgpu_key_fingerprint:
        fingerprints.setdefault(CLASSIC.name, config.rocm_amdgpu_key_fingerprint)
    try:
        verify(config.matrix_data, fingerprints)
    except SiteDataUnverified as exc:
        raise ConfigError(
            f"{name}: inventory key 'rocm_matrix_data': {exc}", "rocm_matrix_data"
        ) from None


@deploy("rocm-fleet")
# Plan with rocm-fleet's faster pyinfra internals (engine.speedups).
@planned_with_speedups
def rocm_node(composed: Collection[str] = ()) -> None:
    """Turn this host into a verified ROCm + PyTorch node, or take ROCm off it. ``composed``: the
    feature concerns (``model.node_settings.FEATURE_CONCERNS``) the caller deploys after it; a
    host setting another's keys is refused, as bad inventory data is."""
    logger.addFilter(VISIBLE_LOG)
    # Bad inventory data stops the run before any host is touched, naming every host's.
    config = host_config(host, every_host=True)
    refuse_uncomposed(host, composed)
    host.log_styled(
        f"rocm-fleet: ROCm {config.rocm_version} from {config.matrix_source}", log_func=logger.info
    )

    if config.rocm_state == "absent":
        configure_pip_credentials(config, present=False)
        remove_pytorch(config)
        remove_driver_packages()  # while its ledger and AMD's sources are there
        remove_rocm(config)
        configure_mirror(config, host.inventory, present=False)
        release_kernel_holds(config)  # before the state that records them goes
        configure_slurm_gres(config, present=False)  # before its record goes too
        configure_slurm_health_check(config, present=False)
        remove_repository(config)
        configure_proxy(config, present=False)
        configure_apu_memory(config, present=False)
        # Pull mode follows its own setting: a node may keep pulling a state without ROCm.
        configure_pull(config)
        return

    # One read of the host; a host that can't take the release is refused, unchanged.
    found = preflight(config)
    if found is None or found.row is None:
        return
    distro = found.row
    # apt's proxy before anything runs apt; the mirror up before any host fetches from it.
    configure_proxy(config)
    configure_mirror(config, host.inventory)
    # (reason, operation) pairs whose change needs a reboot, for reboot_if_needed.
    needs_reboot = migrate_from_cuda(config) if config.rocm_migrate_from_cuda else []
    needs_reboot += configure_kernel(config, distro)
    install_repository(config, distro)
    # The signing key before the driver: DKMS signs with the key that exists then.
    needs_reboot += configure_secure_boot(config, distro)
    needs_reboot += configure_driver(config, distro)
    needs_reboot += configure_apu_memory(config)
    install_rocm(config, config.wanted_packages(found.gpus))
    configure_groups(config)
    configure_pip_credentials(config, present=config.torch is not None)
    if config.torch is not None:
        install_pytorch(config, distro)
        if refused():  # its wheels couldn't be locked: nothing more is planned for it
            return
    else:
        remove_created_venv(config)
    reboot_if_needed(config, needs_reboot, distro)
    verify_node(config)
    # After the node is verified: Slurm is told of GPUs that work.
    configure_slurm_gres(config)
    if refused():  # its GPUs' values can't be written to gres.conf: nothing more for it
        return
    configure_slurm_health_check(config)
    if refused():
        return
    # Last: a node pulls its state once it has been converged to it.
    configure_pull(config)
