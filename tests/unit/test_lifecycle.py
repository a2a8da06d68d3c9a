"""Lifecycle logic: which packages are AMD's, which wheels are CUDA's, how wheels are pinned,
and what an upgrade, an uninstall or a migration from CUDA plans."""

from __future__ import annotations

from pyinfra.context import ctx_host, ctx_state
from pyinfra.facts.files import Directory, FileContents

from rocm_fleet.deploy.driver import NVIDIA_REMOVED as REBOOT_REASON
from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages, KeyringFingerprints
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.model import paths
from rocm_fleet.model.decisions import (
    owned_wheels,
    requirement_met,
    torch_install,
    version_matches,
    wanted_wheels,
)
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.matrix import release
from rocm_fleet.model.sources import WheelNeed
from rocm_fleet.model.streams import CLASSIC
from rocm_fleet.model.torch_builds import TORCH_RUNTIME_WHEELS
from rocm_fleet.operations.apt import release_packages
from rocm_fleet.operations.python import cuda_wheels
from unit.opcases import run_op
from unit.surveys import (
    UPDATED,
    SurveyHost,
    checked,
    converged_survey,
    digest,
    fact_key,
    fresh_survey,
    plan,
    script_call,
)

INSTALLED = {
    "rocm-core": "6.4.3.60403-128~22.04",
    "rocminfo": "1.0.0.60403-128~22.04",
    "amdgpu-dkms": "1:6.12.12.60403-2194681.22.04",
    "librocm-smi64-1": "6.1.2-1",  # Debian's own
    "curl": "7.88.1-10+deb12u14",
}


def test_release_moves_leave_the_driver_and_uninstall_takes_it():
    moved = run_op(
        release_packages,
        {InstalledPackages: INSTALLED},
        packages=["rocm-core"],
        release=release("7.2.1"),
    )
    assert moved.scripts == [("release-switch", ["[.]70201-", "want:rocm-core", "stale:rocminfo"])]
    purged = run_op(release_packages, {InstalledPackages: INSTALLED}, present=False)
    assert purged.scripts == [("apt-get", ["purge", "amdgpu-dkms", "rocm-core", "rocminfo"])]


def test_the_pip_runtime_requirement_is_met_by_any_matching_version():
    requirement = release("7.14.0").torch_runtime
    assert requirement_met({"rocm": "7.14.0.post1"}, requirement)
    assert requirement_met({"rocm": "7.14.2"}, requirement)
    assert not requirement_met({"rocm": "7.15.0"}, requirement)
    assert not requirement_met({"rocm-sdk-core": "7.14.0"}, requirement)
    assert not requirement_met({"rocm": "not-a-version"}, requirement)


def test_pip_runs_for_a_pin_or_a_requirement_the_venv_lacks_and_only_then():
    rel = release("7.14.0")
    need = WheelNeed(
        "https://download.pytorch.org/whl/rocm7.14", None,
        (("torch", "2.10.0+rocm7.14"),), (rel.torch_runtime,),
    )  # fmt: skip
    # As the venv's dist-info names read (not normalised: ``Torch`` is ``torch``).
    held = {"Torch": "2.10.0+rocm7.14", "rocm": "7.14.0.post1", "pip": "25.0"}
    assert not need.unmet_in(held)
    assert need.unmet_in({**held, "Torch": "2.10.0+rocm7.2"})
    assert need.unmet_in({"Torch": "2.10.0+rocm7.14"})  # the pip ROCm runtime is missing
    assert need.unmet_in(None)  # no venv yet


def test_a_bundling_release_owns_the_pip_runtime_a_core_sdk_one_leaves_it_to_pip():
    assert owned_wheels(_torch("7.2.1"))[1] == TORCH_RUNTIME_WHEELS.pattern
    # back from 10.x: AMD's device wheels go too
    amd_device = "amd-torch(?:vision)?-device-.+"
    assert owned_wheels(_torch("7.2.1"))[2] == amd_device
    assert owned_wheels(_torch("7.14.1")) == ["torch|torchvision|torchaudio", amd_device]
    # 10.x: pip manages the runtime; the device wheels of other targets are owned
    assert owned_wheels(_torch("10.1.0")) == [
        "torch|torchvision|torchaudio",
        "amd-torch(?:vision)?-device-(?!(?:gfx942)$).+",
        "rocm-sdk-device-(?!(?:gfx942)$).+",
    ]


def _torch(version):
    rel = release(version)
    return torch_install(rel, rel.torch_builds[-1], "https://download.pytorch.org/whl", ["gfx942"])


def test_every_wheel_is_pinned_with_the_index_label():
    rel = release("6.4.3")
    assert wanted_wheels(rel.torch_builds[-1], rel.torch_index) == {
        "torch": "2.9.1+rocm6.4",
        "torchvision": "0.24.1+rocm6.4",
        "torchaudio": "2.9.1+rocm6.4",
    }
    # A companion of another build with the same public version is drift.
    assert not version_matches("0.24.1+cu128", "0.24.1+rocm6.4")
    assert not version_matches("0.20.1+rocm6.1", "0.20.1+rocm6.2")
    assert not version_matches("0.24.1", "0.24.1+rocm6.4")
    assert not version_matches(None, "0.24.1+rocm6.4")
    assert version_matches("0.24.1+rocm6.4", "0.24.1+rocm6.4")
    assert version_matches("0.24.1+rocm6.4", "0.24.1")  # a public pin takes any label


def test_cuda_wheels_are_nvidias_and_non_rocm_torch():
    venv = {
        "torch": "2.9.1+cu128",
        "torchvision": "0.24.1",
        "nvidia_cublas_cu12": "12.8.4.1",  # dist-info names use underscores
        "nvidia_cudnn_cu12": "9.10.2.21",
        "triton": "3.5.1",
        "numpy": "2.3.5",
        "pip": "23.0.1",
    }
    assert cuda_wheels(venv) == [
        "nvidia-cublas-cu12", "nvidia-cudnn-cu12", "torch", "torchvision", "triton"
    ]  # fmt: skip
    assert cuda_wheels({"torch": "2.9.1+rocm6.4", "numpy": "2.3.5"}) == []


def test_dpkg_interruption_fact():
    fact = DpkgInterrupted()
    assert fact.process([]) == []
    # DPKG_LISTING's lines: the journal's, then db:Status-Abbrev|name|version of each package
    listing = ["journal", "ii |curl|7.88.1-10+deb12u14", "iF |rocm-core|6.4.3.60403-128~22.04", ""]
    assert fact.process(listing) == [
        "journal",
        "half-configured rocm-core",
    ]


# --- upgrade ----------------------------------------------------------------------------------

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip


def test_an_upgrade_moves_the_source_packages_and_torch_together():
    survey = converged_survey(DATA, "ubuntu-24.04")
    upgrade = {**DATA, "rocm_version": "7.2.1"}
    host = SurveyHost(survey)
    planned = plan(upgrade, host)
    assert planned.changes == [
        "ROCm apt repository | Point apt at the ROCm release for this distro",
        "ROCm packages | Install the ROCm packages of the release",
        "PyTorch | Install the torch wheels built for the ROCm release",
        # What the last GPU check vouched for is not what the upgrade installs.
        "Verify | Check rocminfo and torch see the expected GPUs",
    ]
    source = planned.find("Point apt at the ROCm release")
    assert script_call(source.commands[0])[1][2].endswith("/rocm/apt/7.2.1 noble main\n")
    (switch,) = planned.find("Install the ROCm packages").commands
    assert script_call(switch) == (
        "release-switch",
        ["[.]70201-", "want:rocm-hip-runtime", "stale:rocm-core"],
    )
    # torch 2.14.1, the newest on rocm7.2, comes without torchaudio: the 6.4 one goes.
    pip, uninstall = planned.find("Install the torch wheels").commands
    assert "torch==2.14.1+rocm7.2" in str(pip) and "whl/rocm7.2" in str(pip)
    assert str(uninstall).endswith("pip uninstall --yes --no-input --disable-pip-version-check "
                                   "torchaudio")  # fmt: skip
    assert host.extra_reads == []

    # The lists are planned from the source as it is; once the run rewrote it, the refresh
    # reads it again (the host changed) and updates before the packages move.
    refresh = planned.find("Refresh apt lists after a source or key change")
    assert refresh.commands == []
    for path in (paths.APT_LISTS_STAMP, paths.ROCM_KEYRING):  # as they were
        host.other[fact_key(FileDigest, path=path)] = survey.files[path]
    host.other[fact_key(FileDigest, path=paths.ROCM_SOURCE)] = digest(
        "7.2.1 line", mtime=UPDATED + 60
    )
    planned.run(source)
    node = planned.state.inventory.get_host("node")
    with ctx_state.use(planned.state), ctx_host.use(node):
        again = planned.state.get_op_data_for_host(node, refresh.meta._hash)
        update, _stamp = list(again.command_generator())
    assert script_call(update) == ("apt-get", ["update"])
    assert host.extra_reads == [
        fact_key(FileDigest, path=path)
        for path in (paths.APT_LISTS_STAMP, paths.ROCM_SOURCE, paths.ROCM_KEYRING)
    ]


# --- uninstall --------------------------------------------------------------------------------

ABSENT = {"rocm_version": "6.4.3", "rocm_state": "absent"}
VENV = paths.DEFAULT_VENV


def deployed_host() -> SurveyHost:
    """A host the deploy (dkms driver) ran on, as the removal reads it, fact by fact."""
    survey = converged_survey({**DATA, "rocm_driver": "dkms"}, "debian-12")
    files = {path: value for path, value in survey.files.items() if value is not None}
    other = {fact_key(FileDigest, path=path): value for path, value in files.items()}
    return SurveyHost(
        HostSurvey(),
        other={
            **other,
            fact_key(KeyringFingerprints, path=paths.ROCM_KEYRING): [CLASSIC.key_fingerprint],
            InstalledPackages: survey.packages,
            DpkgInterrupted: [],
            fact_key(FileContents, path=paths.PACKAGE_LEDGER): [
                "ca-certificates",
                "gnupg",
                "python3-venv",
            ],
            fact_key(FileContents, path=paths.DRIVER_LEDGER): survey.ledgers[paths.DRIVER_LEDGER],
            fact_key(FileContents, path=paths.DIRECTORY_LEDGER): ["/opt/rocm-fleet"],
            fact_key(Directory, path="/opt/rocm-fleet"): {
                "user": "root",
                "group": "root",
                "mode": 755,
            },
            fact_key(Directory, path=paths.STATE_DIR): {
                "user": "root",
                "group": "root",
                "mode": 755,
            },
        },
    )


def test_uninstall_removes_what_the_deploy_added():
    planned = plan(ABSENT, deployed_host())
    assert not planned.refused
    commands = {op.name: [str(c) for c in op.commands] for op in planned.ops}
    assert commands["Remove PyTorch | Remove the PyTorch venv and the directories made for it"] == [
        checked(VENV) + f"rm -rf {VENV}", "rmdir --ignore-fail-on-non-empty /opt/rocm-fleet"
    ]  # fmt: skip
    (purge,) = planned.find("Purge AMD's ROCm packages").commands
    name, args = script_call(purge)
    assert (name, args[0]) == ("apt-get", "purge")
    assert {"amdgpu-dkms", "rocm-core", "rocm-hip-runtime"} == set(args[1:])
    for fragment, path in [("Remove the loader path", paths.LD_CONF),
                           ("Remove the PATH snippet", paths.PROFILE),
                           (f"Remove the ROCm source {paths.ROCM_SOURCE}", paths.ROCM_SOURCE),
                           ("Remove the amdgpu driver source", paths.AMDGPU_SOURCE),
                           (f"Remove AMD's pin {paths.ROCM_PIN}", paths.ROCM_PIN),
                           (f"Remove AMD's keyring {paths.ROCM_KEYRING}", paths.ROCM_KEYRING)
                           ]:  # fmt: skip
        removal = [checked(path) + f"rm -f {path}"]
        assert [str(c) for c in planned.find(fragment).commands] == removal, fragment
    assert planned.find("Rebuild the loader cache").conditional
    assert planned.find("Forget AMD's package lists").conditional
    (ledger,) = planned.find("Purge the distribution packages").commands
    assert script_call(ledger) == (
        "ledger-purge",
        [paths.PACKAGE_LEDGER, "ca-certificates", "gnupg", "python3-venv"],
    )
    # what rocm_driver: dkms installed (the driver, its headers, mokutil and openssl where it
    # installed them), before the state that records it goes
    (driver,) = planned.find("Purge what rocm_driver: dkms installed").commands
    assert script_call(driver) == ("ledger-purge", [
        paths.DRIVER_LEDGER, "amdgpu-dkms", "linux-headers-6.1.0-31-amd64", "mokutil", "openssl"
    ])  # fmt: skip
    assert [str(c) for c in planned.find("Remove rocm-fleet's state").commands] == [
        f"rm -rf {paths.STATE_DIR}"
    ]
    assert not any(op.name.startswith(("Preflight", "GPU groups", "Kernel")) for op in planned.ops)


def test_a_second_uninstall_changes_nothing():
    clean = SurveyHost(
        HostSurvey(),
        other={InstalledPackages: {"curl": "7.88.1-10+deb12u14"}, DpkgInterrupted: []},
    )
    planned = plan(ABSENT, clean)
    assert planned.ops and planned.changes == []


# --- migration from CUDA ----------------------------------------------------------------------

NVIDIA = {
    "nvidia-driver": "535.216.01-1~deb12u1",
    "nvidia-kernel-dkms": "535.216.01-1~deb12u1",
    "libcuda1": "535.216.01-1~deb12u1",
    "curl": "7.88.1-10+deb12u14",
}
CUDA_VENV = {
    "torch": "2.9.1+cu128",
    "torchvision": "0.24.1+cu128",
    "nvidia_cublas_cu12": "12.8.4.1",
    "triton": "3.5.1",
    "pip": "23.0.1",
}


def cuda_host() -> SurveyHost:
    return SurveyHost(
        fresh_survey(
            "debian-12",
            packages=NVIDIA,
            modules=["nvidia", "nvidia_uvm", "ext4"],
            venv=CUDA_VENV,
            torch_build={"hip": None, "cuda": "12.8"},
            # apt's simulated purge of NVIDIA's packages takes nothing else along.
            nvidia_purge={
                "packages": NVIDIA,
                "purge": {"removes": sorted(set(NVIDIA) - {"curl"}), "errors": []},
            },
            files={paths.venv_marker(VENV): digest("home = /usr/bin\n")},
        )
    )


def test_without_migrate_from_cuda_the_nvidia_host_is_refused(caplog):
    planned = plan({"rocm_version": "6.4.3"}, cuda_host())
    assert planned.refused and planned.ops == []
    assert "NVIDIA driver/CUDA stack installed (packages: libcuda1, nvidia-driver, " in caplog.text
    assert "set rocm_migrate_from_cuda: true" in caplog.text


def test_a_migration_purges_nvidia_then_installs_rocm_torch_into_the_same_venv():
    host = cuda_host()
    planned = plan(
        {"rocm_version": "6.4.3", "rocm_migrate_from_cuda": True, "rocm_reboot": "allow"}, host
    )
    assert not planned.refused
    (purge,) = planned.find("Purge NVIDIA's driver and CUDA packages").commands
    assert script_call(purge) == (
        "nvidia-purge",
        [REBOOT_REASON, "libcuda1", "nvidia-driver", "nvidia-kernel-dkms"],
    )
    (uninstall,) = planned.find("Uninstall the CUDA wheels").commands
    assert str(uninstall).endswith(
        "uninstall --yes --no-input --disable-pip-version-check "
        "nvidia-cublas-cu12 torch torchvision triton"
    )
    names = planned.names
    assert names.index(planned.find("Uninstall the CUDA wheels").name) < names.index(
        planned.find("Install the torch wheels").name
    )
    assert planned.find("Create the PyTorch venv").commands == []  # the venv is kept
    # The driver stays loaded until a reboot, which the run plans (rocm_reboot: allow).
    assert "( sleep 1 && reboot )" in str(planned.find("Reboot hosts").commands[1])
    assert host.extra_reads == []
