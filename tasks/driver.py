"""The amdgpu kernel driver: the kernel's own (``inbox``) or AMD's ``amdgpu-dkms``.

``inbox`` (the default) changes nothing: the distro kernel's amdgpu driver is signed by the
distro and works with Secure Boot on; tasks/kernel.py makes sure the kernel is new enough.
``dkms``: AMD's driver repository (``amdgpu/<version>/ubuntu`` on repo.radeon.com: the ROCm
version up to 6.4, the driver's own version from 7.0, both from the matrix), with the same
key, suite and pin as the ROCm source; the headers of the running kernel and of every newer
installed kernel (DKMS builds for each); then ``amdgpu-dkms``. Installing or upgrading the
driver marks the host as needing a reboot. tasks/secureboot.py enrols the signing key.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation
from pyinfra.api.operation import OperationMeta
from pyinfra.facts.deb import DebPackages

from tasks import matrix, settings
from tasks.facts import InstalledKernels, RunningKernel, read_fact
from tasks.kernel import MARK_REBOOT
from tasks.matrix import ROCM_KEYRING_PATH
from tasks.operations import APT_GET, apt_lists_fresh, fail, text_file

if TYPE_CHECKING:
    from tasks.config import Config

SETTINGS = (
    settings.Setting(
        "driver", "inbox",
        "The amdgpu kernel driver: `inbox` (the kernel's own) or `dkms` (AMD's `amdgpu-dkms`, "
        "built for the running and newer kernels; needs an enrolled key with Secure Boot)",
        settings.one_of("inbox", "dkms"),
    ),
    settings.Setting(
        "amdgpu_apt_base_url", matrix.AMDGPU_APT_BASE_URL,
        "Base of AMD's amdgpu driver repository (with `driver: dkms`)", settings.http_url,
    ),
)  # fmt: skip

AMDGPU_LISTS_STAMP = "/var/lib/rocm-fleet/amdgpu-lists.stamp"
DRIVER_PACKAGE = "amdgpu-dkms"


def amdgpu_source_line(config: Config, row: matrix.Distro, version: str) -> str:
    """AMD's driver source (fact sheet §3.2): same key and suite as the ROCm source."""
    url = f"{config.amdgpu_apt_base_url.rstrip('/')}/{version}/ubuntu"
    return f"deb [arch=amd64 signed-by={ROCM_KEYRING_PATH}] {url} {row.suite} main\n"


def header_packages(row: matrix.Distro, running: str, installed: list[str]) -> list[str]:
    """Headers for the running kernel and every newer installed one (Ubuntu: and the
    running kernel's extra modules, AMD's documented prerequisite; fact sheet §4)."""
    releases = [running] + [
        k
        for k in installed
        if matrix.kernel_version_key(k) > matrix.kernel_version_key(running) and k != running
    ]
    wanted = [f"linux-headers-{k}" for k in releases]
    if row.id == "ubuntu":
        wanted.append(f"linux-modules-extra-{running}")
    return wanted


@operation()
def dkms_driver(packages: list[str], driver: str):
    """
    Install the kernel headers and AMD's DKMS driver; a new driver marks the host as
    needing a reboot. Never removes a package.

    + packages: header packages, then the driver package
    + driver: the driver package (``amdgpu-dkms``)
    """
    installed = read_fact(DebPackages)
    missing = [p for p in packages if p not in installed]
    if not missing:
        host.noop(f"{', '.join(packages)} installed")
        return
    mark = f'mark_reboot "new driver {driver}" {shlex.quote(driver)}' if driver in missing else ":"
    script = f"""
set -eu
{MARK_REBOOT}
{APT_GET} install --no-remove --no-install-recommends {" ".join(map(shlex.quote, missing))}
{mark}
"""
    yield StringCommand("sh", "-c", QuoteString(script.strip()))


@deploy("amdgpu driver")
def configure_driver(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """Returns (reboot reason, operation) pairs for tasks.reboot."""
    if config.driver != "dkms":
        return []
    version = matrix.amdgpu_repo_version(config.release)
    if version is None:
        fail(
            name="Refuse driver: dkms for this release",
            reason=(
                f"the matrix does not record which amdgpu driver ROCm {config.release.version} "
                "ships (tasks/matrix.py RELEASES); choose a release with a known driver "
                "or driver: inbox"
            ),
        )
        return []
    text_file(
        name="Point apt at AMD's amdgpu driver repository",
        path=matrix.AMDGPU_SOURCE_PATH,
        content=amdgpu_source_line(config, row, version),
    )
    apt_lists_fresh(
        name="Refresh apt lists after a driver source change",
        inputs=[matrix.AMDGPU_SOURCE_PATH, ROCM_KEYRING_PATH],
        stamp=AMDGPU_LISTS_STAMP,
    )
    running = read_fact(RunningKernel) or ""
    headers = header_packages(row, running, read_fact(InstalledKernels) or [])
    install = dkms_driver(
        name="Install kernel headers and amdgpu-dkms",
        packages=[*headers, DRIVER_PACKAGE],
        driver=DRIVER_PACKAGE,
    )
    return [("new driver amdgpu-dkms", install)]
