"""A kernel new enough for the GPU's inbox amdgpu driver: Debian backports, Ubuntu HWE.

The matrix knows the oldest kernel each GPU family needs (``matrix.INBOX_MIN_KERNEL``). With
``kernel_backports: auto`` a Debian 12 host whose running kernel is older gets
bookworm-backports (a deb822 source signed by the Debian archive keyring, pinned at 100 so
nothing else comes from it unasked) and ``linux-image-amd64`` + ``linux-headers-amd64``
from it, installed with ``apt-get --no-remove`` so the running kernel (and anything else)
can never be removed. Ubuntu's equivalent is the HWE kernel. The host is then marked as
needing a reboot where Debian and Ubuntu do it (``/run/reboot-required`` and
``.pkgs``), plus the reason in ``/run/rocm-fleet/reboot-reasons``; tasks/reboot.py reads it.
"""

from __future__ import annotations

import logging
import shlex
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, deploy, operation
from pyinfra.api.operation import OperationMeta
from pyinfra.facts.deb import DebPackages

from tasks import matrix, settings
from tasks.facts import RunningKernel, read_fact
from tasks.operations import APT_GET, apt_lists_fresh, text_file

if TYPE_CHECKING:
    from tasks.config import Config

logger = logging.getLogger("pyinfra")

SETTINGS = (
    settings.Setting(
        "kernel_backports", "auto",
        "A newer kernel (Debian 12: bookworm-backports; Ubuntu: HWE): `auto` when the running "
        "kernel is older than `expected_gfx` needs, `always`, or `never`",
        settings.one_of("auto", "always", "never"),
    ),
    settings.Setting(
        "kernel_backports_mirror", matrix.DEBIAN_MIRROR_URL,
        "Debian mirror the backports source points at", settings.http_url,
    ),
)  # fmt: skip

BACKPORTS_SOURCE_PATH = "/etc/apt/sources.list.d/rocm-fleet-backports.sources"
BACKPORTS_PIN_PATH = "/etc/apt/preferences.d/rocm-fleet-backports"
BACKPORTS_LISTS_STAMP = "/var/lib/rocm-fleet/backports-lists.stamp"

# Appends a reason (and packages) to the reboot markers, as Debian's and Ubuntu's package
# hooks do for /run/reboot-required(.pkgs). Shared by kernel.py and driver.py.
MARK_REBOOT = """
mark_reboot() {
    reason=$1; shift
    mkdir -p /run/rocm-fleet
    echo '*** System restart required ***' > /run/reboot-required
    for p in "$@"; do
        grep -qxF "$p" /run/reboot-required.pkgs 2>/dev/null \\
            || echo "$p" >> /run/reboot-required.pkgs
    done
    grep -qxF "$reason" /run/rocm-fleet/reboot-reasons 2>/dev/null \\
        || echo "$reason" >> /run/rocm-fleet/reboot-reasons
}
"""


def backports_source(mirror: str, suite: str) -> str:
    """The deb822 source (backports.debian.org/Instructions; fact sheet §6)."""
    return (
        "Types: deb\n"
        f"URIs: {mirror}\n"
        f"Suites: {suite}\n"
        "Components: main\n"
        f"Signed-By: {matrix.DEBIAN_ARCHIVE_KEYRING}\n"
    )


def backports_pin(suite: str) -> str:
    """Priority 100, what NotAutomatic/ButAutomaticUpgrades gives backports anyway: nothing
    is installed from it unless asked (``-t``), and what was comes on updating from it."""
    return f"Package: *\nPin: release n={suite}\nPin-Priority: 100\n"


def kernel_findings(
    config: Config, distro_key: str, running: str, packages: dict[str, list[str]]
) -> tuple[matrix.NewerKernel | None, str | None, list[str]]:
    """(newer kernel to install or None, why, warnings)."""
    warnings: list[str] = []
    wanted = config.kernel_backports
    needed = matrix.inbox_min_kernel(config.expected_gfx_list)
    too_old = (
        bool(needed)
        and bool(running)
        and (matrix.kernel_version_key(running) < matrix.kernel_version_key(needed or ""))
    )
    newer = matrix.NEWER_KERNELS.get(distro_key)
    if wanted == "never" or (wanted == "auto" and not too_old and not _installed(newer, packages)):
        if too_old and config.driver == "inbox":
            warnings.append(
                f"running kernel {running} is older than {needed}, which the inbox amdgpu "
                f"driver needs for {'/'.join(config.expected_gfx_list)}; kernel_backports is "
                f"{wanted}: install a newer kernel or use driver: dkms"
            )
        return None, None, warnings
    if newer is None:
        if too_old or wanted == "always":
            warnings.append(
                f"no newer kernel is known for {distro_key} (running {running}"
                + (f", {needed} needed" if needed else "")
                + ")"
            )
        return None, None, warnings
    why = (
        f"running kernel {running} is older than {needed} ({'/'.join(config.expected_gfx_list)})"
        if too_old
        else "kernel_backports: " + wanted
    )
    return newer, why, warnings


def _installed(newer: matrix.NewerKernel | None, packages: dict[str, list[str]]) -> bool:
    """Was the newer kernel installed before (then `auto` keeps it managed)?"""
    if newer is None:
        return False
    if newer.kind == "backports":
        return any("~bpo" in v for v in packages.get(newer.packages[0], []))
    return all(p in packages for p in newer.packages)


@operation()
def newer_kernel(packages: list[str], target_release: str | None, hwe: bool):
    """
    Install a newer kernel from backports (or Ubuntu's HWE meta package) and mark the host
    as needing a reboot into it. Never removes a package (``--no-remove``), so the running
    kernel stays.

    + packages: meta packages, e.g. ["linux-image-amd64", "linux-headers-amd64"]
    + target_release: the backports suite (-t), or None for Ubuntu's HWE packages
    + hwe: Ubuntu HWE (installed with its Recommends, as Ubuntu documents)
    """
    installed = read_fact(DebPackages)
    if target_release:
        missing = [p for p in packages if not any("~bpo" in v for v in installed.get(p, []))]
    else:
        missing = [p for p in packages if p not in installed]
    if not missing:
        where = f" from {target_release}" if target_release else ""
        host.noop(f"{', '.join(packages)} installed{where}")
        return
    running = read_fact(RunningKernel)
    source = f"-t {shlex.quote(target_release)}" if target_release else ""
    recommends = "--install-recommends" if hwe else "--no-install-recommends"
    script = f"""
set -eu
{MARK_REBOOT}
images() {{
    dpkg-query -W -f='${{db:Status-Abbrev}} ${{Package}}\\n' 'linux-image-[0-9]*' 2>/dev/null \\
        | awk '$1 ~ /^ii/ {{print $2}}' | sort
}}
before=$(images)
{APT_GET} install --no-remove {recommends} {source} {" ".join(map(shlex.quote, missing))}
after=$(images)
new=$(printf '%s\\n' "$after" | grep -vxF "$(printf '%s\\n' "$before")" || true)
for pkg in $new; do
    release=${{pkg#linux-image-}}; release=${{release#unsigned-}}
    [ "$release" = {shlex.quote(running)} ] \\
        || mark_reboot "new kernel $release (running {running})" "$pkg"
done
"""
    yield StringCommand("sh", "-c", QuoteString(script.strip()))


@deploy("Kernel")
def configure_kernel(config: Config, row: matrix.Distro) -> list[tuple[str, OperationMeta]]:
    """Returns (reboot reason, operation) pairs for tasks.reboot."""
    running = read_fact(RunningKernel) or ""
    packages = read_fact(DebPackages) or {}
    newer, why, warnings = kernel_findings(config, row.key, running, packages)
    for warning in warnings:
        logger.warning(f"{host.print_prefix}warning: {warning}")
    if newer is None:
        return []
    if newer.kind == "backports" and newer.suite:
        text_file(
            name="Add the Debian backports source (archive key)",
            path=BACKPORTS_SOURCE_PATH,
            content=backports_source(config.kernel_backports_mirror, newer.suite),
        )
        text_file(
            name="Keep backports at priority 100",
            path=BACKPORTS_PIN_PATH,
            content=backports_pin(newer.suite),
        )
        apt_lists_fresh(
            name="Refresh apt lists after adding backports",
            inputs=[BACKPORTS_SOURCE_PATH],
            stamp=BACKPORTS_LISTS_STAMP,
        )
    install = newer_kernel(
        name="Install the newer kernel (the running one stays)",
        packages=list(newer.packages),
        target_release=newer.suite,
        hwe=newer.kind == "hwe",
    )
    return [(f"new kernel ({why})", install)]
