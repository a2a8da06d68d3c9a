"""Every custom operation (rocm_fleet.operations.*): facts in, commands out.

Each operation gets at least one case where the host already is as wanted (a noop with its
reason and no command) and one where it isn't (the script it runs and its arguments, or
the command). The facts are the fact classes' real answers (see tests/unit/facts/); cases are
run with ``unit.opcases.run_op``. The scripts that write files are also run under dash.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyinfra.api import FileUploadCommand, FunctionCommand, OperationValueError
from pyinfra.facts.files import Directory, FileContents
from pyinfra.facts.server import KernelVersion

from rocm_fleet.facts.apt import (
    DpkgInterrupted,
    HeldPackages,
    InstalledPackages,
    KeyringFingerprints,
)
from rocm_fleet.facts.boot import BootKernels
from rocm_fleet.facts.files import FileDigest, Ledger
from rocm_fleet.facts.gpu import KfdNodes, RocmAgents
from rocm_fleet.facts.python import TorchInfo, VenvDistributions
from rocm_fleet.facts.secureboot import MokKeyState, MokPending, SecureBoot
from rocm_fleet.facts.system import NvidiaStack, RebootRequired
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.boot import BootState, InstalledKernel
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.operations import apt, files, gpu, host, kernel, python, reboot, secureboot, users
from rocm_fleet.operations.secureboot import PENDING
from unit.opcases import run_op
from unit.surveys import SurveyHost, checked, digest, fact_key, fresh_survey, plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DASH = shutil.which("dash") or shutil.which("sh")

SOURCE = paths.ROCM_SOURCE
KEYRING = paths.ROCM_KEYRING
LINE = (
    "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
    "https://repo.radeon.com/rocm/apt/6.4.3 jammy main\n"
)
FINGERPRINT = matrix.CLASSIC.key_fingerprint
KEY_URL = matrix.CLASSIC_REPOSITORY.key_url
VENV = paths.DEFAULT_VENV
MARKER = paths.venv_marker(VENV)
PYTHON = paths.venv_python(VENV)
INDEX = "https://download.pytorch.org/whl/rocm6.4"
WHEELS = {"torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+rocm6.4", "torchaudio": "2.9.1+rocm6.4"}
PIP = "23.0.1"
DEBIAN_CERT, DEBIAN_KEY = paths.MOK_KEYS["debian"]
UBUNTU_CERT, UBUNTU_KEY = paths.MOK_KEYS["ubuntu"]
PASSWORD = "correct horse battery staple"


def sb(name: str, rc: int = 0) -> dict:
    """SecureBoot's answer for a mokutil --sb-state transcript (tests/fixtures/mokutil)."""
    text = (FIXTURES / "mokutil" / name).read_text()
    return SecureBoot().process([*text.splitlines(), f"__rc={rc}"])


# --- files.text_file --------------------------------------------------------------------------


def test_text_file_up_to_date_is_a_noop():
    result = run_op(
        files.text_file,
        {fact_key(FileDigest, path=SOURCE): digest(LINE)},
        path=SOURCE,
        content=LINE,
    )
    assert result.commands == []
    assert result.noops == [f"{SOURCE} is up to date"]
    assert result.reads == [fact_key(FileDigest, path=SOURCE)]


@pytest.mark.parametrize(
    "current",
    [None, digest(LINE.replace("6.4.3", "6.4.2")), digest(LINE, mode="600")],
    ids=["missing", "other content", "other mode"],
)
def test_text_file_writes_missing_changed_or_wrong_mode_file(current):
    result = run_op(
        files.text_file, {fact_key(FileDigest, path=SOURCE): current}, path=SOURCE, content=LINE
    )
    assert result.noops == []
    assert result.scripts == [("text-file", [SOURCE, "644", LINE])]


def test_text_file_absent_removes_or_is_a_noop():
    gone = run_op(
        files.text_file, {fact_key(FileDigest, path=SOURCE): None}, path=SOURCE, present=False
    )
    assert (gone.commands, gone.noops) == ([], [f"{SOURCE} is absent"])
    there = run_op(
        files.text_file,
        {fact_key(FileDigest, path=SOURCE): digest(LINE)},
        path=SOURCE,
        present=False,
    )
    assert there.texts == [checked(SOURCE) + f"rm -f {SOURCE}"]


# --- apt.debian_packages ----------------------------------------------------------------------

PREREQUISITES = ["ca-certificates", "curl", "gnupg"]
DEBIAN_PACKAGES = {"ca-certificates": "20230311", "curl": "7.88.1-10+deb12u14",
                   "gnupg": "2.2.40-1.1", "libc6": "2.36-9+deb12u9"}  # fmt: skip


def test_debian_packages_installed_is_a_noop():
    result = run_op(
        apt.debian_packages,
        {InstalledPackages: DEBIAN_PACKAGES},
        packages=PREREQUISITES,
        ledger=paths.PACKAGE_LEDGER,
    )
    assert result.commands == []
    assert result.noops == ["ca-certificates, curl, gnupg installed"]


def test_debian_packages_installs_only_the_missing_ones_and_records_them():
    installed = {"curl": "7.88.1-10+deb12u14", "libc6": "2.36-9+deb12u9"}
    result = run_op(
        apt.debian_packages,
        {InstalledPackages: installed},
        packages=PREREQUISITES,
        ledger=paths.PACKAGE_LEDGER,
    )
    assert result.scripts == [
        ("packages-install", [paths.PACKAGE_LEDGER, "ca-certificates", "gnupg"])
    ]
    unrecorded = run_op(
        apt.debian_packages, {InstalledPackages: installed}, packages=["mokutil", "openssl"]
    )
    assert unrecorded.scripts == [("packages-install", ["", "mokutil", "openssl"])]


def test_debian_packages_absent_purges_what_the_ledger_recorded_and_is_still_installed():
    facts = {
        InstalledPackages: DEBIAN_PACKAGES,
        fact_key(FileContents, path=paths.PACKAGE_LEDGER): [
            "gnupg",
            "python3-venv",
            "ca-certificates",
            "",
        ],
    }
    result = run_op(apt.debian_packages, facts, ledger=paths.PACKAGE_LEDGER, present=False)
    assert result.scripts == [
        ("ledger-purge", [paths.PACKAGE_LEDGER, "ca-certificates", "gnupg"])
    ]  # python3-venv was removed by hand already


@pytest.mark.parametrize("ledger", [None, ["python3-venv"]], ids=["no ledger", "all gone"])
def test_debian_packages_absent_with_nothing_left_is_a_noop(ledger):
    facts = {
        InstalledPackages: DEBIAN_PACKAGES,
        fact_key(FileContents, path=paths.PACKAGE_LEDGER): ledger,
    }
    result = run_op(apt.debian_packages, facts, ledger=paths.PACKAGE_LEDGER, present=False)
    assert (result.commands, result.noops) == ([], ["no package this deploy installed is left"])


# --- apt.verified_keyring ---------------------------------------------------------------------


def test_verified_keyring_with_exactly_the_key_is_a_noop():
    result = run_op(
        apt.verified_keyring,
        {fact_key(KeyringFingerprints, path=KEYRING): [FINGERPRINT]},
        path=KEYRING,
        url=KEY_URL,
        fingerprint=FINGERPRINT.lower(),
    )
    assert result.commands == []
    assert result.noops == [f"keyring {KEYRING} holds exactly {FINGERPRINT}"]


@pytest.mark.parametrize(
    "current",
    [None, [], [FINGERPRINT, "5C1D1AF1AF1B6B0C6B7E0D8E1C4B6C0F6C2B0B7E"]],
    ids=["missing", "unreadable", "an extra key"],
)
def test_verified_keyring_fetches_and_checks_the_key_otherwise(current):
    result = run_op(
        apt.verified_keyring,
        {fact_key(KeyringFingerprints, path=KEYRING): current},
        path=KEYRING,
        url=KEY_URL,
        fingerprint=FINGERPRINT,
    )
    assert result.scripts == [("verified-keyring", [KEY_URL, FINGERPRINT, KEYRING])]


def test_verified_keyring_absent_removes_or_is_a_noop():
    gone = run_op(
        apt.verified_keyring,
        {fact_key(KeyringFingerprints, path=KEYRING): None},
        path=KEYRING,
        present=False,
    )
    assert (gone.commands, gone.noops) == ([], [f"{KEYRING} is absent"])
    there = run_op(
        apt.verified_keyring,
        {fact_key(KeyringFingerprints, path=KEYRING): [FINGERPRINT]},
        path=KEYRING,
        present=False,
    )
    assert there.texts == [checked(KEYRING) + f"rm -f {KEYRING}"]


# gpg --with-colons --show-keys of a key shaped like AMD's: an RSA primary key and a subkey,
# each with its own fpr line: what verified-keyring.sh reads from gpg.
GPG_COLONS = """\
pub:-:4096:1:9386B48A1A693C5C:1471986011:::-:::scSC::::::23::0:
fpr:::::::::CA8BB4727A47B4D09B4EE8969386B48A1A693C5C:
uid:-::::1471986011::2D7C1A2B::James Adrian Edwards (ROCm Release Manager)::::::::::0:
sub:-:4096:1:1C4B6C0F6C2B0B7E:1471986011::::::e::::::23:
fpr:::::::::5C1D1AF1AF1B6B0C6B7E0D8E1C4B6C0F6C2B0B7E:
"""


# --- apt.apt_lists_fresh / apt.apt_update -----------------------------------------------------

STAMP = paths.APT_LISTS_STAMP


def lists_facts(stamp: int | None, source: int | None, keyring: int | None) -> dict:
    def at(mtime):
        return None if mtime is None else digest("x", mtime=mtime)

    return {
        fact_key(FileDigest, path=STAMP): at(stamp),
        fact_key(FileDigest, path=SOURCE): at(source),
        fact_key(FileDigest, path=KEYRING): at(keyring),
    }


@pytest.mark.parametrize(
    ("stamp", "source", "keyring"),
    [(200, 100, 100), (200, 100, None), (200, 200, 150)],
    ids=["both older", "keyring absent", "same second as the stamp"],
)
def test_apt_lists_newer_than_their_inputs_are_a_noop(stamp, source, keyring):
    result = run_op(
        apt.apt_lists_fresh,
        lists_facts(stamp, source, keyring),
        inputs=[SOURCE, KEYRING],
        stamp=STAMP,
    )
    assert result.commands == []
    assert result.noops == [f"apt lists are newer than {SOURCE}, {KEYRING}"]


@pytest.mark.parametrize(
    ("stamp", "source", "keyring"),
    [(None, 100, 100), (200, 300, 100), (200, 100, 300)],
    ids=["never updated", "source changed", "keyring changed"],
)
def test_apt_lists_are_refreshed_after_a_change_or_when_never_refreshed(stamp, source, keyring):
    result = run_op(
        apt.apt_lists_fresh,
        lists_facts(stamp, source, keyring),
        inputs=[SOURCE, KEYRING],
        stamp=STAMP,
    )
    assert result.scripts == [("apt-get", ["update"])]
    assert result.texts[1] == f"mkdir -p {paths.STATE_DIR} && touch {STAMP}"


def test_apt_update_always_runs_when_planned():
    result = run_op(apt.apt_update, {})
    assert result.scripts == [("apt-get", ["update"])] and result.reads == []


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


# --- apt.release_packages ---------------------------------------------------------------------

ROCM_643 = {
    "rocm-hip-runtime": "6.4.3.60403-128~22.04",
    "rocm-core": "6.4.3.60403-128~22.04",
    "rocminfo": "1.0.0.60403-128~22.04",
    "amdgpu-dkms": "1:6.12.12.60403-2194681.22.04",  # AMD's driver: its own repository
    "librocm-smi64-1": "6.1.2-1",  # Debian's own
    "curl": "7.88.1-10+deb12u14",
}


def test_release_packages_of_the_release_are_a_noop():
    result = run_op(
        apt.release_packages,
        {InstalledPackages: ROCM_643},
        packages=["rocm-hip-runtime"],
        release=matrix.release("6.4.3"),
    )
    assert result.commands == []
    assert result.noops == ["rocm-hip-runtime installed from ROCm 6.4.3"]


def test_release_packages_move_every_rocm_package_and_leave_the_driver_and_debians():
    installed = {
        "rocm-hip-runtime": "7.2.1.70201-81~24.04",
        "rocm-core": "7.2.1.70201-81~24.04",
        "rocm-smi-lib": "7.8.0.70201-81~24.04",
        "amdgpu-dkms": "1:6.16.6.70201-2238411.24.04",
        "librocm-smi64-1": "6.1.2-1",
        "curl": "7.88.1-10+deb12u14",
    }
    result = run_op(
        apt.release_packages,
        {InstalledPackages: installed},
        packages=["rocm-hip-runtime"],
        release=matrix.release("6.4.3"),
    )
    assert result.scripts == [
        ("release-switch", ["[.]60403-", "want:rocm-hip-runtime", "stale:rocm-core",
                            "stale:rocm-smi-lib"])
    ]  # fmt: skip


def test_release_packages_purge_the_other_streams_packages_first():
    installed = {**ROCM_643, "amdrocm10.0-gfx1100": "10.0.0-4", "amdrocm-base10.0": "10.0.0-4"}
    core = run_op(
        apt.release_packages,
        {InstalledPackages: installed},
        packages=["amdrocm10.1-gfx1100"],
        release=matrix.release("10.1.0"),
    )
    assert core.scripts == [
        (
            "release-switch",
            [
                "^10[.]1[.]0-",
                "foreign:rocm-core",
                "foreign:rocm-hip-runtime",
                "foreign:rocminfo",
                "want:amdrocm10.1-gfx1100",
                "stale:amdrocm-base10.0",
                "stale:amdrocm10.0-gfx1100",
            ],
        )
    ]  # fmt: skip (the driver and Debian's packages stay)
    classic = run_op(
        apt.release_packages,
        {InstalledPackages: installed},
        packages=["rocm-hip-runtime"],
        release=matrix.release("6.4.3"),
    )
    assert classic.scripts == [
        ("release-switch", ["[.]60403-", "foreign:amdrocm-base10.0",
                            "foreign:amdrocm10.0-gfx1100"])
    ]  # fmt: skip


def test_release_packages_absent_purges_every_amd_package_driver_included():
    result = run_op(apt.release_packages, {InstalledPackages: ROCM_643}, present=False)
    assert result.scripts == [
        ("apt-get", ["purge", "amdgpu-dkms", "rocm-core", "rocm-hip-runtime", "rocminfo"])
    ]
    debian_only = {"librocm-smi64-1": "6.1.2-1", "curl": "7.88.1-10+deb12u14"}
    clean = run_op(apt.release_packages, {InstalledPackages: debian_only}, present=False)
    assert (clean.commands, clean.noops) == ([], ["no AMD ROCm packages installed"])


# --- apt.dpkg_repaired ------------------------------------------------------------------------


def test_dpkg_repaired_clean_dpkg_is_a_noop():
    result = run_op(apt.dpkg_repaired, {DpkgInterrupted: []})
    assert (result.commands, result.noops) == (
        [], ["dpkg has no interrupted or half-configured packages"]
    )  # fmt: skip


def test_dpkg_repaired_finishes_an_interrupted_run():
    result = run_op(apt.dpkg_repaired, {DpkgInterrupted: ["journal", "half-configured rocm-core"]})
    assert result.texts[0] == (
        "DEBIAN_FRONTEND=noninteractive dpkg --force-confdef --force-confold --configure -a"
    )
    assert result.scripts == [("apt-get", ["-f", "install"])]


# --- apt.nvidia_packages_absent ---------------------------------------------------------------

REASON = "NVIDIA driver removed (still loaded until a reboot)"


def test_nvidia_packages_absent_without_nvidia_is_a_noop():
    result = run_op(
        apt.nvidia_packages_absent,
        {NvidiaStack: {"packages": [], "modules": []}},
        reboot_reason=REASON,
    )
    assert (result.commands, result.noops) == ([], ["no NVIDIA driver or CUDA package installed"])


@pytest.mark.parametrize(("modules", "reason"), [(["nvidia", "nvidia_uvm"], REASON), ([], "")])
def test_nvidia_packages_absent_purges_them_and_marks_a_reboot_for_a_loaded_driver(modules, reason):
    stack = {"packages": ["libcuda1", "nvidia-driver", "nvidia-kernel-dkms"], "modules": modules}
    result = run_op(apt.nvidia_packages_absent, {NvidiaStack: stack}, reboot_reason=REASON)
    assert result.scripts == [
        ("nvidia-purge", [reason, "libcuda1", "nvidia-driver", "nvidia-kernel-dkms"])
    ]


# --- users.gpu_access -------------------------------------------------------------------------

GROUPS = ["video", "render"]


def test_gpu_access_with_groups_and_members_is_a_noop():
    membership = {"groups": GROUPS, "users": {"alice": ["alice", "video", "render", "docker"]}}
    result = run_op(users.gpu_access, {GroupMembership: membership}, groups=GROUPS, users=["alice"])
    assert (result.commands, result.noops) == ([], ["video, render exist; alice in them"])
    alone = run_op(
        users.gpu_access,
        {GroupMembership: {"groups": GROUPS, "users": {}}},
        groups=GROUPS,
        users=[],
    )
    assert alone.noops == ["video, render exist"]


def test_gpu_access_adds_the_missing_group_and_memberships_keeping_the_others():
    membership = {"groups": ["video"], "users": {"alice": ["alice", "video"], "bob": ["bob"]}}
    result = run_op(
        users.gpu_access, {GroupMembership: membership}, groups=GROUPS, users=["alice", "bob"]
    )
    assert result.texts == [
        "groupadd --system render",
        "usermod -a -G render alice",
        "usermod -a -G video,render bob",
    ]


def test_gpu_access_fails_for_a_user_the_host_lacks():
    membership = {"groups": GROUPS, "users": {"alice": ["alice"], "bob": None}}
    result = run_op(
        users.gpu_access, {GroupMembership: membership}, groups=GROUPS, users=["alice", "bob"]
    )
    assert result.texts == ["echo 'user(s) bob do not exist on node' >&2 && exit 1"]


# --- python.venv ------------------------------------------------------------------------------

PYVENV = digest("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11.2\n")
DIRECTORY = {"user": "root", "group": "root", "mode": 755, "size": 4096}


def test_venv_that_exists_is_a_noop():
    result = run_op(
        python.venv,
        {fact_key(FileDigest, path=MARKER): PYVENV},
        path=VENV,
        ledger=paths.DIRECTORY_LEDGER,
    )
    assert (result.commands, result.noops) == ([], [f"venv {VENV} exists"])


def test_venv_is_created_recording_the_directories_it_makes():
    facts = {fact_key(FileDigest, path=MARKER): None}
    result = run_op(python.venv, facts, path=VENV, ledger=paths.DIRECTORY_LEDGER)
    assert result.scripts == [("venv-create", [VENV, paths.DIRECTORY_LEDGER])]
    plain = run_op(
        python.venv,
        {fact_key(FileDigest, path="/srv/my venv/pyvenv.cfg"): None},
        path="/srv/my venv",
    )
    assert plain.texts == ["python3 -m venv '/srv/my venv'"]


def test_venv_absent_removes_it_and_the_empty_directories_it_made():
    facts = {
        fact_key(FileDigest, path=MARKER): PYVENV,
        fact_key(FileContents, path=paths.DIRECTORY_LEDGER): ["/opt/rocm-fleet"],
        fact_key(Directory, path="/opt/rocm-fleet"): DIRECTORY,
    }
    result = run_op(python.venv, facts, path=VENV, ledger=paths.DIRECTORY_LEDGER, present=False)
    assert result.texts == [
        checked(VENV) + f"rm -rf {VENV}", "rmdir --ignore-fail-on-non-empty /opt/rocm-fleet"
    ]  # fmt: skip


def test_venv_absent_takes_the_venv_the_ledger_records_with_rm_only():
    """The ledger records the venv itself after its parents (and a venv made twice, twice):
    rm -rf takes the venv, rmdir each parent once."""
    facts = {
        fact_key(FileDigest, path=MARKER): PYVENV,
        fact_key(FileContents, path=paths.DIRECTORY_LEDGER): [
            "/opt/rocm-fleet",
            VENV,
            "/opt/rocm-fleet",
        ],
        fact_key(Directory, path="/opt/rocm-fleet"): DIRECTORY,
    }
    result = run_op(python.venv, facts, path=VENV, ledger=paths.DIRECTORY_LEDGER, present=False)
    assert result.texts == [
        checked(VENV) + f"rm -rf {VENV}", "rmdir --ignore-fail-on-non-empty /opt/rocm-fleet"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("ledger", "removed"),
    [([], False), (["/opt/elsewhere"], False), (["/opt/rocm-fleet"], True), ([VENV], True)],
)
def test_venv_created_only_removes_one_the_ledger_says_it_made(ledger, removed):
    facts = {
        fact_key(FileDigest, path=MARKER): PYVENV,
        fact_key(Ledger, path=paths.DIRECTORY_LEDGER): ledger,
    }
    result = run_op(
        python.venv, facts, path=VENV, ledger=paths.DIRECTORY_LEDGER, present=False,
        created_only=True,
    )  # fmt: skip
    if removed:
        assert result.scripts == [("venv-remove", [VENV, paths.DIRECTORY_LEDGER])]
    else:
        assert (result.commands, result.noops) == (
            [], [f"venv {VENV} was not created by rocm-fleet: it stays"]
        )  # fmt: skip


def test_venv_absent_and_its_directories_gone_is_a_noop():
    facts = {
        fact_key(FileDigest, path=MARKER): None,
        fact_key(Directory, path=VENV): None,
        fact_key(FileContents, path=paths.DIRECTORY_LEDGER): ["/opt/rocm-fleet"],
        fact_key(Directory, path="/opt/rocm-fleet"): None,
    }
    result = run_op(python.venv, facts, path=VENV, ledger=paths.DIRECTORY_LEDGER, present=False)
    assert (result.commands, result.noops) == ([], [f"venv {VENV} is absent"])


# --- python.pinned_wheels ---------------------------------------------------------------------


def test_pinned_wheels_installed_with_their_labels_are_a_noop():
    dists = {**WHEELS, "pip": PIP, "numpy": "2.3.5"}
    result = run_op(
        python.pinned_wheels,
        {fact_key(VenvDistributions, venv=VENV): dists},
        venv_path=VENV,
        index_url=INDEX,
        wanted=WHEELS,
    )
    assert result.commands == []
    assert result.noops == [
        "torch==2.9.1+rocm6.4, torchaudio==2.9.1+rocm6.4, torchvision==0.24.1+rocm6.4 installed"
    ]


@pytest.mark.parametrize(
    "dists",
    [None, {"pip": PIP}, {**WHEELS, "torchvision": "0.24.1+cu128"},
     {**WHEELS, "torch": "2.9.0+rocm6.4"}],
    ids=["no venv", "empty venv", "a CUDA companion", "another torch"],
)  # fmt: skip
def test_pinned_wheels_install_every_wheel_from_the_one_index(dists):
    lock = [f"{name}=={version} --hash=sha256:{'a' * 64}" for name, version in WHEELS.items()]
    result = run_op(
        python.pinned_wheels,
        {fact_key(VenvDistributions, venv=VENV): dists},
        venv_path=VENV,
        index_url=INDEX,
        wanted=WHEELS,
        locked=lock,
    )
    lines = " ".join(f"'{line}'" for line in lock)
    assert result.texts == [
        checked(PYTHON) + f"printf '%s\\n' {lines} | {PYTHON} -m pip install --no-input "
        "--disable-pip-version-check --no-cache-dir --require-hashes --only-binary=:all: "
        f"--index-url {INDEX} -r /dev/stdin"
    ]


def test_pinned_wheels_never_install_without_hashes():
    with pytest.raises(OperationValueError, match=r"torch==2\.9\.1\+rocm6\.4, .* without hashes"):
        run_op(
            python.pinned_wheels,
            {fact_key(VenvDistributions, venv=VENV): {"pip": PIP}},
            venv_path=VENV,
            index_url=INDEX,
            wanted=WHEELS,
        )


# --- python.cuda_wheels_absent ----------------------------------------------------------------


def test_cuda_wheels_absent_with_a_rocm_venv_is_a_noop():
    dists = {**WHEELS, "pip": PIP, "pytorch_triton_rocm": "3.5.1"}
    result = run_op(
        python.cuda_wheels_absent, {fact_key(VenvDistributions, venv=VENV): dists}, venv_path=VENV
    )
    assert (result.commands, result.noops) == ([], [f"no CUDA wheel in {VENV}"])


def test_cuda_wheels_absent_uninstalls_nvidias_libraries_triton_and_cuda_torch():
    dists = {
        "torch": "2.9.1+cu128",
        "torchvision": "0.24.1",
        "nvidia_cublas_cu12": "12.8.4.1",
        "nvidia_cudnn_cu12": "9.10.2.21",
        "triton": "3.5.1",
        "numpy": "2.3.5",
        "pip": PIP,
    }
    result = run_op(
        python.cuda_wheels_absent, {fact_key(VenvDistributions, venv=VENV): dists}, venv_path=VENV
    )
    assert result.texts == [
        checked(PYTHON) + f"{PYTHON} -m pip uninstall --yes --no-input --disable-pip-version-check "
        "nvidia-cublas-cu12 nvidia-cudnn-cu12 torch torchvision triton"
    ]


# --- kernel.newer_kernel ----------------------------------------------------------------------

BACKPORTS = ["linux-image-amd64", "linux-headers-amd64"]
RUNNING = "6.1.0-31-amd64"
NO_HOLDS = {HeldPackages: [], Ledger: []}  # nothing on hold, none of it rocm-fleet's


def test_newer_kernel_from_backports_installed_is_a_noop():
    installed = {
        "linux-image-amd64": "6.12.95-1~bpo12+1",
        "linux-headers-amd64": "6.12.95-1~bpo12+1",
        f"linux-image-{RUNNING}": "6.1.128-1",
    }
    result = run_op(
        kernel.newer_kernel,
        {InstalledPackages: installed},
        packages=BACKPORTS,
        target_release="bookworm-backports",
        hwe=False,
        hold_ledger=paths.KERNEL_HOLD_LEDGER,
    )
    assert result.commands == []
    assert result.noops == [
        "linux-image-amd64, linux-headers-amd64 installed from bookworm-backports"
    ]


def test_newer_kernel_replaces_the_stock_meta_packages_with_backports_ones():
    installed = {"linux-image-amd64": "6.1.128-1", f"linux-image-{RUNNING}": "6.1.128-1"}
    facts = {InstalledPackages: installed, KernelVersion: RUNNING, **NO_HOLDS}
    result = run_op(
        kernel.newer_kernel,
        facts,
        packages=BACKPORTS,
        target_release="bookworm-backports",
        hwe=False,
        hold_ledger=paths.KERNEL_HOLD_LEDGER,
    )
    assert result.scripts == [
        ("newer-kernel", [RUNNING, "bookworm-backports", "--no-install-recommends", "", *BACKPORTS])
    ]


def test_newer_kernel_hwe_on_ubuntu():
    hwe = ["linux-generic-hwe-24.04"]
    installed = {"linux-image-6.8.0-50-generic": "6.8.0-50.51"}
    facts = {InstalledPackages: installed, KernelVersion: "6.8.0-50-generic", **NO_HOLDS}
    result = run_op(
        kernel.newer_kernel,
        facts,
        packages=hwe,
        target_release=None,
        hwe=True,
        hold_ledger=paths.KERNEL_HOLD_LEDGER,
    )
    assert result.scripts == [
        ("newer-kernel", ["6.8.0-50-generic", "", "--install-recommends", "", *hwe])
    ]
    installed["linux-generic-hwe-24.04"] = "6.14.0-37.37~24.04.1"
    done = run_op(
        kernel.newer_kernel,
        {InstalledPackages: installed},
        packages=hwe,
        target_release=None,
        hwe=True,
        hold_ledger=paths.KERNEL_HOLD_LEDGER,
    )
    assert (done.commands, done.noops) == ([], ["linux-generic-hwe-24.04 installed"])


# --- kernel.dkms_driver -----------------------------------------------------------------------

DKMS = ["linux-headers-6.1.0-28-amd64", "linux-headers-6.1.0-31-amd64", "amdgpu-dkms"]


def test_dkms_driver_installed_is_a_noop():
    installed = dict.fromkeys(DKMS[:2], "6.1.128-1") | {"amdgpu-dkms": ROCM_643["amdgpu-dkms"]}
    result = run_op(
        kernel.dkms_driver,
        {InstalledPackages: installed},
        packages=DKMS,
        driver="amdgpu-dkms",
        ledger=paths.DRIVER_LEDGER,
    )
    assert (result.commands, result.noops) == ([], [", ".join(DKMS) + " installed"])


def test_dkms_driver_installs_the_headers_of_a_new_kernel_for_the_driver():
    installed = {DKMS[0]: "6.1.119-1", "amdgpu-dkms": ROCM_643["amdgpu-dkms"]}
    result = run_op(
        kernel.dkms_driver,
        {InstalledPackages: installed},
        packages=DKMS,
        driver="amdgpu-dkms",
        ledger=paths.DRIVER_LEDGER,
    )
    assert result.scripts == [
        ("dkms-driver", [paths.DRIVER_LEDGER, "amdgpu-dkms", "linux-headers-6.1.0-31-amd64"])
    ]


# --- secureboot.signing_key / secureboot.mok_enrolled -----------------------------------------


@pytest.mark.parametrize(
    ("name", "rc", "state"),
    [("sb_state_disabled.txt", 0, "disabled"), ("sb_state_no_efi.txt", 1, "no_efi"),
     ("sb_state_unsupported.txt", 255, "unsupported")],
)  # fmt: skip
def test_signing_key_and_mok_need_nothing_without_secure_boot(name, rc, state):
    facts = {SecureBoot: sb(name, rc)}
    key = run_op(
        secureboot.signing_key, facts, cert=DEBIAN_CERT, key=DEBIAN_KEY, distro_id="debian"
    )
    assert (key.commands, key.noops) == ([], [f"Secure Boot {state}: no signing key needed"])
    mok = run_op(
        secureboot.mok_enrolled, facts, cert=DEBIAN_CERT, password_env="ROCM_FLEET_MOK_PASSWORD"
    )
    assert (mok.commands, mok.noops) == ([], [f"Secure Boot {state}: nothing to enrol"])
    assert mok.reads == [fact_key(SecureBoot)]


def test_signing_key_that_exists_is_kept():
    facts = {
        SecureBoot: sb("sb_state_enabled.txt"),
        fact_key(FileDigest, path=DEBIAN_CERT): digest("DER"),
    }
    result = run_op(
        secureboot.signing_key, facts, cert=DEBIAN_CERT, key=DEBIAN_KEY, distro_id="debian"
    )
    assert (result.commands, result.noops) == ([], [f"{DEBIAN_CERT} exists"])


def test_signing_key_is_made_as_dkms_makes_it():
    debian = {SecureBoot: sb("sb_state_enabled.txt"), fact_key(FileDigest, path=DEBIAN_CERT): None}
    result = run_op(
        secureboot.signing_key, debian, cert=DEBIAN_CERT, key=DEBIAN_KEY, distro_id="debian"
    )
    assert result.scripts == [("signing-key", [DEBIAN_CERT, DEBIAN_KEY])]
    ubuntu = {SecureBoot: sb("sb_state_enabled.txt"), fact_key(FileDigest, path=UBUNTU_CERT): None}
    result = run_op(
        secureboot.signing_key, ubuntu, cert=UBUNTU_CERT, key=UBUNTU_KEY, distro_id="ubuntu"
    )
    assert result.texts == ["update-secureboot-policy --new-key"]


def mok_facts(state: str, pending: bool = False) -> dict:
    return {
        SecureBoot: sb("sb_state_enabled.txt"),
        fact_key(MokKeyState, path=DEBIAN_CERT): {
            "state": state,
            "message": f"{DEBIAN_CERT} is {state}",
        },
        fact_key(MokPending, path=DEBIAN_CERT): {
            "pending": pending,
            "fingerprint": "c8:39:a7",
            "requests": ["c8:39:a7"] if pending else [],
        },
    }


@pytest.mark.parametrize(
    ("state", "pending", "noop"),
    [("enrolled", False, f"{DEBIAN_CERT} is enrolled"),
     ("pending", False, f"{DEBIAN_CERT} is queued; {PENDING}"),
     ("not_enrolled", True, f"{DEBIAN_CERT} is queued; {PENDING}")],
)  # fmt: skip
def test_mok_enrolled_or_queued_is_not_queued_again(state, pending, noop):
    result = run_op(
        secureboot.mok_enrolled,
        mok_facts(state, pending),
        cert=DEBIAN_CERT,
        password_env="ROCM_FLEET_MOK_PASSWORD",
    )
    assert (result.commands, result.noops) == ([], [noop])


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


@pytest.mark.parametrize(
    ("state", "env", "message"),
    [("blocked", PASSWORD, f"{DEBIAN_CERT} is blocked (dbx/MokListX); make a new signing key"),
     ("unknown", PASSWORD, f"cannot tell whether {DEBIAN_CERT} is enrolled: mokutil says unknown"),
     ("not_enrolled", None, "set the environment variable FLEET_MOK where pyinfra runs")],
)  # fmt: skip
def test_mok_enrolled_fails_the_host_it_cannot_queue(monkeypatch, state, env, message):
    if env is None:
        monkeypatch.delenv("FLEET_MOK", raising=False)
        monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    else:
        monkeypatch.setenv("FLEET_MOK", env)
    result = run_op(
        secureboot.mok_enrolled, mok_facts(state), cert=DEBIAN_CERT, password_env="FLEET_MOK"
    )
    assert result.texts[-1].startswith("echo ") and result.texts[-1].endswith(" >&2 && exit 1")
    assert message in result.texts[-1]


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


def test_reboot_when_nothing_needs_one_is_a_noop():
    result = reboot_op(NO_REBOOT)
    assert (result.commands, result.noops) == ([], ["no reboot needed"])
    assert BootKernels not in result.facts_read  # nothing to gate


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


# --- gpu.gpu_verified -------------------------------------------------------------------------

AGENTS = {"status": "ok", "rc": 0, "message": "ROCk module version 6.8.5 is loaded",
          "gpus": [{"name": "gfx1100"}]}  # fmt: skip
TORCH = {"torch": "2.9.1+rocm6.4", "hip": "6.4.43484", "cuda": None, "available": True,
         "device_count": 1, "devices": [{"index": 0, "name": "AMD Radeon RX 7900 XTX",
         "arch": "gfx1100", "arch_full": "gfx1100"}], "matmul": "ok", "error": None,
         "device_error": None}  # fmt: skip
ROCMINFO = "/opt/rocm-6.4.3/bin/rocminfo"
INSTALLED = "rocm 6.4.3\ntorch torch==2.9.1+rocm6.4 torchvision==0.24.1+rocm6.4\n"
VERIFY = {"rocminfo": ROCMINFO, "expected_gfx": ["gfx1100"], "expected_count": 1,
          "python": PYTHON, "installed": INSTALLED}  # fmt: skip
# What the survey says of a converged host, and what a passed check records of it.
HOST_NOW = {
    KfdNodes: [{"node": 1, "gfx": "gfx1100", "slot": "0000:03:00.0"}],
    KernelVersion: "6.1.0-50-amd64",
}
STACK = (
    "expected 1 x gfx1100\nrocm 6.4.3\ntorch torch==2.9.1+rocm6.4 torchvision==0.24.1+rocm6.4\n"
    "kernel 6.1.0-50-amd64\ngpus gfx1100@0000:03:00.0\n"
)
UNCHECKED = {**HOST_NOW, fact_key(FileDigest, path=paths.VERIFIED): None}


def test_gpu_verified_plans_the_check_from_the_survey_without_running_it():
    result = run_op(gpu.gpu_verified, UNCHECKED, **VERIFY)
    assert result.texts[0] == "mkdir -p /run/rocm-fleet"
    assert result.scripts == [("text-file", [paths.VERIFIED, "644", STACK])]
    assert RocmAgents not in result.facts_read and result.noops == []


def test_gpu_verified_is_a_noop_while_what_it_checked_is_unchanged():
    checked = {**HOST_NOW, fact_key(FileDigest, path=paths.VERIFIED): digest(STACK)}
    for executing in (False, True):
        result = run_op(gpu.gpu_verified, checked, executing=executing, **VERIFY)
        assert result.commands == []
        assert result.noops == ["verified in this boot, and nothing it checked has changed since"]
        assert RocmAgents not in result.facts_read  # no round trip, no torch import


@pytest.mark.parametrize(
    ("what", "change"),
    [
        ("another release's wheels", {"installed": INSTALLED.replace("6.4", "7.2")}),
        ("another kernel", {KernelVersion: "6.12.38+deb13-amd64"}),
        ("a GPU gone", {KfdNodes: []}),
    ],
)
def test_gpu_verified_checks_again_when_what_it_vouched_for_changed(what, change):
    checked = {**HOST_NOW, fact_key(FileDigest, path=paths.VERIFIED): digest(STACK)}
    arguments = dict(VERIFY)
    for key, value in change.items():
        (arguments if key in arguments else checked)[key] = value
    result = run_op(gpu.gpu_verified, checked, **arguments)
    assert result.noops == [] and len(result.commands) == 2, what


def test_gpu_verified_runs_the_check_and_records_what_it_vouched_for():
    facts = {**UNCHECKED, RocmAgents: AGENTS, fact_key(TorchInfo, python=PYTHON): TORCH}
    result = run_op(gpu.gpu_verified, facts, executing=True, **VERIFY)
    assert result.scripts == [("text-file", [paths.VERIFIED, "644", STACK])]
    assert result.reads[-2:] == [
        fact_key(RocmAgents, rocminfo=ROCMINFO),
        fact_key(TorchInfo, python=PYTHON),
    ]  # one survey


def test_gpu_verified_fails_the_host_naming_what_it_found():
    wrong = {**AGENTS, "gpus": [{"name": "gfx942"}]}
    facts = {**UNCHECKED, RocmAgents: wrong, fact_key(TorchInfo, python=PYTHON): TORCH,
             RebootRequired: NO_REBOOT}  # fmt: skip
    result = run_op(gpu.gpu_verified, facts, executing=True, **VERIFY)
    (failure,) = result.texts
    assert failure.startswith("echo 'GPU verification failed on node: expected 1 x gfx1100, ")
    assert "rocminfo found 0 (gfx942)" in failure and failure.endswith(" >&2 && exit 1")


# --- host.fail --------------------------------------------------------------------------------


def test_fail_stops_the_host_with_its_reason():
    result = run_op(host.fail, {}, reason="names no Debian mirror: set it")
    assert result.texts == ["echo 'names no Debian mirror: set it' >&2 && exit 1"]


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
