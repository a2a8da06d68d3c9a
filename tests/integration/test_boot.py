"""The tests of tests/unit/test_boot.py that start a process or a loopback server (the integration
tier; the pure ones stay there)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.facts.boot import (
    BootKernels,
    boot_state,
)
from rocm_fleet.model.boot import (
    InstalledKernel,
    next_boot,
    reboot_refusal,
)
from unit.test_boot import ADVANCED, FIXTURES, NEW, OLD, OLD_ID


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("xz"),
    reason="needs root (a private mount namespace) and xz",
)
def test_the_command_reads_real_boot_files(tmp_path):
    """The fact's shell command in a mount namespace whose /boot, /lib/modules and
    /etc/default are a made-up host: xz-compressed signed module, plain unsigned one."""
    # /lib/modules may not exist here: /lib (merged /usr) gets an overlay with it on top.
    upper, work = tmp_path / "upper", tmp_path / "work"
    work.mkdir()
    boot, modules, default = tmp_path / "boot", upper / "modules", tmp_path / "default"
    (boot / "grub").mkdir(parents=True)
    shutil.copy(FIXTURES / "grub.cfg.debian12", boot / "grub" / "grub.cfg")
    shutil.copy(FIXTURES / "grubenv.saved", boot / "grub" / "grubenv")
    default.mkdir()
    shutil.copy(FIXTURES / "default-grub.saved", default / "grub")
    for release in (NEW, OLD):
        (boot / f"vmlinuz-{release}").write_bytes(b"MZ")
    (boot / f"initrd.img-{OLD}").write_bytes(b"x" * 5000)
    signed = modules / NEW / "updates" / "dkms" / "amdgpu.ko"
    signed.parent.mkdir(parents=True)
    signed.write_bytes(b"\x7fELF module" + b"PKCS7" * 20 + b"~Module signature appended~\n")
    subprocess.run(["xz", str(signed)], check=True)
    unsigned = modules / OLD / "updates" / "dkms" / "amdgpu.ko"
    unsigned.parent.mkdir(parents=True)
    unsigned.write_bytes(b"\x7fELF module, no signature\n")
    inbox = modules / OLD / "kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst"
    inbox.parent.mkdir(parents=True)
    inbox.write_bytes(b"zstd")
    lib = Path(os.path.realpath("/lib"))
    overlay = f"lowerdir={lib},upperdir={upper},workdir={work}"
    mounts = " && ".join(
        [f"mount -t overlay overlay -o {shlex.quote(overlay)} {lib}"]
        + [f"mount --bind {shlex.quote(str(src))} {dst}"
           for src, dst in ((boot, "/boot"), (default, "/etc/default"))]
    )  # fmt: skip
    script = f"mount --make-rprivate / && {mounts} && sh -c {shlex.quote(BootKernels().command())}"
    out = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, check=True
    ).stdout
    found = boot_state(out.splitlines())
    by_release = {k.release: k for k in found.kernels}
    assert by_release[NEW] == InstalledKernel(NEW, None, f"/lib/modules/{NEW}/updates/dkms/"
                                              "amdgpu.ko.xz", True, False)  # fmt: skip
    assert by_release[OLD] == InstalledKernel(
        OLD, 5000, f"/lib/modules/{OLD}/updates/dkms/amdgpu.ko", False, True
    )
    assert found.grub_default == "saved" and found.cfg_default == "0"
    assert found.grubenv["saved_entry"] == f"{ADVANCED}>{OLD_ID}"
    assert found.boot_free_bytes and found.boot_free_bytes > 0
    assert next_boot(found).kernel == NEW
    assert reboot_refusal(found, "dkms", True, "enrolled") == [
        f"next boot {NEW} (grub.cfg default '0'; /etc/default/grub says 'saved': update-grub "
        f"not run since): no initramfs /boot/initrd.img-{NEW}"
    ]


def test_the_command_is_one_survey_section():
    """The survey runs it as ``{ command; }`` among the others: it must end as one."""
    from rocm_fleet.facts.round_trip import Read, Survey

    command = Survey().command([Read("boot", BootKernels), Read("boot2", BootKernels)])
    assert subprocess.run(["sh", "-n", "-c", command], check=False).returncode == 0
    assert "exit" not in BootKernels().command()
