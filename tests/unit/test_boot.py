"""The next boot's kernel (GRUB's default) and whether the amdgpu driver is ready for it:
parsers of real grub.cfg / grubenv / dkms status output, and the pure decisions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rocm_fleet.facts.boot import (
    BootKernels,
    boot_state,
    parse_df_available,
    parse_dkms_status,
    parse_grub_cfg,
    parse_grub_default,
    parse_grubenv,
)
from rocm_fleet.model.boot import (
    BootState,
    DkmsEntry,
    InstalledKernel,
    kernels_readiness,
    next_boot,
    reboot_refusal,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "boot"
NEW, OLD = "6.12.43+deb12-amd64", "6.1.0-38-amd64"
ADVANCED = "gnulinux-advanced-3c1b5e2a-6f0d-4a53-9d0e-2b8f7f1a6c44"
OLD_ID = f"gnulinux-{OLD}-advanced-3c1b5e2a-6f0d-4a53-9d0e-2b8f7f1a6c44"
MiB = 2**20


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def menu(text: str | None = None):
    return parse_grub_cfg((text or (FIXTURES / "grub.cfg.debian12").read_text()).splitlines())


def kernel(release: str, **fields) -> InstalledKernel:
    base = {"initrd_bytes": 70 * MiB, "inbox_module": True}
    return InstalledKernel(release, **{**base, **fields})


def state(**fields) -> BootState:
    entries, default = menu()
    base = {"kernels": (kernel(NEW), kernel(OLD)), "grub_cfg": entries, "cfg_default": default,
            "boot_free_bytes": 400 * MiB}  # fmt: skip
    return BootState(**{**base, **fields})


# --- parsers ------------------------------------------------------------------------------


def test_grub_cfg_menu_nesting_ids_kernels_and_default():
    entries, default = menu()
    assert default == "0"  # the else branch; "${next_entry}" is grubenv's
    assert [e.title for e in entries] == [
        "Debian GNU/Linux",
        "Advanced options for Debian GNU/Linux",
        "UEFI Firmware Settings",
    ]
    assert entries[0].kernel == NEW and entries[0].children is None
    sub = entries[1]
    assert sub.entry_id == ADVANCED and sub.kernel is None
    assert [c.kernel for c in sub.children] == [NEW, NEW, OLD, OLD]
    assert sub.children[2].entry_id == OLD_ID
    assert entries[2].kernel is None and entries[2].entry_id == "uefi-firmware"


def test_grubenv_and_etc_default_grub():
    env = parse_grubenv(lines("grubenv.saved"))
    assert env == {"saved_entry": f"{ADVANCED}>{OLD_ID}"}
    assert parse_grub_default(lines("default-grub.saved")) == "saved"
    assert parse_grub_default(['GRUB_DEFAULT="Advanced options>1"']) == "Advanced options>1"
    assert parse_grub_default(["# GRUB_DEFAULT=2", "GRUB_DEFAULT=0", "GRUB_DEFAULT=1"]) == "1"


def test_dkms_status_3x_and_2x():
    three = parse_dkms_status(lines("dkms-status.3x"))
    assert [(e.module, e.kernel, e.state) for e in three] == [
        ("amdgpu", "6.8.0-79-generic", "installed"),  # the warning is dropped
        ("amdgpu", "6.14.0-29-generic", "built"),
        ("amdgpu", "6.11.0-29-generic", "installed"),
        ("virtualbox", "6.8.0-79-generic", "installed"),
    ]
    assert three[0].version == "6.12.12-2187269.24.04" and three[0].arch == "x86_64"
    two = parse_dkms_status(lines("dkms-status.2x"))
    assert [(e.version, e.kernel, e.state) for e in two] == [
        ("6.3.6-1718217.22.04", "5.15.0-118-generic", "installed"),
        ("6.3.6-1718217.22.04", "6.5.0-45-generic", "installed"),
        ("6.3.6-1718217.22.04", None, "added"),
    ]


def test_df_available():
    out = ["Filesystem     1-blocks      Used Available Capacity Mounted on",
           "/dev/nvme0n1p2 1011233792 372817920 569282560      40% /boot"]  # fmt: skip
    assert parse_df_available(out) == 569282560
    assert parse_df_available([]) is None


def test_fact_output_round_trips_through_the_survey_json():
    cfg = (FIXTURES / "grub.cfg.debian12").read_text().splitlines()
    output = [
        "__section=grubenv", *("|" + line for line in lines("grubenv.saved")),
        "__section=default", "|GRUB_DEFAULT=saved",
        "__section=grubcfg", *("|" + line for line in cfg),
        "__section=kernels", f"|kernel {NEW}", f"|initrd {NEW} 73400320",
        f"|dkms {NEW} /lib/modules/{NEW}/updates/dkms/amdgpu.ko.xz", f"|signed {NEW}",
        f"|kernel {OLD}", f"|inbox {OLD}",
        "__section=dkms", f"|amdgpu/6.12.12-2187269.24.04, {NEW}, x86_64: installed",
        "__section=df", "|Filesystem 1-blocks Used Available Capacity Mounted on",
        "|/dev/sda1 1011233792 372817920 569282560 40% /boot",
        "|__section=kernels",  # a file's line can't open a section
    ]  # fmt: skip
    again = BootKernels().process(output)
    assert again == boot_state(output)
    assert again.kernels == (
        InstalledKernel(NEW, 73400320, f"/lib/modules/{NEW}/updates/dkms/amdgpu.ko.xz", True),
        InstalledKernel(OLD, None, None, False, True),
    )
    assert again.dkms == (DkmsEntry("amdgpu", "6.12.12-2187269.24.04", NEW, "x86_64", "installed"),)
    assert again.grub_default == "saved" and again.boot_free_bytes == 569282560
    assert next_boot(again).kernel == NEW  # set default="0"; grubenv's saved_entry unused


# --- GRUB's default -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("default", "env", "expected"),
    [
        ("0", {}, NEW),
        ("1>2", {}, OLD),  # numbers through the submenu
        (f"{ADVANCED}>{OLD_ID}", {}, OLD),  # ids
        (
            "Advanced options for Debian GNU/Linux>Debian GNU/Linux, with Linux 6.1.0-38-amd64",
            {},
            OLD,
        ),  # titles
        ("${saved_entry}", {"saved_entry": f"{ADVANCED}>{OLD_ID}"}, OLD),
        ("${saved_entry}", {}, NEW),  # nothing saved yet: entry 0
        ("0", {"next_entry": "1>2"}, OLD),  # grub-reboot wins once
        ("7", {}, NEW),  # names nothing: GRUB falls back to entry 0
        ("gnulinux-gone-advanced", {}, NEW),
    ],
)
def test_next_boot_resolves_like_grub(default, env, expected):
    assert next_boot(state(cfg_default=default, grubenv=env)).kernel == expected


@pytest.mark.parametrize(
    ("default", "why"),
    [
        ("1", "is the submenu"),
        ("uefi-firmware", "boots no Linux kernel"),
        ("${chosen}", "variable"),
    ],
)
def test_next_boot_says_what_it_cannot_resolve(default, why):
    boot = next_boot(state(cfg_default=default))
    assert boot.kernel is None and why in boot.how
    (reason,) = reboot_refusal(state(cfg_default=default), "inbox", False, None)
    assert reason.startswith("can't tell which kernel the node boots next") and why in reason


def test_no_grub_cfg_assumes_the_newest_installed_kernel():
    boot = next_boot(state(grub_cfg=None, kernels=(kernel(OLD), kernel(NEW))))
    assert boot.kernel == NEW and "newest installed kernel" in boot.how
    assert next_boot(state(grub_cfg=None, kernels=())).kernel is None


def test_stale_grub_cfg_is_named():
    boot = next_boot(state(grub_default="saved", cfg_default="0"))
    assert boot.kernel == NEW and "update-grub not run" in boot.how
    assert "update-grub" not in next_boot(state(grub_default="0")).how


# --- readiness and the refusal ------------------------------------------------------------

DKMS_KO = f"/lib/modules/{NEW}/updates/dkms/amdgpu.ko"


def test_dkms_driver_not_built_for_the_next_kernel_refuses():
    found = state(kernels=(kernel(NEW), kernel(OLD, dkms_module="/x/amdgpu.ko")))
    (reason,) = reboot_refusal(found, "dkms", False, None)
    assert reason.startswith(f"next boot {NEW} (grub.cfg default '0'): amdgpu-dkms is not built")
    assert f"linux-headers-{NEW}" in reason
    built = state(kernels=(kernel(NEW, dkms_module=DKMS_KO), kernel(OLD)))
    assert reboot_refusal(built, "dkms", False, None) == []
    # The inbox driver doesn't need DKMS; a kernel without its own amdgpu does not do.
    assert reboot_refusal(found, "inbox", False, None) == []
    bare = state(kernels=(kernel(NEW, inbox_module=False),))
    assert "has no amdgpu module of its own" in reboot_refusal(bare, "inbox", False, None)[0]
    assert reboot_refusal(bare, None, False, None) == []  # no GPU driver wanted


def test_a_next_kernel_past_the_drivers_range_is_refused_naming_the_range():
    """amdgpu-dkms supports kernels up to its kernel base (ROCm/legacy-rocm-build#6193): a
    next kernel of a newer series without the module is refused saying so; one the module
    was built and installed for still boots."""
    found = state(kernels=(kernel(NEW), kernel(OLD, dkms_module="/x/amdgpu.ko")))
    (reason,) = reboot_refusal(found, "dkms", False, None, dkms_max="6.0")
    assert reason == (
        f"next boot {NEW} (grub.cfg default '0'): amdgpu-dkms is not built for kernel {NEW}, "
        "newer than 6.0, the newest series this driver release supports (its kernel base: "
        "AMD, ROCm/legacy-rocm-build#6193): boot a kernel up to it, or use rocm_driver: inbox"
    )
    built = state(kernels=(kernel(NEW, dkms_module=DKMS_KO), kernel(OLD)))
    assert reboot_refusal(built, "dkms", False, None, dkms_max="6.0") == []
    # within the range: the message as before
    (reason,) = reboot_refusal(found, "dkms", False, None, dkms_max="99.0")
    assert f"(install linux-headers-{NEW}" in reason


def test_dkms_status_must_say_installed_for_that_kernel():
    built = state(kernels=(kernel(NEW, dkms_module=DKMS_KO),))
    only_built = (DkmsEntry("amdgpu", "6.12.12", NEW, "x86_64", "built"),)
    (reason,) = reboot_refusal(dataclasses.replace(built, dkms=only_built), "dkms", False, None)
    assert "dkms status: amdgpu is built" in reason
    other = (DkmsEntry("amdgpu", "6.12.12", OLD, "x86_64", "installed"),)
    (reason,) = reboot_refusal(dataclasses.replace(built, dkms=other), "dkms", False, None)
    assert "amdgpu is absent" in reason
    ok = (DkmsEntry("amdgpu", "6.12.12", NEW, "x86_64", "installed"),)
    assert reboot_refusal(dataclasses.replace(built, dkms=ok), "dkms", False, None) == []


def test_secure_boot_needs_a_signed_module_and_the_key_enrolled_or_queued():
    unsigned = state(kernels=(kernel(NEW, dkms_module=DKMS_KO),))
    (reason,) = reboot_refusal(unsigned, "dkms", True, "enrolled")
    assert "is not signed and Secure Boot is on" in reason
    assert reboot_refusal(unsigned, "dkms", False, None) == []
    signed = state(kernels=(kernel(NEW, dkms_module=DKMS_KO, dkms_signed=True),))
    assert reboot_refusal(signed, "dkms", True, "enrolled") == []
    assert reboot_refusal(signed, "dkms", True, "pending") == []  # MokManager at this boot
    (reason,) = reboot_refusal(signed, "dkms", True, "not_enrolled")
    assert "not_enrolled as a MOK" in reason


def test_initramfs_and_boot_room():
    found = state(kernels=(kernel(NEW, initrd_bytes=None), kernel(OLD, initrd_bytes=90 * MiB)))
    assert reboot_refusal(found, "inbox", False, None) == [
        f"next boot {NEW} (grub.cfg default '0'): no initramfs /boot/initrd.img-{NEW}"
    ]
    full = state(boot_free_bytes=60 * MiB)
    assert reboot_refusal(full, "inbox", False, None) == [
        "/boot has 60 MiB free, less than one more initramfs (70 MiB): remove old kernels"
    ]
    assert reboot_refusal(state(boot_free_bytes=None), "inbox", False, None) == []


def test_every_kernel_newest_first_with_its_readiness():
    found = state(kernels=(kernel(OLD, dkms_module="/m"), kernel(NEW)))
    listed = kernels_readiness(found, "dkms", False, None)
    assert [(r.kernel, r.ready) for r in listed] == [(NEW, False), (OLD, True)]


# --- the fact's command on real files -------------------------------------------------------
