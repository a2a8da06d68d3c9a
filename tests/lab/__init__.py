"""rocm-fleet test lab: real Debian hosts (debootstrap roots behind sshd in network
namespaces) plus doubles of repo.radeon.com, download.pytorch.org and AMD GPUs.

    from lab import Lab, HostSpec
    with Lab(hosts=[HostSpec("node1", suite="bookworm", profile="rx7900xtx")],
             rocm_releases=["6.4.3"]) as lab:
        lab.pyinfra(lab.inventory, "deploy.py")

See tests/lab/README.md.
"""

from .client import PyinfraResult
from .fleet import Lab
from .hosts import HostSpec
from .mirror import MIRROR_EXTRA_SUITES, MIRROR_PACKAGES
from .profiles import PROFILES
from .teardown import cleanup_stale

__all__ = [
    "MIRROR_EXTRA_SUITES",
    "MIRROR_PACKAGES",
    "PROFILES",
    "HostSpec",
    "Lab",
    "PyinfraResult",
    "cleanup_stale",
]
