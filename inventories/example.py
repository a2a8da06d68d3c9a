"""An example fleet: Radeon workstations on Ubuntu, an Instinct box, a GPU-less CI runner.

    pyinfra inventories/example.py deploy.py
    rocm-fleet check inventories/example.py

Each top-level list is a pyinfra group (hosts, group data); per-host data wins over group
data, which wins over group_data/all.py, which wins over the defaults in tasks/.
"""

radeon_workstations = (
    [
        ("ws01.lab.example.org", {"rocm_users": ["alice"]}),
        ("ws02.lab.example.org", {"rocm_users": ["bob", "carol"]}),
    ],
    {
        "rocm_version": "6.4.3",
        "expected_gfx": "gfx1100",  # Radeon RX 7900 XTX
        "expected_gpu_count": 1,
    },
)

instinct_nodes = (
    [("mi300x-01.dc.example.org", {})],
    {
        "rocm_version": "7.2.1",
        "rocm_packages": ["rocm"],
        "expected_gfx": "gfx942",  # Instinct MI300X
        "expected_gpu_count": 8,
        "rocm_users": ["svc-train"],
    },
)

ci_runners = (
    [("ci-runner-01.example.org", {})],
    {
        "rocm_version": "7.2.1",
        "expected_gpu_count": 0,  # builds and tests wheels, has no GPU
    },
)
