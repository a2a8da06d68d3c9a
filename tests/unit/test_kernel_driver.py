"""Plan-level tests for tasks/kernel.py, driver.py, secureboot.py and reboot.py: every
Secure Boot / MOK state, Ubuntu's HWE kernel, the amdgpu repository per release, and the
SHA-512 crypt the MOK password is handed over as."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from pyinfra.api import FileUploadCommand
from pyinfra.facts.server import LinuxDistribution

from rocm_fleet import matrix
from rocm_fleet.facts import (
    InstalledKernels,
    MokKeyState,
    MokPending,
    RebootRequired,
    RunningKernel,
    SecureBoot,
)
from rocm_fleet.secureboot import PENDING, sha512_crypt
from unit.surveys import fresh_survey
from unit.test_plan import FreshHost, plan_ops, written

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "mokutil"
PASSWORD = "correct horse battery staple"
U24 = "6.8.0-50-generic"
REBOOT = "Reboot | Reboot hosts that need it (when allowed)"


def sb(name: str) -> dict:
    return SecureBoot().process((FIXTURES / name).read_text().splitlines())


class Host(FreshHost):
    def __init__(self, os_name, kernel="6.1.0-50-amd64", installed=(),
                 sb_state="sb_state_disabled.txt", key="not_enrolled", pending=False,
                 reboot=None, packages=None, pci_device="0x744c"):  # fmt: skip
        super().__init__(os_name, packages=packages)
        self.kernel, self.pci_device = kernel, pci_device
        self.facts[RunningKernel] = kernel
        self.facts[InstalledKernels] = list(installed)
        self.facts[SecureBoot] = sb(sb_state)
        self.facts[MokKeyState] = {"state": key, "message": ""}
        self.facts[MokPending] = {"pending": pending, "fingerprint": "aa", "requests": []}
        self.facts[RebootRequired] = reboot or RebootRequired.default()

    def __call__(self, fact, *args, **kwargs):
        if fact.__name__ == "NodeSurvey":  # preflight's read: this host's kernel and GPU
            pci = [{"slot": "0000:03:00.0", "device": self.pci_device, "class": "0x030000",
                    "driver": None}]  # fmt: skip
            release_meta = self.facts[LinuxDistribution]["release_meta"]
            return fresh_survey(release_meta, kernel=self.kernel, kernels=[self.kernel], pci=pci)
        return super().__call__(fact, *args, **kwargs)


def plan(os_name: str, data: dict, monkeypatch=None, **facts) -> dict[str, list]:
    gfx = data.get("expected_gfx")
    facts.setdefault("pci_device", "0x7550" if gfx == "gfx1201" else "0x744c")  # pci.ids
    ops = plan_ops(data, Host(os_name, **facts))
    return {name: (commands, meta) for name, commands, meta in ops}


def commands(planned, fragment):
    (name,) = [n for n in planned if fragment in n]
    return planned[name][0]


def text(cmds) -> str:
    return "\n".join(str(c) for c in cmds)


RDNA4 = {"rocm_version": "6.4.3", "expected_gfx": "gfx1201", "pytorch_install": False}
DKMS = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "driver": "dkms",
        "pytorch_install": False}  # fmt: skip


# --- SHA-512 crypt ----------------------------------------------------------------------------


def test_sha512_crypt_matches_the_reference_vector_and_glibc():
    # Ulrich Drepper's SHA-crypt specification, test vector 1 (default 5000 rounds).
    assert sha512_crypt("Hello world!", "saltstring") == (
        "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbY"
        "EdFCoEOfaS35inz1"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        crypt = pytest.importorskip("crypt")
    for password in ("x", PASSWORD, "é" * 80, "p" * 256):
        hashed = sha512_crypt(password)
        assert hashed.startswith("$6$") and len(hashed.split("$")[2]) == 16
        assert crypt.crypt(password, hashed) == hashed


# --- kernel -----------------------------------------------------------------------------------


def test_rdna4_on_debian_12_gets_the_backports_kernel():
    planned = plan("debian-12", RDNA4)
    assert written(commands(planned, "Add the Debian backports source")) == (
        "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
    assert written(commands(planned, "Keep backports at")) == (
        "Package: *\nPin: release n=bookworm-backports\nPin-Priority: 100\n"
    )
    install = text(commands(planned, "Install the newer kernel"))
    assert "install --no-remove --no-install-recommends -t bookworm-backports" in install
    assert "linux-image-amd64 linux-headers-amd64" in install
    assert "/run/reboot-required" in install
    # Without reboot: allow, the reboot operation only reports.
    assert commands(planned, "Reboot hosts that need it") == []


@pytest.mark.parametrize(
    ("data", "kernel", "expect"),
    [
        ({**RDNA4, "kernel_backports": "never"}, "6.1.0-50-amd64", False),
        ({**RDNA4, "expected_gfx": "gfx1100"}, "6.1.0-50-amd64", False),  # 6.0 is enough
        (
            {**RDNA4, "expected_gfx": "gfx1100", "kernel_backports": "always"},
            "6.1.0-50-amd64",
            True,
        ),
        (RDNA4, "6.12.95+deb12-amd64", False),  # already new enough
    ],
)
def test_kernel_backports_auto_always_never(data, kernel, expect):
    planned = plan("debian-12", data, kernel=kernel)
    assert any("Install the newer kernel" in n for n in planned) is expect


def test_debian_13_has_no_backports_kernel_to_add():
    planned = plan("debian-13", {**RDNA4, "rocm_version": "7.2.1"}, kernel="6.12.48+deb13-amd64")
    assert not any("backports" in n or "newer kernel" in n for n in planned)


@pytest.mark.parametrize(
    ("os_name", "meta"),
    [("ubuntu-22.04", "linux-generic-hwe-22.04"), ("ubuntu-24.04", "linux-generic-hwe-24.04")],
)
def test_ubuntu_gets_the_hwe_kernel(os_name, meta):
    kernel = "5.15.0-130-generic" if os_name == "ubuntu-22.04" else "6.8.0-50-generic"
    planned = plan(os_name, RDNA4, kernel=kernel)
    install = text(commands(planned, "Install the newer kernel"))
    assert f"install --no-remove --install-recommends  {meta}" in install
    assert not any("backports" in n for n in planned)


# --- driver -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "path"),
    [("6.4.3", "amdgpu/6.4.3/ubuntu"), ("6.4.0", "amdgpu/6.4/ubuntu"),
     ("7.0.2", "amdgpu/30.10.2/ubuntu"), ("7.2.0", "amdgpu/30.30.0/ubuntu")],
)  # fmt: skip
def test_amdgpu_repository_per_release(version, path):
    data = {**DKMS, "rocm_version": version}
    planned = plan("ubuntu-24.04", data, kernel=U24)
    line = written(commands(planned, "Point apt at AMD's amdgpu driver repository"))
    assert line == (
        f"deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/{path} "
        "noble main\n"
    )


def test_release_without_a_known_driver_is_refused_for_dkms():
    planned = plan("ubuntu-24.04", {**DKMS, "rocm_version": "7.2.1"}, kernel=U24)
    assert "does not record which amdgpu driver ROCm 7.2.1 ships" in text(
        commands(planned, "Refuse driver: dkms")
    )


def test_headers_for_the_running_and_every_newer_kernel():
    installed = ["6.1.0-50-amd64", "6.12.95+deb12-amd64", "5.10.0-30-amd64"]
    planned = plan("debian-12", DKMS, installed=installed)
    install = text(commands(planned, "Install kernel headers and amdgpu-dkms"))
    assert "linux-headers-6.1.0-50-amd64 linux-headers-6.12.95+deb12-amd64 amdgpu-dkms" in install
    assert "5.10.0-30" not in install and "--no-remove" in install
    ubuntu = plan("ubuntu-22.04", DKMS, kernel="6.8.0-50-generic")
    assert "linux-modules-extra-6.8.0-50-generic" in text(
        commands(ubuntu, "Install kernel headers and amdgpu-dkms")
    )


def test_inbox_driver_adds_nothing():
    planned = plan("debian-12", {**DKMS, "driver": "inbox"})
    assert not any("amdgpu" in n or "Secure Boot" in n for n in planned)


# --- Secure Boot: every state ---------------------------------------------------------------


def queue(planned):
    return commands(planned, "Queue the DKMS signing key for MOK enrollment")


@pytest.mark.parametrize(
    "sb_state",
    ["sb_state_disabled.txt", "sb_state_disabled_setup_mode.txt", "sb_state_no_efi.txt",
     "sb_state_unsupported.txt"],
)  # fmt: skip
def test_secure_boot_off_legacy_or_unsupported_needs_no_key(sb_state):
    planned = plan("debian-12", DKMS, sb_state=sb_state)
    assert commands(planned, "Create the DKMS signing key") == []
    assert queue(planned) == []


def test_secure_boot_on_without_a_key_creates_and_queues_it(monkeypatch):
    monkeypatch.setenv("ROCM_FLEET_MOK_PASSWORD", PASSWORD)
    planned = plan("debian-12", DKMS, sb_state="sb_state_enabled.txt", key="missing")
    create = text(commands(planned, "Create the DKMS signing key"))
    assert 'openssl req -new -x509 -nodes -days 36500 -subj "/CN=DKMS module signing key"' in create
    assert "-keyout /var/lib/dkms/mok.key" in create and "-out /var/lib/dkms/mok.pub" in create
    cmds = queue(planned)
    (upload,) = [c for c in cmds if isinstance(c, FileUploadCommand)]
    hashed = upload.src.getvalue().strip()
    assert hashed.startswith("$6$") and upload.dest == "/run/rocm-fleet/mok-import.hash"
    assert "mokutil --import /var/lib/dkms/mok.pub --hash-file /run/rocm-fleet/mok-import.hash" in (
        text(cmds)
    )
    assert PASSWORD not in text(cmds) and PASSWORD not in str(planned)


def test_ubuntu_uses_update_secureboot_policy_and_shims_cert(monkeypatch):
    monkeypatch.setenv("ROCM_FLEET_MOK_PASSWORD", PASSWORD)
    planned = plan("ubuntu-24.04", DKMS, sb_state="sb_state_enabled.txt", key="missing", kernel=U24)
    assert text(commands(planned, "Create the DKMS signing key")) == (
        "update-secureboot-policy --new-key"
    )
    assert "mokutil --import /var/lib/shim-signed/mok/MOK.der" in text(queue(planned))


@pytest.mark.parametrize(
    ("key", "pending"), [("enrolled", False), ("pending", False), ("enrolled", True)]
)
def test_enrolled_or_pending_key_is_not_queued_again(key, pending):
    # ("enrolled", True): older mokutil says "already enrolled" for a queued key; --list-new
    # shows it is only pending.
    planned = plan("debian-12", DKMS, sb_state="sb_state_enabled.txt", key=key, pending=pending)
    assert queue(planned) == []


def test_blocked_key_fails_the_host():
    planned = plan("debian-12", DKMS, sb_state="sb_state_enabled.txt", key="blocked")
    assert "is blocked" in text(queue(planned))


def test_no_password_fails_the_host_naming_the_variable(monkeypatch):
    monkeypatch.delenv("ROCM_FLEET_MOK_PASSWORD", raising=False)
    data = {**DKMS, "mok_password_env": "FLEET_MOK"}
    planned = plan("debian-12", data, sb_state="sb_state_enabled.txt")
    assert "set the environment variable FLEET_MOK" in text(queue(planned))


def test_pending_message_text():
    assert PENDING == "MOK enrollment pending: confirm it at the console on the next boot"


# --- reboots ----------------------------------------------------------------------------------


def test_reboot_only_when_allowed_and_needed_n_at_a_time():
    needs = {"required": True, "packages": ["amdgpu-dkms"], "reasons": ["new driver amdgpu-dkms"]}
    data = {**DKMS, "reboot": "allow", "reboot_parallel": 3}
    planned = plan("debian-12", data, reboot=needs)
    cmds, op_data = planned[REBOOT]
    assert "( sleep 1 && reboot )" in text(cmds)
    assert op_data.global_arguments["_parallel"] == 3
    inbox = {**DKMS, "driver": "inbox", "reboot": "allow"}
    assert plan("debian-12", inbox)[REBOOT][0] == []  # nothing needs one
    assert plan("debian-12", {**DKMS, "reboot": "never"}, reboot=needs)[REBOOT][0] == []


def test_matrix_minimum_kernels():
    assert matrix.inbox_min_kernel(["gfx1201"]) == "6.12"
    assert matrix.inbox_min_kernel(["gfx1100", "gfx1200"]) == "6.12"
    assert matrix.inbox_min_kernel(["gfx942"]) is None
    assert matrix.kernel_version_key("6.12.95+deb12-amd64") > matrix.kernel_version_key("6.12")
    assert matrix.amdgpu_repo_version(matrix.release("7.2.1")) is None
