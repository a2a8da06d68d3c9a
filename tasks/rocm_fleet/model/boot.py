"""Which kernel a node boots next (GRUB's choice: docs/decisions/reboots-and-kernels.md), and
whether amdgpu is ready for it (module, initramfs, room in /boot): pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from rocm_fleet.model import matrix, paths
from rocm_fleet.model.versions import kernel_key

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@dataclass(frozen=True)
class MenuEntry:
    """A ``menuentry`` (``kernel`` from its ``linux`` line) or a ``submenu`` (``children``)."""

    title: str
    entry_id: str | None = None
    kernel: str | None = None
    children: tuple[MenuEntry, ...] | None = None  # None: a menuentry


@dataclass(frozen=True)
class DkmsEntry:
    """One line of ``dkms status``; ``state``: added, built or installed."""

    module: str
    version: str
    kernel: str | None
    arch: str | None
    state: str


@dataclass(frozen=True)
class InstalledKernel:
    """What /boot and /lib/modules hold for one kernel release."""

    release: str
    initrd_bytes: int | None = None  # None: no /boot/initrd.img-<release>
    dkms_module: str | None = None  # /lib/modules/<release>/updates/dkms/amdgpu.ko*
    dkms_signed: bool = False  # the module ends with the kernel's signature marker
    inbox_module: bool = False  # kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko*


@dataclass(frozen=True)
class BootState:
    """Everything the gate reads about the next boot."""

    kernels: tuple[InstalledKernel, ...] = ()
    grub_cfg: tuple[MenuEntry, ...] | None = None  # None: no readable /boot/grub/grub.cfg
    cfg_default: str | None = None  # grub.cfg's `set default=`
    grubenv: dict[str, str] = field(default_factory=dict)
    grub_default: str | None = None  # GRUB_DEFAULT in /etc/default/grub
    dkms: tuple[DkmsEntry, ...] | None = None  # None: no dkms command
    boot_free_bytes: int | None = None


@dataclass(frozen=True)
class NextBoot:
    kernel: str | None  # None: can't tell
    how: str


@dataclass(frozen=True)
class Readiness:
    kernel: str
    problems: tuple[str, ...]  # empty: the driver is ready for the kernel

    @property
    def ready(self) -> bool:
        return not self.problems


def next_boot(state: BootState) -> NextBoot:
    """The kernel GRUB boots next."""
    env = state.grubenv
    if state.grub_cfg is None:
        if not state.kernels:
            return NextBoot(None, f"no {paths.GRUB_CFG} and no kernel in /boot")
        newest = max(state.kernels, key=lambda k: kernel_key(k.release)).release
        return NextBoot(newest, f"newest installed kernel (no {paths.GRUB_CFG})")
    if env.get("next_entry"):
        value, source = env["next_entry"], "grubenv next_entry"
    else:
        value = state.cfg_default if state.cfg_default is not None else "0"
        source = "grub.cfg default"
        if value in ("${saved_entry}", "$saved_entry"):
            value, source = env.get("saved_entry") or "0", "grubenv saved_entry"
    if "$" in value:
        return NextBoot(None, f"GRUB default {value!r} uses a variable rocm-fleet doesn't read")
    entry = _find(state.grub_cfg, value)
    if entry is None:
        entry, how = _find(state.grub_cfg, "0"), f"{source} {value!r} names no entry: entry 0"
    else:
        how = f"{source} {value!r}"
    if entry is None:
        return NextBoot(None, "grub.cfg has no menu entry")
    if entry.children is not None:
        return NextBoot(None, f"{how} is the submenu {entry.title!r}, not an entry")
    if entry.kernel is None:
        return NextBoot(None, f"{how} is {entry.title!r}, which boots no Linux kernel")
    configured = {"saved": "${saved_entry}"}.get(state.grub_default or "", state.grub_default)
    if configured is not None and state.cfg_default is not None and configured != state.cfg_default:
        how += f"; {paths.DEFAULT_GRUB} says {state.grub_default!r}: update-grub not run since"
    return NextBoot(entry.kernel, how)


def _find(entries: tuple[MenuEntry, ...], value: str) -> MenuEntry | None:
    """An entry by number, title or id, or a ``>`` path of those (grub-core menu.c)."""
    head, _, rest = value.partition(">")
    if re.fullmatch(r"[0-9]+", head):
        found = entries[int(head)] if int(head) < len(entries) else None
    else:
        found = next((e for e in entries if head in (e.title, e.entry_id)), None)
    if found is None or not rest:
        return found
    return _find(found.children or (), rest) if found.children is not None else None


def readiness(
    state: BootState, release: str, driver: str | None, secure_boot: bool, mok: str | None,
    dkms_max: str | None = None,
) -> Readiness:  # fmt: skip
    """What keeps ``release`` from a working amdgpu; ``driver``: ``dkms``, ``inbox`` or None;
    ``mok``: the DKMS key's MOK state where Secure Boot is on; ``dkms_max``: the newest kernel
    series the driver release's amdgpu-dkms supports (None: not known)."""
    kernel = next((k for k in state.kernels if k.release == release), None)
    if kernel is None:
        return Readiness(release, (f"no /boot/vmlinuz-{release}",))
    problems: list[str] = []
    if not kernel.initrd_bytes:
        problems.append(f"no initramfs /boot/initrd.img-{release}")
    if driver == "dkms":
        problems += _dkms_problems(state, kernel, secure_boot, mok, dkms_max)
    elif driver == "inbox" and not kernel.inbox_module:
        problems.append(f"kernel {release} has no amdgpu module of its own")
    return Readiness(release, tuple(problems))


def _dkms_problems(
    state: BootState, kernel: InstalledKernel, secure_boot: bool, mok: str | None, dkms_max=None
) -> list[str]:
    release = kernel.release
    built = (
        f"amdgpu-dkms is not built for kernel {release} (install linux-headers-{release}, "
        f"or run dkms autoinstall -k {release})"
    )
    if dkms_max and kernel_key(release)[:2] > kernel_key(dkms_max)[:2]:
        built = (  # past the driver's range; a module that built still loads
            f"amdgpu-dkms is not built for kernel {release}, newer than {dkms_max}, the "
            "newest series this driver release supports (its kernel base: AMD, "
            "ROCm/legacy-rocm-build#6193): boot a kernel up to it, or use rocm_driver: inbox"
        )
    if kernel.dkms_module is None:
        return [built]
    if state.dkms is not None:
        states = [e.state for e in state.dkms if e.module == "amdgpu" and e.kernel == release]
        if "installed" not in states:
            return [f"dkms status: amdgpu is {states[0] if states else 'absent'} for {release}, "
                    "not installed"]  # fmt: skip
    if not secure_boot:
        return []
    if not kernel.dkms_signed:
        return [f"{kernel.dkms_module} is not signed and Secure Boot is on"]
    if mok not in ("enrolled", "pending"):
        return [f"the DKMS signing key is {mok or 'unknown'} as a MOK and Secure Boot is on"]
    return []


def reboot_refusal(
    state: BootState, driver: str | None, secure_boot: bool, mok: str | None, dkms_max=None
) -> list[str]:
    """Why rebooting now could strand the node (empty: it can reboot)."""
    boot = next_boot(state)
    if boot.kernel is None:
        return [f"can't tell which kernel the node boots next: {boot.how}"]
    found = readiness(state, boot.kernel, driver, secure_boot, mok, dkms_max)
    said = [f"next boot {boot.kernel} ({boot.how}): {p}" for p in found.problems]
    # /boot must take one more initramfs, as big as the largest there
    largest = max((k.initrd_bytes or 0 for k in state.kernels), default=0)
    if (free := state.boot_free_bytes) is not None and free < largest:
        said.append(
            f"/boot has {free // 2**20} MiB free, less than one more initramfs "
            f"({largest // 2**20} MiB): remove old kernels"
        )
    return said


def kernels_readiness(
    state: BootState, driver: str | None, secure_boot: bool, mok: str | None, dkms_max=None
) -> list[Readiness]:
    """Every installed kernel, newest first, with what keeps it from working."""
    ordered = sorted(state.kernels, key=lambda k: kernel_key(k.release), reverse=True)
    return [readiness(state, k.release, driver, secure_boot, mok, dkms_max) for k in ordered]


@dataclass(frozen=True)
class BootOutlook:
    """The audit's view of the next boot."""

    next: str | None
    how: str
    refused: tuple[str, ...]
    kernels: tuple[Readiness, ...]


class BootSurvey(Protocol):
    """What ``survey_boot`` reads of a ``HostSurvey`` (a Protocol: host_survey imports this)."""

    @property
    def boot(self) -> BootState | None: ...
    @property
    def secure_boot(self) -> Mapping[str, Any] | None: ...
    @property
    def mok(self) -> Mapping[str, Mapping[str, Any]]: ...


def wanted_driver(config: Config) -> str | None:
    """The amdgpu driver the next kernel must have; None where no GPU is expected."""
    gpu = config.rocm_state == "present" and config.expected_gpu_count != 0
    return config.rocm_driver if gpu else None


def dkms_limit(config: Config) -> str | None:
    """The newest kernel series the release's amdgpu-dkms supports with ``rocm_driver: dkms``."""
    limit = matrix.driver_kernel(config.release) if config.rocm_driver == "dkms" else None
    return limit.max_kernel if limit else None


def survey_boot(
    survey: BootSurvey, driver: str | None, cert: str | None, dkms_max: str | None = None
) -> BootOutlook:
    """The next boot of a surveyed host, as the audit shows it."""
    state = survey.boot or BootState()
    secure = (survey.secure_boot or {}).get("state") == "enabled"
    mok = (survey.mok.get(cert) or {}).get("state") if secure and cert else None
    boot, args = next_boot(state), (driver, secure, mok, dkms_max)
    refused, kernels = reboot_refusal(state, *args), kernels_readiness(state, *args)
    return BootOutlook(boot.kernel, boot.how, tuple(refused), tuple(kernels))
