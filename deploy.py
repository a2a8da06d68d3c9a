"""Turn each inventory host into a verified AMD ROCm + PyTorch node (or take ROCm off it).

    pyinfra inventories/<fleet>.py deploy.py

The checklist lives in the package, so your own deploys can run it too:
rocm_fleet.deploy.rocm_node (tasks/rocm_fleet/deploy/node.py) -- validate the inventory,
preflight (one read; refuse a host that can't take the release), migrate from CUDA, kernel,
repository, driver, Secure Boot, ROCm, groups, PyTorch, reboot, verify. Then the features a
node may have: GPU containers (rocm_fleet.containers, ``rocm_containers_engines``; nothing
without it). rocm_fleet.compose.fleet_node composes them, for this file and pull mode's.
Every step is idempotent: a second run reports no change, and ``--dry`` shows only drift.
"""

from rocm_fleet.compose import fleet_node

fleet_node()
