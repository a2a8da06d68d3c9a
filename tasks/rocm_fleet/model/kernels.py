"""Which newer kernel a host needs for its GPUs, and the ``rocm_kernel_hold`` changes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rocm_fleet.model import gpu_targets, matrix, paths, streams
from rocm_fleet.model.grammar import PACKAGE_NAME, full
from rocm_fleet.model.versions import UBUNTU_SERIES, kernel_key

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@dataclass(frozen=True)
class FamilyNeed:
    """The kernel AMD lists for a host's GPU family on its distro, newer than the running one."""

    family: str
    gfx: tuple[str, ...]
    listed: matrix.FamilyKernel


def family_kernel(
    config: Config, distro_key: str, running: str, gfx_targets: Iterable[str]
) -> FamilyNeed | None:
    """The newest kernel AMD lists on ``distro_key`` for the families of ``gfx_targets`` when
    ``running`` is older (Core SDK releases only); else None."""
    if config.stream is not streams.CORE_SDK or not running:
        return None
    needs = []
    for gfx in dict.fromkeys(gfx_targets):
        target = gpu_targets.gpu_target(gfx)
        listed = matrix.FAMILY_KERNEL.get((distro_key, target.family)) if target else None
        if listed and kernel_key(running) < kernel_key(listed.kernel):
            needs.append((target.family, gfx, listed))
    if not needs:
        return None
    family, _, listed = max(needs, key=lambda n: kernel_key(n[2].kernel))
    gfx = tuple(g for f, g, _ in needs if f == family)
    return FamilyNeed(family, gfx, listed)


def kernel_findings(
    config: Config, distro_key: str, running: str, packages: dict[str, str]
) -> tuple[matrix.NewerKernel | None, str | None, list[str]]:
    """(newer kernel to install or None, why, warnings). Needed: the inbox driver's minimum
    for ``expected_gfx``, or the kernel AMD lists for its family where the distro's newer
    kernel is that kind (Ubuntu's HWE)."""
    warnings: list[str] = []
    wanted = config.rocm_kernel_backports
    needed = matrix.inbox_min_kernel(config.expected_gfx_list)
    family = family_kernel(config, distro_key, running, config.expected_gfx_list)
    newer = matrix.NEWER_KERNELS.get(distro_key)
    if (
        family
        and family.listed.kind == (newer and newer.kind)
        and (needed is None or kernel_key(needed) < kernel_key(family.listed.kernel))
    ):
        needed = family.listed.kernel
    too_old = bool(needed) and bool(running) and kernel_key(running) < kernel_key(needed or "")
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
    """Whether the newer kernel was installed before (then `auto` keeps it managed)."""
    if newer is None:
        return False
    if newer.kind == "backports":
        return "~bpo" in packages.get(newer.packages[0], "")
    return all(p in packages for p in newer.packages)


# Kernel meta packages (Debian's and Ubuntu's archives), matched against dpkg's list.
KERNEL_META_PACKAGES = (
    # Debian: the flavour's image and headers; backports ships the same names (~bpo versions).
    r"linux-(?:image|headers)-(?:cloud-|rt-)?(?:amd64|arm64)",
    # Ubuntu: the generic kernel and its HWE series (and their -edge).
    rf"linux-(?:image-|headers-)?generic(?:-hwe-{UBUNTU_SERIES}(?:-edge)?)?",
    # Ubuntu's OEM kernels (linux-oem-24.04b).
    rf"linux-(?:image-|headers-)?oem-{UBUNTU_SERIES}[a-z]?",
)


def kernel_meta_packages(installed: Iterable[str]) -> list[str]:
    """The kernel meta packages among the installed package names (dpkg's list)."""
    return sorted(
        name for name in set(installed) if any(full(p, name) for p in KERNEL_META_PACKAGES)
    )


@dataclass(frozen=True)
class KernelHold:
    """Holds to place, own holds to release, and the ledger after (only own holds recorded)."""

    hold: tuple[str, ...]
    release: tuple[str, ...]
    record: tuple[str, ...]
    recorded: tuple[str, ...]  # the ledger as it is

    @property
    def changes(self) -> bool:
        return bool(self.hold or self.release) or self.record != self.recorded

    def describe(self) -> str:
        """The drift, for the operation's output and --dry."""
        parts = []
        if self.hold:
            parts.append("hold " + ", ".join(self.hold))
        if self.release:
            parts.append("release rocm-fleet's hold on " + ", ".join(self.release))
        if not parts and self.changes:
            gone = sorted(set(self.recorded) - set(self.record))
            parts.append("forget holds no longer in place: " + ", ".join(gone))
        return "; ".join(parts)


def kernel_hold(
    wanted: Iterable[str],
    held: Iterable[str],
    ledger: Iterable[str],
    ledger_path: str = paths.KERNEL_HOLD_LEDGER,
) -> KernelHold:
    """The change from ``held`` and the ``ledger`` to holds on ``wanted``, others' holds left
    alone; ValueError for a wanted or recorded name that isn't a package name."""
    wanted, held, recorded = set(wanted), set(held), sorted(set(ledger))
    for name in sorted(wanted):
        _check_package_name(name, "a kernel meta package to hold")
    for name in recorded:
        _check_package_name(
            name,
            f"a line of {ledger_path} (rocm-fleet's record of the holds it placed: it writes "
            "package names only there; remove the line)",
        )
    hold = sorted(wanted - held)
    ours = [name for name in recorded if name in held]
    return KernelHold(
        hold=tuple(hold),
        release=tuple(name for name in ours if name not in wanted),
        record=tuple(sorted({*hold, *(name for name in ours if name in wanted)})),
        recorded=tuple(recorded),
    )


def _check_package_name(name: str, what: str) -> None:
    if not full(PACKAGE_NAME, name):
        raise ValueError(
            f"{name!r}, {what}, is not a Debian package name (one that matches "
            f"{PACKAGE_NAME}): refusing to pass it to apt-mark"
        )


KERNEL_KINDS = {"ga": "the GA kernel", "hwe": "Ubuntu's HWE kernel", "oem": "Ubuntu's OEM kernel"}


def family_kernel_note(
    config: Config, distro_key: str, running: str, packages: dict[str, str], gfx: list[str]
) -> str | None:
    """Preflight's note when the running kernel is older than the one AMD lists for the GPUs'
    family (``gfx``) on the distro, with the way to get it; else None."""
    need = family_kernel(config, distro_key, running, gfx)
    if need is None:
        return None
    listed = need.listed
    newer = matrix.NEWER_KERNELS.get(distro_key)
    planned, _, _ = kernel_findings(config, distro_key, running, packages)
    # the distro's newer kernel that gives what AMD lists: HWE for HWE, backports for a newer GA
    if newer is None or {"hwe": "hwe", "ga": "backports"}.get(listed.kind) != newer.kind:
        way = (
            "install Ubuntu's OEM kernel for this release and reboot (rocm-fleet installs no "
            "OEM kernel)"
            if listed.kind == "oem"
            else "install a kernel that new and reboot"
        )
    else:
        source = f" from {newer.suite}" if newer.suite else ""
        what = f"{', '.join(newer.packages)}{source}"
        if planned is not None:
            way = (
                f"the deploy installs {what} (rocm_kernel_backports: "
                f"{config.rocm_kernel_backports}); it runs after a reboot"
            )
        else:
            way = f"install {what} and reboot, or set rocm_kernel_backports: auto" + (
                "" if config.expected_gfx_list else f" and expected_gfx: {need.gfx[0]}"
            )
    return (
        f"AMD lists kernel {listed.kernel} ({KERNEL_KINDS[listed.kind]}) for "
        f"{need.family.capitalize()} GPUs ({'/'.join(need.gfx)}) on {distro_key} with the ROCm "
        f"Core SDK; this host runs {running}: {way}"
    )


def dkms_range_findings(
    config: Config, distro_key: str, running: str
) -> tuple[list[str], list[str]]:
    """(problems, warnings) of ``rocm_driver: dkms`` against the driver's kernel range: a
    problem when the distro's own kernel is past it, a warning when only the running one is."""
    limit = matrix.driver_kernel(config.release) if config.rocm_driver == "dkms" else None
    if limit is None:
        return [], []
    package = f"amdgpu-dkms {limit.dkms}" if limit.dkms else "amdgpu-dkms"
    what = (
        f"{package} (driver {limit.driver}, ROCm {config.release.version}) supports kernels up "
        f"to {limit.max_kernel} (its kernel base: AMD, ROCm/legacy-rocm-build#6193)"
    )
    distro_kernel = matrix.MIN_KERNEL.get(distro_key)
    if distro_kernel and limit.excludes(distro_kernel):
        return [
            f"rocm_driver: dkms, but {what} and {distro_key}'s kernel is {distro_kernel}: set "
            "rocm_driver: inbox (the kernel's own amdgpu), or choose a ROCm release whose "
            "driver supports that kernel"
        ], []
    if running and limit.excludes(running):
        return [], [
            f"{what}; this host runs {running}, a newer series: the module may not build for "
            "it (rocm_driver: inbox uses the kernel's own amdgpu)"
        ]
    return [], []
