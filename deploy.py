"""Turn each inventory host into a verified AMD ROCm + PyTorch node (or take ROCm off it).

    pyinfra inventories/<fleet>.py deploy.py

Every step is idempotent: a second run reports no change, and ``--dry`` shows only drift.
"""

from pyinfra import host

from tasks.config import load_config
from tasks.groups import configure_groups
from tasks.preflight import preflight
from tasks.pytorch import install_pytorch, remove_pytorch
from tasks.repository import configure_repository, remove_repository
from tasks.rocm import install_rocm, remove_rocm
from tasks.verify import verify_node

# Bad inventory data stops the whole run here, before any host is touched.
config = load_config(host.data.dict(), host.name)

if config.rocm_state == "absent":
    remove_pytorch(config)
    remove_rocm(config)
    remove_repository(config)
elif distro := preflight(config):
    configure_repository(config, distro)
    install_rocm(config)
    configure_groups(config)
    if config.pytorch_install:
        install_pytorch(config)
    verify_node(config)
