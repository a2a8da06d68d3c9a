"""Data for every host of every inventory in this directory tree (pyinfra group_data).

Every rocm-fleet setting, its default and meaning is in the README's settings table (and in
the SETTINGS of each tasks/ module). Put fleet-wide choices here, per-group or per-host
ones in the inventory.
"""

# Connect as an admin and become root for every operation.
# ssh_user = "admin"
# _sudo = True
