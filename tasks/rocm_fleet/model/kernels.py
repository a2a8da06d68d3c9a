"""Which newer kernel a host needs for its GPUs' inbox amdgpu driver, from what it runs and
has installed: pure, so preflight's rules (``model.findings``) and the kernel deploy
(``deploy.kernel``) decide alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocm_fleet.model import matrix
from rocm_fleet.model.versions import kernel_key

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


def kernel_findings(
    config: Config, distro_key: str, running: str, packages: dict[str, str]
) -> tuple[matrix.NewerKernel | None, str | None, list[str]]:
    """(newer kernel to install or None, why, warnings)."""
    warnings: list[str] = []
    wanted = config.rocm_kernel_backports
    needed = matrix.inbox_min_kernel(config.expected_gfx_list)
    too_old = bool(needed) and bool(running) and kernel_key(running) < kernel_key(needed or "")
    newer = matrix.NEWER_KERNELS.get(distro_key)
    if wanted == "never" or (wanted == "auto" and not too_old and not _installed(newer, packages)):
        if too_old and config.rocm_driver == "inbox":
            warnings.append(
                f"running kernel {running} is older than {needed}, which the inbox amdgpu "
                f"driver needs for {'/'.join(config.expected_gfx_list)}; rocm_kernel_backports "
                f"is {wanted}: install a newer kernel or use rocm_driver: dkms"
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
        else "rocm_kernel_backports: " + wanted
    )
    return newer, why, warnings


def _installed(newer: matrix.NewerKernel | None, packages: dict[str, str]) -> bool:
    """Was the newer kernel installed before (then `auto` keeps it managed)?"""
    if newer is None:
        return False
    if newer.kind == "backports":
        return "~bpo" in packages.get(newer.packages[0], "")
    return all(p in packages for p in newer.packages)
