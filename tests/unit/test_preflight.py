"""Preflight: the survey it reads (run for real under dash on this machine and with fake
tools) and its checks (``findings``, a pure function of the survey)."""

from __future__ import annotations

import shutil
from dataclasses import fields, replace

import pytest

from rocm_fleet.deploy.preflight import survey_reads
from rocm_fleet.facts.apt import AptInstallSize, _apt_need
from rocm_fleet.facts.round_trip import Survey, Unreadable
from rocm_fleet.facts.system import NvidiaStack
from rocm_fleet.model import paths
from rocm_fleet.model.answers import InstallSize
from rocm_fleet.model.config import load_config
from rocm_fleet.model.conflicts import venv_torch
from rocm_fleet.model.findings import findings
from rocm_fleet.model.host_survey import PER_PATH, HostSurvey
from rocm_fleet.model.nvidia import nvidia_stack
from rocm_fleet.model.pci_ids import lookup
from unit.conftest import DRIVERLESS
from unit.surveys import FRESH, fresh_survey

DASH = shutil.which("dash") or shutil.which("sh")


def config(**data):
    return load_config({"rocm_version": "6.4.3", **data}, "node")


# --- NvidiaStack ----------------------------------------------------------------------------

# dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n' (InstalledPackages), then
# the loaded modules (LoadedModules).
NVIDIA_HOST = [
    "ii |nvidia-driver|535.216.01-1~deb12u1",
    "ii |libcuda1:amd64|535.216.01-1~deb12u1",
    "iU |nvidia-kernel-dkms|535.216.01-1~deb12u1",  # unpacked, not configured: still there
    "rc |nvidia-driver-535|535.183.01-0ubuntu1",  # removed, config files left: gone
    "un |cuda-toolkit-12-8|",  # known to dpkg, never installed
    "ii |libnvidia-egl-wayland1:amd64|1:1.1.10-1",  # Mesa desktops have it: not NVIDIA's driver
    "ii |nvidia-texture-tools|2.1.2-1",
    "ii |curl|7.88.1-10+deb12u14",
    "__modules",
    "nvidia_uvm",
    "nvidia",
    "ext4",
]


def test_nvidia_stack_lists_installed_driver_and_cuda_packages_only():
    assert NvidiaStack().process(NVIDIA_HOST) == {
        "packages": ["libcuda1", "nvidia-driver", "nvidia-kernel-dkms"],
        "modules": ["nvidia", "nvidia_uvm"],
    }


def test_nvidia_stack_is_the_same_from_the_survey_sections():
    split = NVIDIA_HOST.index("__modules")
    from rocm_fleet.facts.apt import InstalledPackages
    from rocm_fleet.facts.system import LoadedModules

    packages = InstalledPackages().process(NVIDIA_HOST[:split])
    modules = LoadedModules().process(NVIDIA_HOST[split + 1 :])
    assert nvidia_stack(packages, modules) == NvidiaStack().process(NVIDIA_HOST)


def test_nvidia_from_the_package_listing():
    packages = {"nvidia-driver": "1", "libnvidia-egl-wayland1": "1", "curl": "1", "cuda": "1"}
    assert nvidia_stack(packages, ["nvidia_uvm", "ext4"]) == {
        "packages": ["cuda", "nvidia-driver"], "modules": ["nvidia_uvm"]
    }  # fmt: skip


# --- the survey -------------------------------------------------------------------------------


def test_the_harness_answers_every_survey_key_preflight_reads():
    reads = survey_reads(config())
    keys = [read.key for read in reads]
    assert len(keys) == len(set(keys))
    # Every field of the record is read (FRESH answers them all).
    single = {f.name for f in fields(FRESH)} - PER_PATH
    names = {read.name for read in reads}
    # Slurm's view of the node is read only with rocm_slurm_gres.
    assert single - {"slurm_node"} <= names, single - names
    assert "slurm_node" not in names
    assert "slurm_node" in {read.name for read in survey_reads(config(rocm_slurm_gres=True))}
    files = {read.kwargs["path"] for read in reads if read.name == "files"}
    assert set(paths.MANAGED_FILES) | {paths.ROCM_KEYRING} <= files
    assert paths.venv_marker(paths.DEFAULT_VENV) in files
    assert not any(read.name == "mok_pending" for read in reads)
    dkms = [read.key for read in survey_reads(config(rocm_driver="dkms"))]
    assert {f"mok_pending {cert}" for cert, _ in paths.MOK_KEYS.values()} == set(dkms) - set(keys)


def test_the_survey_follows_the_settings():
    reads = {read.key: read for read in survey_reads(config(
        rocm_users=["alice"], pytorch_venv="/srv/venv", rocm_packages=["rocm"]))}  # fmt: skip
    assert reads["groups"].kwargs == {"groups": ["video", "render"], "users": ["alice"]}
    assert reads["venv"].kwargs == {"venv": "/srv/venv"}
    assert reads["torch_build"].kwargs == {"venv": "/srv/venv"}
    assert reads["disk"].kwargs == {"paths": ["/opt", "/var/cache/apt/archives", "/srv/venv"]}
    assert reads["apt"].kwargs == {"packages": ["rocm"], "version_regex": "[.]60403-"}
    core = {read.key: read for read in survey_reads(config(
        rocm_version="10.1.0", pytorch_install=False, expected_gfx="gfx1100"))}  # fmt: skip
    assert core["apt"].kwargs == {
        "packages": ["amdrocm10.1-gfx1100"],
        "version_regex": "^10[.]1[.]0-",
    }  # fmt: skip (sized as if expected_gfx names every GPU; the plan decides)
    assert "files /srv/venv/pyvenv.cfg" in reads
    no_torch = {read.key: read for read in survey_reads(config(pytorch_install=False))}
    assert no_torch["disk"].kwargs == {"paths": list(paths.INSTALL_PATHS)}


def test_incomplete_survey_output_is_an_error_not_a_partial_answer():
    fact = Survey()
    fact.command(reads=survey_reads(config()))
    found = fact.process(["__survey_section=0", "ID=debian"])
    assert isinstance(found, Unreadable) and not found.forged
    assert found.reason.startswith("incomplete survey output: ")
    forged = fact.process(["__survey_section=0", "ID=debian", "__survey_section=0"])
    assert forged == Unreadable("output names section '0' twice: refused", forged=True)


@pytest.mark.parametrize(
    ("message", "need"),
    [
        ("After this operation, 2,345 MB of additional disk space will be used.", 2345 * 10**6),
        ("0 upgraded, 3 newly installed, 0 to remove. "
         "After this operation, 12.5 kB of additional disk space will be used.", 12500),
        ("0 upgraded, 0 newly installed, 0 to remove and 3 not upgraded.", 0),
        ("After this operation, 1,024 kB disk space will be freed.", 0),
        ("already installed from this release", 0),
        ("E: Unable to locate package rocm-hip-runtime", None),
        ("", None),
    ],
)  # fmt: skip
def test_apt_need_parses_apts_summary(message, need):
    assert _apt_need(message) == need
    output = [message] if message else []
    assert AptInstallSize().process(output) == InstallSize(need=need, message=message)


@pytest.mark.parametrize(
    ("venv", "strings", "build"),
    [
        ({"torch": "2.9.1+rocm6.4"}, {"hip": "6.4.43482-0f2d60242", "cuda": None}, "rocm"),
        ({"torch": "2.9.1+cu128"}, {"hip": None, "cuda": "12.8"}, "cuda"),
        ({"torch": "2.9.1"}, {"hip": None, "cuda": None}, "cpu"),
        ({"pip": "23.0.1"}, None, None),
    ],
)
def test_venv_torch_build(venv, strings, build):
    assert venv_torch(HostSurvey(venv=venv, torch_build=strings)).build == build


# --- findings ---------------------------------------------------------------------------------


def check(data=None, os_name=None, **survey):
    return findings(config(**(data or {})), fresh_survey(os_name, **survey))


MINT_22 = {"id": "linuxmint", "id_like": ["ubuntu", "debian"], "version_id": "22",
           "codename": "wilma", "point_release": None, "pretty_name": "Linux Mint 22"}  # fmt: skip
RX9070XT = {"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x7550", "class": "0x030000",
            "driver": None}  # fmt: skip
MI300X = {
    "slot": "0000:1b:00.0",
    "vendor": "0x1002",
    "device": "0x74a1",
    "class": "0x120000",
    "driver": "amdgpu",
}


def test_fresh_debian_12_with_an_rx7900xtx_passes():
    result = check({"expected_gfx": "gfx1100", "expected_gpu_count": 1})
    assert result.problems == [] and result.row.key == "debian 12"
    assert result.warnings == ["AMD lists debian 12 for Instinct only; gfx1100 on it is unofficial"]


# Debian 12's own rocminfo (/usr/bin/rocminfo) and the libraries it needs, as
# facts.apt_removal.DistroRocmPackages reads them (tests/e2e/test_preflight.py installs the real
# trixie packages on a lab host).
DEBIAN_ROCMINFO = {
    "packages": {"rocminfo": "5.2.3-2", "libhsa-runtime64-1": "5.2.3-3",
                 "libhsakmt1": "5.2.3+dfsg-1"},
    "needed_by": {"rocminfo": [], "libhsa-runtime64-1": ["rocminfo"],
                  "libhsakmt1": ["libhsa-runtime64-1"]},
    "tools": {"/usr/bin/rocminfo": "rocminfo", "/usr/bin/rocm_agent_enumerator": "rocminfo"},
    "conflicting": ["rocminfo"],
    "purge_conflicting": {"removes": ["rocminfo"], "errors": []},
    "purge_kept": {"removes": ["libhsa-runtime64-1", "libhsakmt1"], "errors": []},
}  # fmt: skip


@pytest.mark.parametrize(
    ("data", "os_name", "survey", "message"),
    [
        ({}, None, {"arch": "arm64"}, "architecture is arm64; AMD publishes ROCm for amd64 only"),
        ({}, "debian-11", {}, "debian 11 is not supported"),
        ({}, None, {"distro": MINT_22}, "linuxmint 22 is not supported"),
        ({}, None, {"pci": []}, "no AMD GPU found"),
        ({"expected_gfx": "gfx942"}, None, {}, "expected at least 1 x gfx942, found 1 x gfx1100"),
        ({"expected_gfx": "gfx942", "expected_gpu_count": 8}, None, {"pci": [MI300X]},
         "too few GPUs: expected 8 x gfx942, found 1"),
        ({}, None, {"wsl": True}, "this is WSL"),
        ({}, None, {"kernel": "6.6.87.2-microsoft-standard-WSL2"}, "this is WSL"),
        ({}, None, {"identity": {"uid": 1000, "user": "admin"}},
         "connected as admin (uid 1000), not root"),
        ({}, None, {"kernel": "5.10.0-30-amd64"}, "kernel 5.10.0-30-amd64 is older than 6.1"),
        ({}, None, {"packages": {"libcuda1": "535.216.01-1", "nvidia-driver": "535.216.01-1"},
                    "modules": ["nvidia", "ext4"]},
         "NVIDIA driver/CUDA stack installed (packages: libcuda1, nvidia-driver; loaded "
         "modules: nvidia): set rocm_migrate_from_cuda: true"),
        ({}, None, {"distro_rocm": DEBIAN_ROCMINFO},
         "Debian's own ROCm tools are installed: rocminfo 5.2.3-2 (/usr/bin/rocm_agent_enumerator, "
         "/usr/bin/rocminfo would run instead of AMD's on PATH; AMD's package of that name is "
         "versioned lower, so its pin can't replace it): remove them with apt-get purge "
         "rocminfo (apt-get -s purge rocminfo says it removes nothing else)"),
        ({}, None, {"sources": [["/etc/apt/sources.list.d/amdgpu-rocm.list",
                                 "deb https://repo.radeon.com/rocm/apt/6.2 jammy main"]]},
         "apt sources of another ROCm release: /etc/apt/sources.list.d/amdgpu-rocm.list (6.2)"),
        ({}, None, {"sources": [["/etc/apt/sources.list.d/rocm.sources",
                                 "URIs: https://repo.amd.com/rocm/packages/ubuntu2404"]]},
         "/etc/apt/sources.list.d/rocm.sources (ROCm Core SDK, repo.amd.com)"),
        ({}, None, {"venv": {"torch": "2.9.1+cu128"}, "torch_build": {"hip": None, "cuda": "12.8"}},
         "/opt/rocm-fleet/venv holds a CUDA torch (2.9.1+cu128)"),
        ({}, None, {"venv": {"torch": "2.9.1"}, "torch_build": {"hip": None, "cuda": None}},
         "holds a CPU torch (2.9.1)"),
        ({}, None, {"disk": [{"path": "/opt", "mount": "/opt", "avail": 64 * 2**20}]},
         "not enough free space on /opt (for /opt): 0.07 GB free, 10.00 GB needed"),
        # Known while planning, though an operation would be the one to fail (issue 19):
        ({"rocm_users": ["alice", "bob"]}, None,
         {"groups": {"groups": ["video"], "users": {"alice": ["alice"], "bob": None}}},
         "rocm_users names bob, not a user on this host: create it first"),
        ({**DRIVERLESS, "pytorch_install": False, "rocm_driver": "dkms"},
         "ubuntu-24.04", {"kernel": "6.8.0-50-generic"},
         "rocm_driver: dkms, but the matrix does not record which amdgpu driver ROCm 10.9.0 "
         "ships"),
        ({"expected_gfx": "gfx1201"}, None, {"kernel": "6.1.0-31-amd64", "mirror": None,
                                             "pci": [RX9070XT]},
         "a newer kernel from bookworm-backports is needed, but no Debian mirror is named"),
    ],
)  # fmt: skip
def test_each_problem_names_itself_and_its_fix(data, os_name, survey, message):
    result = check(data, os_name, **survey)
    assert result.row is None
    assert any(message in problem for problem in result.problems), result.problems


def test_a_backports_mirror_in_the_inventory_or_the_hosts_sources_is_enough():
    survey = {"kernel": "6.1.0-31-amd64", "mirror": None, "pci": [RX9070XT]}
    mirror = {"rocm_kernel_backports_mirror": "http://deb.debian.org/debian"}
    assert check({"expected_gfx": "gfx1201", **mirror}, **survey).problems == []
    assert check({"expected_gfx": "gfx1201"}, mirror="http://deb.debian.org/debian",
                 kernel="6.1.0-31-amd64", pci=[RX9070XT]).problems == []  # fmt: skip
    assert check({"expected_gfx": "gfx1201", "rocm_kernel_backports": "never"},
                 **survey).problems == []  # fmt: skip


def test_expected_gfx_on_a_gpu_less_host_is_a_warning():
    result = check({"expected_gfx": "gfx1100", "expected_gpu_count": 0}, pci=[])
    assert result.problems == []
    assert any(
        w.startswith("expected_gfx is gfx1100 but expected_gpu_count is 0: no GPU is checked")
        for w in result.warnings
    ), result.warnings


@pytest.mark.parametrize(
    ("key", "refused"),
    [("blocked", "is blocked by the firmware"), ("weird", "cannot tell whether"),
     ("enrolled", None), ("missing", None), ("not_enrolled", None)],
)  # fmt: skip
def test_a_dkms_signing_key_the_firmware_blocks_is_refused(key, refused):
    cert = "/var/lib/dkms/mok.pub"
    survey = {"secure_boot": {"state": "enabled"}, "mok": {cert: {"state": key}}}
    problems = check({"rocm_driver": "dkms"}, **survey).problems
    assert (problems[0] if problems else None) == (
        None if refused is None else next(p for p in problems if refused in p)
    )


def test_every_problem_of_a_host_is_reported_at_once():
    result = check({}, None, arch="arm64", wsl=True, identity={"uid": 1000, "user": "admin"})
    assert len(result.problems) == 3, result.problems
    for cause in (
        "architecture is arm64",
        "this is WSL",
        "connected as admin (uid 1000), not root",
    ):
        assert any(cause in problem for problem in result.problems), (cause, result.problems)


def test_gpu_less_host_is_fine_when_the_inventory_says_so():
    assert check({"expected_gpu_count": 0, "pytorch_install": False}, pci=[]).problems == []


def test_kfd_topology_wins_over_the_pci_table():
    kfd = [{"node": 1, "gfx": "gfx1101", "device_id": "0x747e", "slot": "0000:03:00.0"}]
    result = check({"expected_gfx": "gfx1100"}, kfd=kfd)
    assert "found 1 x gfx1101" in result.problems[0]


def test_unknown_amd_device_is_named_by_its_id():
    odd = {
        "slot": "0000:03:00.0",
        "vendor": "0x1002",
        "device": "0x1234",
        "class": "0x030000",
        "driver": None,
    }
    result = check({"expected_gfx": "gfx1100"}, pci=[odd])
    assert "found 1 x unknown AMD device 0x1234" in result.problems[0]


def test_distro_override_deploys_an_unknown_distro_with_a_warning():
    result = check({"rocm_distro_override": "ubuntu 24.04"}, distro=MINT_22)
    assert result.problems == [] and result.row.suite == "noble"
    assert "deploying it as ubuntu 24.04 (rocm_distro_override): unofficial" in result.warnings[0]


def test_apt_figure_replaces_the_floor_once_apt_can_size_the_packages():
    small = [{"path": "/opt", "mount": "/", "avail": 3 * 10**9}]
    fits = InstallSize(need=2 * 10**9, message="After this operation, 2,000 MB of additional ...")
    assert check(disk=small, apt=fits).problems == []
    too_big = InstallSize(
        need=4 * 10**9, message="After this operation, 4,000 MB of additional ..."
    )
    assert "4.00 GB needed (what apt says" in check(disk=small, apt=too_big).problems[0]


def test_our_own_source_of_another_release_is_not_a_conflict():
    ours = [[paths.ROCM_SOURCE, "deb https://repo.radeon.com/rocm/apt/6.2 jammy main"]]
    assert check(sources=ours).problems == []


def test_amd_packages_and_a_rocm_torch_are_not_conflicts():
    packages = {"rocminfo": "1.0.0.60403-128~22.04", "rocm-core": "6.4.3.60403-128~22.04"}
    result = check(
        packages=packages,
        venv={"torch": "2.9.1+rocm6.4"},
        torch_build={"hip": "6.4.43482-0f2d60242", "cuda": None},
    )
    assert result.problems == []


def test_migrate_from_cuda_turns_the_nvidia_stack_and_cuda_torch_into_warnings():
    survey = fresh_survey(
        packages={"nvidia-driver": "535.216.01-1"},
        nvidia_purge={
            "packages": {"nvidia-driver": "535.216.01-1"},
            "purge": {"removes": ["nvidia-driver", "nvidia-kernel-dkms"], "errors": []},
        },
        modules=["nvidia"],
        venv={"torch": "2.9.1+cu128"},
        torch_build={"hip": None, "cuda": "12.8"},
    )
    refused = findings(config(), survey)
    assert len(refused.problems) == 2 and refused.row is None
    assert refused.problems[0].startswith("NVIDIA driver/CUDA stack installed"), refused.problems
    assert "holds a CUDA torch (2.9.1+cu128)" in refused.problems[1], refused.problems
    assert all("rocm_migrate_from_cuda: true" in problem for problem in refused.problems)
    result = findings(config(rocm_migrate_from_cuda=True), survey)
    assert result.problems == [] and result.row.key == "debian 12"
    assert result.warnings[-2:] == [
        "NVIDIA stack present (packages: nvidia-driver); rocm_migrate_from_cuda: the deploy "
        "purges them (apt-get -s purge nvidia-driver says it also removes nvidia-kernel-dkms)",
        "/opt/rocm-fleet/venv holds a CUDA torch (2.9.1+cu128): remove the venv (or set "
        "pytorch_venv to a new path) so the ROCm build goes into a clean one; "
        "rocm_migrate_from_cuda",
    ]


def test_migrate_from_cuda_refuses_a_purge_that_takes_more_than_nvidias_stack():
    survey = fresh_survey(
        packages={"nvidia-driver": "535.216.01-1", "libcuda1": "535.216.01-1"},
        nvidia_purge={
            "packages": {"nvidia-driver": "535.216.01-1", "libcuda1": "535.216.01-1"},
            "purge": {"removes": ["libcuda1", "nvidia-driver", "openmpi-bin", "libucx0"],
                      "errors": []},
        },
    )  # fmt: skip
    result = findings(config(rocm_migrate_from_cuda=True), survey)
    (problem,) = result.problems
    assert problem.startswith(
        "rocm_migrate_from_cuda would purge NVIDIA's packages (libcuda1, nvidia-driver), but "
        "apt-get -s purge libcuda1 nvidia-driver says it also removes libucx0, openmpi-bin: "
    )
    unsure = replace(survey, nvidia_purge={**survey.nvidia_purge, "purge": None})
    (problem,) = findings(config(rocm_migrate_from_cuda=True), unsure).problems
    assert "apt could not work out what removing them takes along" in problem


def test_pci_table_maps_the_issue_examples():
    assert lookup("0x744C").gfx == "gfx1100" and "Navi 31" in lookup("744c").name
    assert lookup("0x74a1").gfx == "gfx942" and "MI300X" in lookup("0x74a1").name
    assert lookup("0xffff") is None


def test_the_libraries_a_refused_tool_needs_are_only_a_warning():
    result = check(distro_rocm=DEBIAN_ROCMINFO)
    (warning,) = [w for w in result.warnings if "ROCm libraries" in w]
    assert warning == (
        "Debian's own ROCm libraries are installed (libhsa-runtime64-1 5.2.3-3, libhsakmt1 "
        "5.2.3+dfsg-1): rocminfo needs libhsa-runtime64-1 (and through it libhsakmt1). They "
        "install under /usr, apart from AMD's /opt/rocm, and put none of AMD's programs on "
        "PATH, so they are left in place (apt-get -s purge libhsa-runtime64-1 libhsakmt1 says "
        "it removes nothing else)"
    )


def test_a_library_nothing_needs_is_said_so():
    alone = {"packages": {"librocm-smi64-1": "5.2.3-2"}, "needed_by": {"librocm-smi64-1": []},
             "tools": {}, "conflicting": [], "purge_conflicting": None,
             "purge_kept": {"removes": ["librocm-smi64-1"], "errors": []}}  # fmt: skip
    (warning,) = [w for w in check(distro_rocm=alone).warnings if "ROCm libraries" in w]
    assert "(librocm-smi64-1 5.2.3-2): nothing installed needs librocm-smi64-1." in warning


@pytest.mark.parametrize(
    ("purge", "names", "effect"),
    [
        ({"removes": ["hipcc", "rocminfo", "my-hip-app"], "errors": []}, ["hipcc", "rocminfo"],
         "apt-get -s purge hipcc rocminfo says it also removes my-hip-app"),
        ({"removes": [], "errors": ["Unable to locate package rocminfo"]}, ["rocminfo"],
         "apt could not work out what removing them takes along (Unable to locate package "
         "rocminfo): run apt-get -s purge rocminfo"),
        ({"removes": [f"cuda-{n}" for n in range(7)], "errors": []},
         [f"cuda-{n}" for n in range(7)],
         "apt-get -s purge of these 7 packages says it removes nothing else"),
    ],
)  # fmt: skip
def test_a_suggested_removal_says_what_apt_says_it_takes_along(purge, names, effect):
    from rocm_fleet.model.conflicts import removal_effect

    assert removal_effect(purge, names) == effect


# An MI300X's SR-IOV virtual function as a KVM guest sees it (pci.ids 2026.08.22: 0x74b5
# "Aqua Vanjaram [Instinct MI300X VF]"; a processing accelerator like the MI300X itself).
MI300X_VF = {**MI300X, "slot": "0000:83:00.0", "device": "0x74b5", "driver": None}


def test_a_vm_with_an_mi300x_virtual_function_is_named_with_what_its_guest_needs():
    data = {"expected_gfx": "gfx942", "expected_gpu_count": 1}
    result = check(data, "ubuntu-24.04", pci=[MI300X_VF])
    assert result.problems == [] and result.gpus == ["gfx942"]
    (note,) = [w for w in result.warnings if "virtual function" in w]
    assert note.startswith(
        "1002:74b5 at 0000:83:00.0 is an SR-IOV virtual function (this host is a VM guest): "
        "Aqua Vanjaram [Instinct MI300X VF], gfx942; AMD lists guests Ubuntu 24.04, "
        "Ubuntu 22.04, RHEL 10.2, RHEL 9.4 (KVM on Ubuntu 24.04 with GIM 9.2.0.K; "
    )
    assert "unofficial" not in note
    assert note.endswith("not ECC error counts (amd-smi metric --ecc: the host's to read)")
    # a guest release AMD doesn't list for it is told so
    (note,) = [w for w in check(data, "ubuntu-26.04", pci=[MI300X_VF]).warnings if "VF" in w]
    assert "; ubuntu 26.04 is not among them: unofficial" in note


# --- the kernel AMD lists per distro release and GPU family (os-support.yaml) -----------------


def test_a_radeon_card_on_a_ga_kernel_amd_lists_only_hwe_for_is_told_the_kernel_it_needs():
    """AMD lists Radeon on Ubuntu 24.04 with HWE 6.17 (Instinct: GA 6.8): preflight names the
    family, the kernel and Ubuntu's HWE, before any change."""
    data = {"rocm_version": "10.1.0", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
    result = check(data, "ubuntu-24.04", kernel="6.8.0-51-generic")
    assert result.problems == []
    assert (
        "AMD lists kernel 6.17 (Ubuntu's HWE kernel) for Radeon GPUs (gfx1100) on ubuntu 24.04 "
        "with the ROCm Core SDK; this host runs 6.8.0-51-generic: the deploy installs "
        "linux-generic-hwe-24.04 (rocm_kernel_backports: auto); it runs after a reboot"
    ) in result.warnings
    never = check({**data, "rocm_kernel_backports": "never"}, "ubuntu-24.04",
                  kernel="6.8.0-51-generic")  # fmt: skip
    assert any(
        w.endswith(
            ": install linux-generic-hwe-24.04 and reboot, or set rocm_kernel_backports: auto"
        )
        for w in never.warnings
    )
    # without expected_gfx: the card found picks the family
    found = check({"rocm_version": "10.1.0"}, "ubuntu-24.04", kernel="6.8.0-51-generic")
    assert any("for Radeon GPUs (gfx1100)" in w and "expected_gfx: gfx1100" in w
               for w in found.warnings)  # fmt: skip
    # an Instinct card on the same kernel: AMD lists the GA kernel for it
    mi300x = check({"rocm_version": "10.1.0", "expected_gfx": "gfx942"}, "ubuntu-24.04",
                   kernel="6.8.0-51-generic", pci=[MI300X])  # fmt: skip
    assert not any("AMD lists kernel" in w for w in mi300x.warnings)
    # on the HWE kernel, nothing to say
    hwe = check(data, "ubuntu-24.04", kernel="6.17.0-14-generic")
    assert not any("AMD lists kernel" in w for w in hwe.warnings)


def test_an_apu_on_ubuntu_24_04_is_told_amd_lists_the_oem_kernel():
    strix = {"slot": "0000:c5:00.0", "vendor": "0x1002", "device": "0x1586", "class": "0x038000",
             "driver": None}  # fmt: skip
    result = check({"rocm_version": "10.1.0"}, "ubuntu-24.04", kernel="6.8.0-51-generic",
                   pci=[strix])  # fmt: skip
    assert (
        "AMD lists kernel 6.17 (Ubuntu's OEM kernel) for Ryzen GPUs (gfx1151) on ubuntu 24.04 "
        "with the ROCm Core SDK; this host runs 6.8.0-51-generic: install Ubuntu's OEM kernel "
        "for this release and reboot (rocm-fleet installs no OEM kernel)"
    ) in result.warnings


# --- amdgpu-dkms's kernel range (its kernel base, ROCm/legacy-rocm-build#6193) ----------------


def test_dkms_past_its_kernel_range_is_warned_and_refused_where_the_distro_kernel_is_past_it(
    monkeypatch,
):
    from rocm_fleet.model import matrix

    # ROCm 7.2.0's driver 30.30 ships amdgpu-dkms 6.16.13: a host on a 6.17 kernel is told
    data = {"rocm_version": "7.2.0", "rocm_driver": "dkms", "expected_gfx": "gfx942"}
    result = check(data, "ubuntu-24.04", kernel="6.17.0-14-generic", pci=[MI300X])
    assert result.problems == []
    assert (
        "amdgpu-dkms 1:6.16.13.30300000-2278356 (driver 30.30, ROCm 7.2.0) supports kernels up "
        "to 6.16 (its kernel base: AMD, ROCm/legacy-rocm-build#6193); this host runs "
        "6.17.0-14-generic, a newer series: the module may not build for it (rocm_driver: "
        "inbox uses the kernel's own amdgpu)"
    ) in result.warnings
    assert not any("supports kernels up" in w for w in check({**data, "rocm_driver": "inbox"},
                   "ubuntu-24.04", kernel="6.17.0-14-generic", pci=[MI300X]).warnings)  # fmt: skip
    # a driver whose range ends before Ubuntu 26.04's own kernel (7.0): dkms refused, inbox named
    limit = matrix.DriverKernel("31.60", None, "6.19")
    monkeypatch.setitem(matrix.DRIVER_KERNEL, "31.60", limit)
    refused = check({**data, "rocm_version": "10.1.0"}, "ubuntu-26.04",
                    kernel="7.0.0-15-generic", pci=[MI300X])  # fmt: skip
    assert (
        "rocm_driver: dkms, but amdgpu-dkms (driver 31.60, ROCm 10.1.0) supports kernels up to "
        "6.19 (its kernel base: AMD, ROCm/legacy-rocm-build#6193) and ubuntu 26.04's kernel is "
        "7.0: set rocm_driver: inbox (the kernel's own amdgpu), or choose a ROCm release whose "
        "driver supports that kernel"
    ) in refused.problems
    inbox = check({**data, "rocm_version": "10.1.0", "rocm_driver": "inbox"}, "ubuntu-26.04",
                  kernel="7.0.0-15-generic", pci=[MI300X])  # fmt: skip
    assert inbox.problems == []


def test_the_reboot_gate_takes_the_dkms_range_of_the_release():
    from rocm_fleet.model.boot import dkms_limit

    assert dkms_limit(config(rocm_version="7.2.0", rocm_driver="dkms")) == "6.16"
    assert dkms_limit(config(rocm_version="7.2.4", rocm_driver="dkms")) == "6.16"
    assert dkms_limit(config(rocm_version="7.2.0")) is None  # inbox
    assert dkms_limit(config(rocm_version="10.1.0", rocm_driver="dkms")) is None  # not known
