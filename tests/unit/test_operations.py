"""The operation cases that need Python: every other case is data, one file per case in
tests/unit/operations/<module.op>/ (facts in, commands out; its runner says the format).

Here: a FileUploadCommand or FunctionCommand (the MOK password's hash, a reboot and its wait),
a fact whose answer is an object (the boot kernels), the process's environment (no MOK
password), and the deploy's plan (a gate, preflight). Cases run with ``unit.opcases.run_op``;
the scripts that write files are run under dash in tests/integration/test_operations.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyinfra.api import FileUploadCommand, FunctionCommand

from rocm_fleet.facts.apt import InstalledPackages
from rocm_fleet.facts.boot import BootKernels
from rocm_fleet.facts.secureboot import MokKeyState, MokPending, SecureBoot
from rocm_fleet.facts.system import RebootRequired
from rocm_fleet.model import paths, streams
from rocm_fleet.model.boot import BootState, InstalledKernel
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.operations import reboot, secureboot
from unit.opcases import run_op
from unit.surveys import SurveyHost, fact_key, fresh_survey, plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DASH = shutil.which("dash") or shutil.which("sh")

FINGERPRINT = streams.CLASSIC.key_fingerprint
KEY_URL = streams.CLASSIC_REPOSITORY.key_url
DEBIAN_CERT = paths.MOK_KEYS["debian"][0]
PASSWORD = "correct horse battery staple"


def sb(name: str, rc: int = 0) -> dict:
    """SecureBoot's answer for a mokutil --sb-state transcript (tests/fixtures/mokutil)."""
    text = (FIXTURES / "mokutil" / name).read_text()
    return SecureBoot().process([*text.splitlines(), f"__rc={rc}"])


# gpg --with-colons --show-keys of a key shaped like AMD's: an RSA primary key and a subkey,
# each with its own fpr line: what verified-keyring.sh reads from gpg.
GPG_COLONS = """\
pub:-:4096:1:9386B48A1A693C5C:1471986011:::-:::scSC::::::23::0:
fpr:::::::::CA8BB4727A47B4D09B4EE8969386B48A1A693C5C:
uid:-::::1471986011::2D7C1A2B::James Adrian Edwards (ROCm Release Manager)::::::::::0:
sub:-:4096:1:1C4B6C0F6C2B0B7E:1471986011::::::e::::::23:
fpr:::::::::5C1D1AF1AF1B6B0C6B7E0D8E1C4B6C0F6C2B0B7E:
"""


# --- apt.apt_update ---------------------------------------------------------------------------


def test_apt_update_runs_only_after_a_source_was_removed():
    """apt_update has no noop of its own: removal gates it with ``_if`` on the source
    removals (both streams' and the driver's), which on a host without them change nothing."""
    clean = SurveyHost(HostSurvey(), other={InstalledPackages: {"curl": "7.88.1-10+deb12u14"}})
    planned = plan({"rocm_version": "6.4.3", "rocm_state": "absent"}, clean)
    update = planned.find("Forget AMD's package lists")
    assert update.conditional and update.name not in planned.changes
    node = planned.state.inventory.get_host("node")
    gate = planned.state.get_op_data_for_host(node, update.meta._hash).global_arguments["_if"]
    removals = [op for op in planned.ops if "Remove the ROCm source" in op.name]
    removals.append(planned.find("Remove the amdgpu driver"))
    assert len(removals) == 3
    for op in removals:
        assert op.commands == []
        planned.run(op)
    assert gate() is False


# --- secureboot.mok_enrolled ------------------------------------------------------------------


def mok_facts(state: str) -> dict:
    return {
        SecureBoot: sb("sb_state_enabled.txt"),
        fact_key(MokKeyState, path=DEBIAN_CERT): {
            "state": state,
            "message": f"{DEBIAN_CERT} is {state}",
        },
        fact_key(MokPending, path=DEBIAN_CERT): {
            "pending": False,
            "fingerprint": "c8:39:a7",
            "requests": [],
        },
    }


@pytest.mark.parametrize("state", ["not_enrolled", "missing"])
def test_mok_enrolled_queues_the_key_with_only_the_password_hash(monkeypatch, state):
    monkeypatch.setenv("FLEET_MOK", PASSWORD)
    result = run_op(
        secureboot.mok_enrolled, mok_facts(state), cert=DEBIAN_CERT, password_env="FLEET_MOK"
    )
    mkdir, upload, _import, announce = result.commands
    assert str(mkdir) == f"install -d -m 0700 {paths.RUN_DIR}"
    assert isinstance(upload, FileUploadCommand) and upload.dest == paths.MOK_HASH
    hashed = upload.src.getvalue()
    assert hashed.startswith("$6$") and hashed.endswith("\n")
    assert secureboot.sha512_crypt(PASSWORD, hashed.split("$")[2]) == hashed.strip()
    assert result.scripts == [("mok-import", [DEBIAN_CERT, paths.MOK_HASH])]
    assert isinstance(announce, FunctionCommand)
    assert PASSWORD not in " ".join(str(c) for c in result.commands)


def test_mok_enrolled_without_a_password_fails_the_host(monkeypatch):
    monkeypatch.delenv("FLEET_MOK", raising=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    result = run_op(
        secureboot.mok_enrolled,
        mok_facts("not_enrolled"),
        cert=DEBIAN_CERT,
        password_env="FLEET_MOK",
    )
    assert result.texts[-1].startswith("echo ") and result.texts[-1].endswith(" >&2 && exit 1")
    assert "set the environment variable FLEET_MOK where pyinfra runs" in result.texts[-1]


# --- reboot.reboot_when_needed ----------------------------------------------------------------

NO_REBOOT = {"required": False, "packages": [], "reasons": []}
NEEDS = {"required": True, "packages": ["amdgpu-dkms"], "reasons": ["new driver amdgpu-dkms"]}
NEXT = "6.12.43+deb12-amd64"
KO = f"/lib/modules/{NEXT}/updates/dkms/amdgpu.ko.xz"


def boot(dkms_module: str | None = KO) -> BootState:
    """BootKernels of a host without grub.cfg whose newest kernel is NEXT."""
    kernels = (
        InstalledKernel(NEXT, 70 * 2**20, dkms_module, dkms_module is not None, True),
        InstalledKernel("6.1.0-38-amd64", 60 * 2**20, "/m/amdgpu.ko", True, True),
    )
    return BootState(kernels=kernels, boot_free_bytes=300 * 2**20)


def reboot_op(fact: dict, ready: bool = True, executing: bool = False, **arguments):
    facts = {RebootRequired: fact, BootKernels: boot(KO if ready else None),
             SecureBoot: sb("sb_state_disabled.txt")}  # fmt: skip
    arguments = {"allowed": True, "timeout": 600, "planned": [], "driver": "dkms",
                 "mok_cert": DEBIAN_CERT, **arguments}  # fmt: skip
    return run_op(reboot.reboot_when_needed, facts, executing=executing, **arguments)


def test_reboot_not_allowed_only_reports():
    result = reboot_op(NEEDS, allowed=False)
    assert result.commands == []
    assert result.noops == [
        "needs a reboot (new driver amdgpu-dkms), not allowed (rocm_reboot: allow)"
    ]


def test_reboot_not_allowed_lists_what_is_not_ready_for_the_end_report():
    reboot.NEEDS_REBOOT.clear()
    reboot_op(NEEDS, ready=False, allowed=False, executing=True)
    (reason, unsafe) = reboot.NEEDS_REBOOT.pop("node")
    assert reason == "new driver amdgpu-dkms"
    assert unsafe.startswith(f"not safe yet: next boot {NEXT} (newest installed kernel")
    assert "amdgpu-dkms is not built" in unsafe


@pytest.mark.parametrize(
    ("fact", "planned"),
    [(NEEDS, []), (NO_REBOOT, ["new kernel (rocm_kernel_backports: always)"])],
    ids=["marked on the host", "planned by this run"],
)
def test_reboot_allowed_reboots_detached_and_waits(fact, planned):
    result = reboot_op(fact, planned=planned)
    remember, command, wait = result.commands
    assert isinstance(remember, FunctionCommand) and isinstance(wait, FunctionCommand)
    assert str(command) == "( sleep 1 && reboot ) </dev/null >/dev/null 2>&1 &"
    assert wait.args == (600,)


@pytest.mark.parametrize("executing", [False, True], ids=["planning", "executing"])
def test_reboot_into_an_unready_kernel_is_refused_and_fails_the_host(executing):
    reboot.REFUSED.clear()
    result = reboot_op(NEEDS, ready=False, executing=executing)
    (refuse,) = result.texts
    assert refuse.startswith("echo ") and refuse.endswith(" >&2 && exit 1")
    assert "reboot refused (new driver amdgpu-dkms): next boot 6.12.43+deb12-amd64" in refuse
    assert f"linux-headers-{NEXT}" in refuse
    assert reboot.REFUSED.pop("node")[0].startswith(f"next boot {NEXT}")


def test_reboot_planned_after_this_runs_changes_is_checked_again_when_executing():
    # While planning, a driver this run installs isn't built yet: the reboot stays planned...
    planned = ["new driver amdgpu-dkms"]
    result = reboot_op(NO_REBOOT, ready=False, planned=planned)
    assert len(result.commands) == 3 and "reboot" in str(result.commands[1])
    # ... and is refused at execution if the build didn't happen.
    result = reboot_op(NEEDS, ready=False, planned=planned, executing=True)
    assert "reboot refused" in result.texts[0]
    assert len(reboot_op(NEEDS, planned=planned, executing=True).commands) == 3


# --- preflight --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mirror", "refused"), [("http://deb.debian.org/debian", False), (None, True)]
)
def test_backports_without_a_debian_mirror_is_refused_in_preflight(mirror, refused):
    """Known while planning (an RDNA4 card on a Debian 12 host that names no Debian mirror):
    preflight refuses the host, so nothing runs; with a mirror the backports are planned."""
    survey = fresh_survey(
        "debian-12",
        kernel="6.1.0-31-amd64",
        mirror=mirror,
        pci=[
            {
                "slot": "0000:03:00.0",
                "vendor": "0x1002",
                "device": "0x7550",
                "class": "0x030000",
                "driver": None,
            }
        ],
    )
    data = {"rocm_version": "6.4.3", "expected_gfx": "gfx1201", "pytorch_install": False}
    planned = plan(data, SurveyHost(survey))
    assert planned.refused is refused
    if refused:
        assert planned.beyond_preflight == []
        assert "no Debian mirror is named in" in planned.reason
        assert "set rocm_kernel_backports_mirror" in planned.reason
    else:
        assert any("backports" in name.lower() for name in planned.names)
