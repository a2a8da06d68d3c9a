"""Plan-level tests for the kernel, amdgpu driver, Secure Boot and reboot concerns: every
Secure Boot / MOK state, Debian backports and Ubuntu's HWE kernel, the amdgpu repository
per release, headers for Debian's ABI bumps, and the SHA-512 crypt the MOK password is
handed over as."""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import pytest
from pyinfra.api import FileUploadCommand

from rocm_fleet.deploy.driver import header_packages
from rocm_fleet.facts.secureboot import SecureBoot
from rocm_fleet.model import matrix, paths, site_data
from rocm_fleet.model.versions import kernel_key, newer_kernels
from rocm_fleet.operations.secureboot import PENDING, sha512_crypt
from unit.conftest import DRIVERLESS
from unit.surveys import SurveyHost, converged_survey, fresh_survey, plan, script_call

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mokutil"
PASSWORD = "correct horse battery staple"
D12 = "6.1.0-31-amd64"
U24 = "6.8.0-50-generic"
U22 = "5.15.0-130-generic"
REBOOT = "Reboot | Reboot hosts that need it (when allowed)"
# PCI device IDs (tests/fixtures/sysfs, rocm_fleet/pci_ids.py): Navi 31 and Navi 48.
DEVICE = {"gfx1100": "0x744c", "gfx1201": "0x7550"}
NO_REBOOT = {"required": False, "packages": [], "reasons": []}


def sb(name: str) -> dict:
    return SecureBoot().process([*(FIXTURES / name).read_text().splitlines(), "__rc=0"])


# Debian's and Ubuntu's kernel image package versions for the releases used here.
IMAGE_VERSIONS = {D12: "6.1.128-1", "6.1.0-28-amd64": "6.1.119-1", U24: "6.8.0-50.51",
                  U22: "5.15.0-130.140", "6.12.38+deb12-amd64": "6.12.38-1~bpo12+1",
                  "5.10.0-30-amd64": "5.10.218-1", "6.12.48+deb13-amd64": "6.12.48-1"}  # fmt: skip


def kernel_packages(*releases: str) -> dict[str, str]:
    """The ``linux-image-<release>`` packages of installed kernels (InstalledPackages)."""
    return {f"linux-image-{r}": IMAGE_VERSIONS[r] for r in releases}


def host(os_name: str, data: dict, kernel: str = D12, installed=(), sb_state=None,
         key="not_enrolled", pending=False, reboot=None) -> SurveyHost:  # fmt: skip
    """A fresh host running ``kernel`` (and with the ``installed`` kernels) with the GPU of
    ``expected_gfx`` on PCI; Secure Boot and the MOK as mokutil reports them."""
    gfx = data.get("expected_gfx", "gfx1100")
    pci = [
        {
            "slot": "0000:03:00.0",
            "vendor": "0x1002",
            "device": DEVICE[gfx],
            "class": "0x030000",
            "driver": None,
        }
    ]
    survey = fresh_survey(os_name, kernel=kernel, pci=pci, reboot=reboot or NO_REBOOT)
    survey.packages.update(kernel_packages(kernel, *installed))
    if sb_state is not None:
        survey = replace(survey, secure_boot=sb(sb_state))
        for cert, _key in paths.MOK_KEYS.values():
            survey.mok[cert] = {"state": key, "message": ""}
            survey.mok_pending[cert] = {"pending": pending, "fingerprint": "c8:39:a7",
                                         "requests": ["c8:39:a7"] if pending else []}  # fmt: skip
    return SurveyHost(survey)


def planned_for(os_name: str, data: dict, **facts):
    return plan(data, host(os_name, data, **facts))


def text(op) -> str:
    return "\n".join(str(c) for c in op.commands)


RDNA4 = {"rocm_version": "6.4.3", "expected_gfx": "gfx1201", "pytorch_install": False}
DKMS = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_driver": "dkms",
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
    planned = planned_for("debian-12", RDNA4)
    (source,) = planned.find("Add the Debian backports source").commands
    assert script_call(source) == (
        "text-file",
        [
            paths.BACKPORTS_SOURCE,
            "644",
            "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\n"
            "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
        ],
    )
    (pin,) = planned.find("Keep backports at").commands
    assert script_call(pin) == (
        "text-file",
        [
            paths.BACKPORTS_PIN,
            "644",
            "Package: *\nPin: release n=bookworm-backports\nPin-Priority: 100\n",
        ],
    )
    update, _stamp = planned.find("Refresh apt lists after adding backports").commands
    assert script_call(update) == ("apt-get", ["update"])
    (install,) = planned.find("Install the newer kernel").commands
    assert script_call(install) == (
        "newer-kernel",
        [
            D12,
            "bookworm-backports",
            "--no-install-recommends",
            "",  # nothing of rocm-fleet's on hold to release for this install
            "linux-image-amd64",
            "linux-headers-amd64",
        ],
    )
    # Without rocm_reboot: allow, the reboot operation only reports the planned reboot.
    reboot = planned.find("Reboot hosts that need it")
    assert reboot.commands == [] and reboot.name not in planned.changes


def test_backports_use_the_mirror_the_host_already_uses():
    data = {**RDNA4, "rocm_kernel_backports_mirror": None}
    survey = host("debian-12", data).survey
    survey = replace(survey, mirror="http://ftp.de.debian.org/debian")
    (source,) = plan(data, SurveyHost(survey)).find("Add the Debian backports source").commands
    assert "URIs: http://ftp.de.debian.org/debian\n" in script_call(source)[1][2]
    mirrored = {**RDNA4, "rocm_kernel_backports_mirror": "https://mirror.example/debian"}
    (source,) = planned_for("debian-12", mirrored).find("Add the Debian backports").commands
    assert "URIs: https://mirror.example/debian\n" in script_call(source)[1][2]


@pytest.mark.parametrize(
    ("data", "kernel", "expect"),
    [
        ({**RDNA4, "rocm_kernel_backports": "never"}, D12, False),
        ({**RDNA4, "expected_gfx": "gfx1100"}, D12, False),  # 6.0 is enough
        ({**RDNA4, "expected_gfx": "gfx1100", "rocm_kernel_backports": "always"}, D12, True),
        (RDNA4, "6.12.38+deb12-amd64", False),  # already new enough
    ],
)
def test_kernel_backports_auto_always_never(data, kernel, expect):
    planned = planned_for("debian-12", data, kernel=kernel)
    assert any("Install the newer kernel" in n for n in planned.names) is expect


def test_debian_13_has_no_backports_kernel_to_add():
    planned = planned_for(
        "debian-13", {**RDNA4, "rocm_version": "7.2.1"}, kernel="6.12.48+deb13-amd64"
    )
    assert not any("backports" in n or "newer kernel" in n for n in planned.names)


@pytest.mark.parametrize(
    ("os_name", "kernel", "meta"),
    [("ubuntu-22.04", U22, "linux-generic-hwe-22.04"),
     ("ubuntu-24.04", U24, "linux-generic-hwe-24.04")],
)  # fmt: skip
def test_ubuntu_gets_the_hwe_kernel(os_name, kernel, meta):
    planned = planned_for(os_name, RDNA4, kernel=kernel)
    (install,) = planned.find("Install the newer kernel").commands
    assert script_call(install) == ("newer-kernel", [kernel, "", "--install-recommends", "", meta])
    assert not any("backports" in n for n in planned.names)


# --- driver -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "path"),
    [("6.4.3", "amdgpu/6.4.3/ubuntu"), ("6.4.0", "amdgpu/6.4/ubuntu"),
     ("7.0.2", "amdgpu/30.10.2/ubuntu"), ("7.2.0", "amdgpu/30.30/ubuntu"),
     ("7.2.4", "amdgpu/30.30.4/ubuntu"), ("10.0.0", "amdgpu/31.50/ubuntu")],
)  # fmt: skip
def test_amdgpu_repository_per_release(version, path):
    planned = planned_for("ubuntu-24.04", {**DKMS, "rocm_version": version}, kernel=U24)
    (line,) = planned.find("Point apt at AMD's amdgpu driver repository").commands
    assert script_call(line) == (
        "text-file",
        [
            paths.AMDGPU_SOURCE,
            "644",
            f"deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/{path} "
            "noble main\n",
        ],
    )
    update, _stamp = planned.find("Refresh apt lists after a driver source change").commands
    assert script_call(update) == ("apt-get", ["update"])


def test_every_apt_repository_goes_key_source_pin_refresh():
    """The backports, ROCm and amdgpu repositories, added by the one helper
    (deploy/apt_repository.py): each refresh follows its own key, source and pin, and
    touches its own stamp."""
    data = {**DKMS, "rocm_version": "10.0.0", "expected_gfx": "gfx1201"}
    planned = planned_for("debian-12", data)
    at = {name: planned.names.index(planned.find(name).name) for name in (
        "Add the Debian backports source", "Keep backports at", "after adding backports",
        "Install AMD's signing key", "Point apt at the ROCm release", "Pin AMD's repository",
        "after a source or key change", "signing key for the driver",
        "Point apt at AMD's amdgpu driver", "after a driver source change",
    )}  # fmt: skip
    assert list(at.values()) == sorted(at.values())
    stamps = {
        "after adding backports": paths.BACKPORTS_LISTS_STAMP,
        "after a source or key change": paths.APT_LISTS_STAMP,
        "after a driver source change": paths.AMDGPU_LISTS_STAMP,
    }
    for refresh, stamp in stamps.items():
        update, touch = planned.find(refresh).commands
        assert script_call(update) == ("apt-get", ["update"])
        assert str(touch).endswith(f"touch {stamp}")


def test_release_without_a_known_driver_is_refused_for_dkms(upstream_publishes_site_rows):
    data = {**DKMS, **DRIVERLESS, "pytorch_install": False}
    planned = planned_for("ubuntu-24.04", data, kernel=U24)
    # Known while planning: preflight refuses the host, so --dry and the audit say so and
    # nothing (key, source, pin, apt-get update) is changed before the run would stop.
    assert planned.refused and planned.beyond_preflight == []
    assert "does not record which amdgpu driver ROCm 10.9.0 ships" in planned.reason
    # named: AMD's driver list has no entry for it (issue 38)
    assert ("ships (AMD's driver list, ROCm/rocm-docs docs/data/driver-firmware-support.yaml @ "
            "9bcf25db, has no entry for it: its newest is 31.60.0 (ROCm 10.1.0's))"
            in planned.reason)  # fmt: skip
    assert "set rocm_driver: inbox, or a rocm_version whose driver is known" in planned.reason


def test_headers_for_the_running_and_every_newer_kernel():
    installed = ["6.12.38+deb12-amd64", "5.10.0-30-amd64"]
    planned = planned_for("debian-12", DKMS, installed=installed)
    (install,) = planned.find("Install kernel headers and amdgpu-dkms").commands
    assert script_call(install) == (
        "dkms-driver",
        [
            paths.DRIVER_LEDGER,
            "amdgpu-dkms",
            f"linux-headers-{D12}",
            "linux-headers-6.12.38+deb12-amd64",
            "amdgpu-dkms",
        ],
    )
    ubuntu = planned_for("ubuntu-22.04", DKMS, kernel=U22)
    (install,) = ubuntu.find("Install kernel headers and amdgpu-dkms").commands
    assert script_call(install)[1][1:] == ["amdgpu-dkms", f"linux-headers-{U22}",
                                       f"linux-modules-extra-{U22}", "amdgpu-dkms"]  # fmt: skip


def test_debian_abi_bump_is_a_newer_kernel_that_needs_its_headers():
    """Debian 12 bumps the ABI number for each security update: running 6.1.0-28 with
    6.1.0-31 installed (not booted yet), DKMS must build for both."""
    running, installed = "6.1.0-28-amd64", ["6.1.0-28-amd64", "6.1.0-31-amd64"]
    assert kernel_key("6.1.0-31-amd64") == (6, 1, 0, 31) > kernel_key(running) == (6, 1, 0, 28)
    assert newer_kernels(running, installed) == ["6.1.0-31-amd64"]
    row = matrix.distro("debian", "12")
    assert header_packages(row, running, installed) == [
        "linux-headers-6.1.0-28-amd64",
        "linux-headers-6.1.0-31-amd64",
    ]
    planned = planned_for("debian-12", DKMS, kernel=running, installed=["6.1.0-31-amd64"])
    (install,) = planned.find("Install kernel headers and amdgpu-dkms").commands
    assert script_call(install)[1][1:] == ["amdgpu-dkms", "linux-headers-6.1.0-28-amd64",
                                       "linux-headers-6.1.0-31-amd64", "amdgpu-dkms"]  # fmt: skip


def test_inbox_driver_adds_nothing():
    planned = planned_for("debian-12", {**DKMS, "rocm_driver": "inbox"})
    assert not any("amdgpu" in n or "Secure Boot" in n for n in planned.names)
    assert not any(n.startswith("amdgpu driver") for n in planned.names)


# --- dkms -> inbox: what the DKMS driver added goes on the same run ---------------------------

PURGE = "amdgpu driver | Purge amdgpu-dkms and the headers the deploy installed for it"
DRIVER_GONE = [
    PURGE,
    "amdgpu driver | Remove AMD's amdgpu driver source",
    "amdgpu driver | Remove the driver source's apt-lists stamp",
]


def driver_removed(survey: dict) -> dict:
    """``survey`` after the inbox run's driver removal ran: the recorded packages purged
    (what they pulled in is not in the survey), the source, stamp and ledger gone."""
    for name in survey.ledgers[paths.DRIVER_LEDGER]:
        survey.packages.pop(name, None)
    survey.ledgers[paths.DRIVER_LEDGER] = []
    survey.files[paths.AMDGPU_SOURCE] = None
    survey.files[paths.AMDGPU_LISTS_STAMP] = None
    survey = replace(survey, sources=[s for s in survey.sources if s[0] != paths.AMDGPU_SOURCE])
    return survey


def test_back_to_inbox_purges_what_dkms_installed_and_its_source_on_one_run():
    survey = converged_survey(DKMS, "debian-12")
    assert survey.ledgers[paths.DRIVER_LEDGER] == [
        "mokutil", "openssl", f"linux-headers-{D12}", "amdgpu-dkms"
    ]  # fmt: skip
    inbox = {**DKMS, "rocm_driver": "inbox"}
    host = SurveyHost(survey)
    planned = plan(inbox, host)
    # --dry and the audit (the same plan) name each leftover; nothing else drifts, and
    # nothing is read beyond the survey.
    assert planned.changes == DRIVER_GONE
    assert host.extra_reads == []
    (purge,) = planned.find(PURGE).commands
    assert script_call(purge) == (
        "dkms-driver-purge",
        [paths.DRIVER_LEDGER, "amdgpu-dkms", "driver amdgpu-dkms removed",
         "amdgpu-dkms", f"linux-headers-{D12}", "mokutil", "openssl"],
    )  # fmt: skip
    # apt forgets the driver repository's lists once its source is gone.
    refresh = planned.find("Forget the driver repository's package lists")
    assert refresh.conditional and refresh.commands
    # The module stays loaded until a reboot: the reboot says why, and only when allowed.
    allowed = plan(
        {**inbox, "rocm_reboot": "allow"}, SurveyHost(converged_survey(DKMS, "debian-12"))
    )
    assert "( sleep 1 && reboot )" in text(allowed.find("Reboot hosts that need it"))
    assert planned.find("Reboot hosts that need it").commands == []  # rocm_reboot not allowed
    # The classic stream's keyring signs the ROCm repository too: it stays.
    assert not any("keyring" in name for name in planned.changes)


def test_back_to_inbox_a_second_run_changes_nothing_and_has_no_driver_concern():
    survey = driver_removed(converged_survey(DKMS, "debian-12"))
    host = SurveyHost(survey)
    planned = plan({**DKMS, "rocm_driver": "inbox"}, host)
    assert planned.changes == []
    assert host.extra_reads == []
    assert not any(name.startswith("amdgpu driver") for name in planned.names)


def test_an_amdgpu_dkms_the_admin_installed_stays():
    """No ledger entry (the admin installed it, or a deploy before the ledger did): inbox
    leaves the package alone."""
    survey = driver_removed(converged_survey(DKMS, "debian-12"))
    survey.packages["amdgpu-dkms"] = "1:6.12.12.60403-2194681.22.04"
    host = SurveyHost(survey)
    planned = plan({**DKMS, "rocm_driver": "inbox"}, host)
    assert planned.changes == []
    assert host.extra_reads == []
    # A ledger naming only a header: the header goes, amdgpu-dkms stays.
    survey.ledgers[paths.DRIVER_LEDGER] = [f"linux-headers-{D12}"]
    survey.packages[f"linux-headers-{D12}"] = "6.1.128-1"
    planned = plan({**DKMS, "rocm_driver": "inbox"}, SurveyHost(survey))
    (purge,) = planned.find(PURGE).commands
    assert script_call(purge)[1][3:] == [f"linux-headers-{D12}"]


def test_a_core_sdk_host_back_to_inbox_also_loses_the_drivers_own_keyring():
    """A Core SDK release installs repo.radeon.com's keyring for the driver alone; with
    inbox it is the other stream's keyring, which the ROCm repository removes."""
    # (kernel never moved: AMD lists Radeon on 24.04 with HWE 6.17, this host runs GA 6.8)
    data = {**DKMS, "rocm_version": "10.0.0", "expected_gfx": "gfx1100",
            "rocm_kernel_backports": "never"}  # fmt: skip
    survey = converged_survey(data, "ubuntu-24.04")
    assert survey.keyrings[paths.ROCM_KEYRING]
    host = SurveyHost(survey)
    planned = plan({**data, "rocm_driver": "inbox"}, host)
    assert f"ROCm apt repository | Remove the other ROCm stream's keyring {paths.ROCM_KEYRING}" in (
        planned.changes
    )
    assert PURGE in planned.changes
    assert host.extra_reads == []


# --- Secure Boot: every state ---------------------------------------------------------------


def queue(planned):
    return planned.find("Queue the DKMS signing key for MOK enrollment")


@pytest.mark.parametrize(
    "sb_state",
    ["sb_state_disabled.txt", "sb_state_disabled_setup_mode.txt", "sb_state_no_efi.txt",
     "sb_state_unsupported.txt"],
)  # fmt: skip
def test_secure_boot_off_legacy_or_unsupported_needs_no_key(sb_state):
    planned = planned_for("debian-12", DKMS, sb_state=sb_state)
    (tools,) = planned.find("Install mokutil and openssl").commands
    # recorded with the driver's: going back to inbox (or uninstalling) purges them again
    assert script_call(tools) == ("packages-install", [paths.DRIVER_LEDGER, "mokutil", "openssl"])
    assert planned.find("Create the DKMS signing key").commands == []
    assert queue(planned).commands == []


def test_secure_boot_on_without_a_key_creates_and_queues_it(monkeypatch):
    monkeypatch.setenv("ROCM_FLEET_MOK_PASSWORD", PASSWORD)
    planned = planned_for("debian-12", DKMS, sb_state="sb_state_enabled.txt", key="missing")
    (create,) = planned.find("Create the DKMS signing key").commands
    assert script_call(create) == (
        "signing-key",
        ["/var/lib/dkms/mok.pub", "/var/lib/dkms/mok.key"],
    )
    cmds = queue(planned).commands
    (upload,) = [c for c in cmds if isinstance(c, FileUploadCommand)]
    hashed = upload.src.getvalue().strip()
    assert hashed.startswith("$6$") and upload.dest == "/run/rocm-fleet/mok-import.hash"
    (importing,) = [script_call(c) for c in cmds[2:3]]
    assert importing == ("mok-import", ["/var/lib/dkms/mok.pub", "/run/rocm-fleet/mok-import.hash"])
    everything = " ".join(str(c) for op in planned.ops for c in op.commands)
    assert PASSWORD not in everything
    # The queued key needs the reboot into MokManager: with rocm_reboot: allow it is planned.
    allowed = planned_for(
        "debian-12",
        {**DKMS, "rocm_reboot": "allow"},
        sb_state="sb_state_enabled.txt",
        key="missing",
    )
    assert "( sleep 1 && reboot )" in text(allowed.find("Reboot hosts that need it"))


def test_ubuntu_uses_update_secureboot_policy_and_shims_cert(monkeypatch):
    monkeypatch.setenv("ROCM_FLEET_MOK_PASSWORD", PASSWORD)
    planned = planned_for(
        "ubuntu-24.04", DKMS, kernel=U24, sb_state="sb_state_enabled.txt", key="missing"
    )
    (tools,) = planned.find("Install mokutil and openssl").commands
    assert script_call(tools) == ("packages-install", [paths.DRIVER_LEDGER, "mokutil", "openssl"])
    # shim-signed (update-secureboot-policy) is the boot chain: never recorded to be purged
    (shim,) = planned.find("Install shim-signed").commands
    assert script_call(shim) == ("packages-install", ["", "shim-signed"])
    assert text(planned.find("Create the DKMS signing key")) == "update-secureboot-policy --new-key"
    (importing,) = [script_call(c) for c in queue(planned).commands[2:3]]
    assert importing[1][0] == "/var/lib/shim-signed/mok/MOK.der"


@pytest.mark.parametrize(
    ("key", "pending"), [("enrolled", False), ("pending", False), ("enrolled", True)]
)
def test_enrolled_or_pending_key_is_not_queued_again(key, pending):
    # ("enrolled", True): older mokutil says "already enrolled" for a queued key; --list-new
    # shows it is only pending.
    planned = planned_for(
        "debian-12", DKMS, sb_state="sb_state_enabled.txt", key=key, pending=pending
    )
    assert queue(planned).commands == []


def test_blocked_key_refuses_the_host_in_preflight():
    planned = planned_for("debian-12", DKMS, sb_state="sb_state_enabled.txt", key="blocked")
    assert planned.refused and planned.beyond_preflight == []
    assert "/var/lib/dkms/mok.pub is blocked by the firmware" in planned.reason


def test_a_key_secure_boot_is_off_for_is_no_refusal():
    planned = planned_for("debian-12", DKMS, sb_state="sb_state_disabled.txt", key="blocked")
    assert not planned.refused


def test_no_password_refuses_the_host_naming_the_variable(monkeypatch):
    monkeypatch.delenv("FLEET_MOK", raising=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    data = {**DKMS, "rocm_mok_password_env": "FLEET_MOK"}
    planned = planned_for("debian-12", data, sb_state="sb_state_enabled.txt")
    assert planned.refused and planned.beyond_preflight == []
    assert "set the environment variable FLEET_MOK where pyinfra runs" in planned.reason
    monkeypatch.setenv("FLEET_MOK", "x" * 300)
    planned = planned_for("debian-12", data, sb_state="sb_state_enabled.txt")
    assert "the MOK password in $FLEET_MOK must be 1-256 characters" in planned.reason


def test_pending_message_text():
    assert PENDING == "MOK enrollment pending: confirm it at the console on the next boot"


# --- reboots ----------------------------------------------------------------------------------


def test_reboot_only_when_allowed_and_needed_n_at_a_time():
    needs = {"required": True, "packages": ["amdgpu-dkms"], "reasons": ["new driver amdgpu-dkms"]}
    data = {**DKMS, "rocm_reboot": "allow", "rocm_reboot_parallel": 3}
    planned = planned_for("debian-12", data, reboot=needs)
    reboot = planned.find("Reboot hosts that need it")
    assert "( sleep 1 && reboot )" in text(reboot)
    # _parallel is one of the operation's shared (all hosts) arguments: the batch size.
    assert planned.state.get_op_meta(reboot.meta._hash).global_arguments["_parallel"] == 3
    inbox = {**DKMS, "rocm_driver": "inbox", "rocm_reboot": "allow"}
    assert planned_for("debian-12", inbox).find("Reboot hosts").commands == []  # none needed
    never = {**DKMS, "rocm_reboot": "never"}
    assert planned_for("debian-12", never, reboot=needs).find("Reboot hosts").commands == []


def test_a_change_this_run_plans_is_a_reason_to_reboot():
    """A kernel this run installs isn't on the host yet: planning reboots for it anyway."""
    data = {**RDNA4, "rocm_reboot": "allow"}
    planned = planned_for("debian-12", data)
    assert "( sleep 1 && reboot )" in text(planned.find("Reboot hosts that need it"))


def test_matrix_minimum_kernels():
    assert matrix.inbox_min_kernel(["gfx1201"]) == "6.12"
    assert matrix.inbox_min_kernel(["gfx1100", "gfx1200"]) == "6.12"
    assert matrix.inbox_min_kernel(["gfx942"]) is None
    assert kernel_key("6.12.95+deb12-amd64") > kernel_key("6.12")
    assert kernel_key("6.12") == (6, 12, 0, 0) and kernel_key("garbage") == ()
    driverless = site_data.load(DRIVERLESS["rocm_matrix_data"]).release("10.9.0")
    assert matrix.amdgpu_repo_version(driverless) is None
