"""rocm-fleet test lab: real Debian hosts (debootstrap roots behind sshd in network
namespaces) plus doubles of repo.radeon.com, download.pytorch.org and AMD GPUs.

    from lab import Lab, HostSpec
    with Lab(hosts=[HostSpec("node1", suite="bookworm", profile="rx7900xtx")],
             rocm_releases=["6.4.3"]) as lab:
        lab.pyinfra(lab.inventory, "deploy.py")

See tests/lab/README.md.
"""

from .fleet import HostSpec, Lab, PyinfraResult
from .mirror import MIRROR_EXTRA_SUITES, MIRROR_PACKAGES
from .profiles import PROFILES

__all__ = ["MIRROR_EXTRA_SUITES", "MIRROR_PACKAGES", "PROFILES", "HostSpec", "Lab", "PyinfraResult"]
