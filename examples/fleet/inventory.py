"""A multi-distro fleet: Radeon workstations and Instinct servers (see group_data/).

    pyinfra examples/fleet/inventory.py deploy.py --dry
    pyinfra examples/fleet/inventory.py deploy.py --limit ws01.lab.example.org   # a canary
    rocm-fleet check examples/fleet/inventory.py --limit radeon_workstations

Each top-level list is a pyinfra group; its settings are in group_data/<group>.py, the
fleet's in group_data/all.py, a host's own in its tuple here (host data wins over group
data, which wins over all.py, which wins over rocm-fleet's defaults: `rocm-fleet settings`).
"""

radeon_workstations = [
    ("ws01.lab.example.org", {"rocm_users": ["alice"]}),  # Ubuntu 24.04, RX 7900 XTX
    ("ws02.lab.example.org", {"rocm_users": ["bob", "carol"]}),  # Ubuntu 24.04, RX 7900 XTX
    # Debian 12, Radeon PRO W7900 (gfx1100 too): AMD lists Debian for Instinct only, so
    # preflight says so on every run; the deploy goes ahead.
    ("ws03.lab.example.org", {"rocm_users": ["dave"]}),
]

instinct_servers = [
    ("mi300x-01.dc.example.org", {}),  # Ubuntu 22.04, 8x MI300X
    ("mi300x-02.dc.example.org", {}),  # Debian 13, 8x MI300X
]
