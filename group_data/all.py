"""Data for every host of every inventory in this directory tree (pyinfra group_data).

Every rocm-fleet setting, its default and meaning: `rocm-fleet settings`, or docs/settings.md.
Put fleet-wide choices here, per-group or per-host ones in the inventory.
"""

# Connect as an admin and become root for every operation.
# ssh_user = "admin"
# _sudo = True
