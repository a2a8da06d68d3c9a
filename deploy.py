"""Turn each inventory host into a verified AMD ROCm + PyTorch node (or take ROCm off it).

    pyinfra inventories/<fleet>.py deploy.py

Every step is idempotent: a second run reports no change, and ``--dry`` shows only drift.
"""

from pyinfra import host

from tasks.config import load_config
from tasks.cuda import migrate_from_cuda
from tasks.driver import configure_driver
from tasks.groups import configure_groups
from tasks.kernel import configure_kernel
from tasks.preflight import preflight
from tasks.pytorch import install_pytorch, remove_pytorch
from tasks.reboot import reboot_if_needed
from tasks.repository import configure_repository, remove_repository
from tasks.rocm import install_rocm, remove_rocm
from tasks.secureboot import configure_secure_boot
from tasks.verify import verify_node

# Bad inventory data stops the whole run here, before any host is touched.
config = load_config(host.data.dict(), host.name)

if config.rocm_state == "absent":
    remove_pytorch(config)
    remove_rocm(config)
    remove_repository(config)
elif distro := preflight(config):
    # (reason, operation) pairs whose change needs a reboot, for reboot_if_needed.
    needs_reboot = migrate_from_cuda(config) if config.migrate_from_cuda else []
    needs_reboot += configure_kernel(config, distro)
    configure_repository(config, distro)
    needs_reboot += configure_driver(config, distro)
    needs_reboot += configure_secure_boot(config, distro)
    install_rocm(config)
    configure_groups(config)
    if config.pytorch_install:
        install_pytorch(config)
    reboot_if_needed(config, needs_reboot)
    verify_node(config)
