"""An air-gapped site: nothing here reaches repo.radeon.com or download.pytorch.org.

Outside the air gap, where upstream is reachable, make the bundle of everything this
inventory installs (again later: only what is new is fetched):

    rocm-fleet bundle examples/airgap/inventory.py --output /srv/rocm-bundle \\
        --distro 'ubuntu 24.04'          # the hosts can't be reached from there

carry /srv/rocm-bundle into the site (to the same path on the machine that runs pyinfra),
then deploy: the mirror host gets the bundle (only files whose hash changed) and serves it
with nginx, the GPU nodes install from it. Until the bundle is there, `--dry` refuses each
host, naming the bundle and the command that makes it.

    pyinfra examples/airgap/inventory.py deploy.py --dry
"""

mirror = [
    # GPU-less: serves the bundle to the site (rocm_mirror names it, in group_data/all.py).
    ("mirror01.site.example.org", {"expected_gpu_count": 0, "pytorch_install": False}),
]

gpu_nodes = [
    ("node01.site.example.org", {}),  # Ubuntu 24.04, RX 7900 XTX
    ("node02.site.example.org", {}),  # Ubuntu 24.04, RX 7900 XTX
]
