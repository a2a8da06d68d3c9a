"""Preflight on a real Ubuntu 24.04 CUDA host (tests/fixtures/cuda-host): the facts run for
real under dash, with the real dpkg-query and apt-get pointed at that host's dpkg database,
and the PCI fact at a sysfs tree made from that host's devices.

What the host is: NVIDIA's driver, CUDA 13, cuDNN, NCCL and OpenMPI; Ubuntu's own HIP
libraries (libamdhip64-5 and what it needs) only because OpenMPI's libucx0 depends on
libamdhip64-5. Preflight must leave those libraries alone with a warning naming libucx0
(purging them would take OpenMPI along), refuse the host for the NVIDIA stack unless
rocm_migrate_from_cuda, and say which GPU it found instead of an AMD one.
"""

from __future__ import annotations

import gzip
import os
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.facts.apt import InstalledPackages
from rocm_fleet.facts.apt_removal import DistroRocmPackages, PackagePurge
from rocm_fleet.facts.gpu import PciGpus
from rocm_fleet.model import conflicts
from rocm_fleet.model import findings as preflight
from rocm_fleet.model.config import load_config
from rocm_fleet.model.nvidia import NVIDIA_PACKAGE_EXCEPTIONS, NVIDIA_PACKAGE_PATTERNS
from unit.surveys import ROOT, fresh_survey

HOST = ROOT / "tests" / "fixtures" / "cuda-host"
DASH = "/bin/dash" if Path("/bin/dash").exists() else "/bin/sh"
HIP_LIBRARIES = ["libamd-comgr2", "libamdhip64-5", "libhsa-runtime64-1", "libhsakmt1"]
OPENMPI = ["libopenmpi-dev", "libopenmpi3t64", "libucx0", "openmpi-bin"]


def captured(name: str) -> list[str]:
    """A capture's lines without its `# cmd:` / `# date:` / `# exit=` lines."""
    return [l for l in (HOST / name).read_text().splitlines() if not l.startswith("# ")]  # noqa: E741


@pytest.fixture(scope="module")
def dpkg_database(tmp_path_factory) -> dict[str, str]:
    """Environment for dpkg-query and apt-get to read the CUDA host's dpkg database (and
    nothing of this machine's apt configuration, sources or lists)."""
    root = tmp_path_factory.mktemp("cuda-host")
    (root / "status").write_bytes(gzip.decompress((HOST / "dpkg-status.gz").read_bytes()))
    for sub in (
        "info",
        "updates",
        "lists/partial",
        "cache/archives/partial",
        "parts",
        "prefs",
        "log",
    ):
        (root / sub).mkdir(parents=True)
    (root / "extended_states").touch()
    (root / "apt.conf").write_text(
        f'Dir::State::status "{root}/status";\n'
        f'Dir::State::extended_states "{root}/extended_states";\n'
        f'Dir::State::Lists "{root}/lists";\n'
        f'Dir::Cache "{root}/cache";\n'
        f'Dir::Log "{root}/log";\n'
        'Dir::Etc::SourceList "/dev/null";\n'
        f'Dir::Etc::SourceParts "{root}/parts";\n'
        f'Dir::Etc::Parts "{root}/parts";\n'
        'Dir::Etc::Preferences "/dev/null";\n'
        f'Dir::Etc::PreferencesParts "{root}/prefs";\n'
        'APT::Architecture "amd64";\nAPT::Architectures { "amd64"; };\n'
    )
    return {"PATH": "/usr/bin:/bin", "DPKG_ADMINDIR": str(root), "APT_CONFIG": f"{root}/apt.conf"}


def run_fact(fact, env: dict[str, str], **kwargs):
    proc = subprocess.run(
        [DASH, "-c", fact.command(**kwargs)],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )  # fmt: skip
    return fact.process(proc.stdout.splitlines())


def distro_rocm(env):
    return run_fact(
        DistroRocmPackages(), env, patterns=conflicts.DISTRO_ROCM_PACKAGES,
        same_names=conflicts.AMD_PACKAGE_NAMES, tools=conflicts.AMD_PROGRAMS,
    )  # fmt: skip


def nvidia_purge(env):
    return run_fact(
        PackagePurge(), env, patterns=NVIDIA_PACKAGE_PATTERNS, exceptions=NVIDIA_PACKAGE_EXCEPTIONS
    )


def sysfs(tmp_path: Path) -> Path:
    """/sys/bus/pci/devices as on the host, from the captured vendor/device/class/driver."""
    devices = tmp_path / "bus/pci/devices"
    for line in captured("sys-bus-pci-devices"):
        slot, *fields = line.split()
        values = dict(field.split("=", 1) for field in fields)
        device = devices / slot
        device.mkdir(parents=True)
        for name in ("vendor", "device", "class"):
            (device / name).write_text(values[name] + "\n")
        if values["driver"]:
            driver = tmp_path / "bus/pci/drivers" / values["driver"]
            driver.mkdir(parents=True, exist_ok=True)
            os.symlink(os.path.relpath(driver, device), device / "driver")
    return devices


def pci(tmp_path: Path):
    command = PciGpus().command().replace("/sys/bus/pci/devices", str(sysfs(tmp_path)))
    out = subprocess.run([DASH, "-c", command], capture_output=True, text=True, check=True)
    return PciGpus().process(out.stdout.splitlines())


def test_the_pci_fact_reads_the_nvidia_gpu_and_skips_the_virtio_devices(tmp_path):
    assert pci(tmp_path) == [
        {"slot": "0000:00:06.0", "vendor": "0x10de", "device": "0x2335", "class": "0x030200",
         "driver": "nvidia", "vram_total": None, "gtt_total": None},
    ]  # fmt: skip


def test_ubuntus_hip_libraries_are_found_with_what_needs_them_and_what_purging_takes(
    dpkg_database,
):
    rocm = distro_rocm(dpkg_database)
    assert sorted(rocm["packages"]) == HIP_LIBRARIES
    assert rocm["packages"]["libamdhip64-5"] == "5.7.1-3"
    assert rocm["needed_by"] == {
        "libamd-comgr2": ["libamdhip64-5"],
        "libamdhip64-5": ["libucx0"],
        "libhsa-runtime64-1": ["libamdhip64-5"],
        "libhsakmt1": ["libhsa-runtime64-1"],
    }
    assert rocm["tools"] == {} and rocm["conflicting"] == []
    assert rocm["purge_conflicting"] is None
    # The same answer apt gave on the host itself for the same purge.
    on_the_host = sorted(
        line.split()[1]
        for line in captured("apt-get-s-purge-rocm-libs")
        if line.startswith("Purg ")
    )
    assert rocm["purge_kept"] == {"removes": on_the_host, "errors": []}
    assert on_the_host == sorted(HIP_LIBRARIES + OPENMPI)


def test_the_simulations_write_nothing(dpkg_database):
    """apt logs every removal it plans, a simulated one too (eipp.log.xz), unless told not
    to; the survey must leave the host as it was."""
    root = Path(dpkg_database["DPKG_ADMINDIR"])
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    distro_rocm(dpkg_database), nvidia_purge(dpkg_database)
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before
    assert list((root / "log").iterdir()) == []


def test_purging_nvidias_stack_takes_nothing_else_along(dpkg_database):
    nvidia = nvidia_purge(dpkg_database)
    installed = run_fact(InstalledPackages(), dpkg_database)
    from rocm_fleet.model.nvidia import nvidia_stack

    assert sorted(nvidia["packages"]) == nvidia_stack(installed, [])["packages"]
    assert {"cuda-nvcc-13-0", "libcublas-13-0", "libcudnn9-cuda-13", "libnccl2"} <= set(
        nvidia["packages"]
    )
    assert nvidia["purge"] == {"removes": sorted(nvidia["packages"]), "errors": []}


@pytest.fixture(scope="module")
def survey(dpkg_database, tmp_path_factory):
    """Preflight's survey of the host, the facts above answering their keys."""
    meta = dict(line.split("=", 1) for line in captured("os-release") if "=" in line)
    modules = [line.split()[0] for line in captured("proc-modules-nvidia") if " Live " in line]
    return fresh_survey(
        distro={"id": meta["ID"], "id_like": [meta["ID_LIKE"]], "version_id": "24.04",
                "codename": meta["VERSION_CODENAME"], "point_release": "24.04.3",
                "pretty_name": meta["PRETTY_NAME"].strip('"')},
        kernel="6.18.44-fc-v657-gpu",
        pci=pci(tmp_path_factory.mktemp("sys")),
        modules=modules,
        packages=run_fact(InstalledPackages(), dpkg_database),
        nvidia_purge=nvidia_purge(dpkg_database),
        distro_rocm=distro_rocm(dpkg_database),
    )  # fmt: skip


def findings(survey, **data):
    return preflight.findings(load_config({"rocm_version": "6.4.3", **data}, "cuda01"), survey)


def test_the_hip_libraries_are_a_warning_naming_libucx0_and_what_purging_takes(survey):
    result = findings(survey)
    (warning,) = [w for w in result.warnings if "ROCm libraries" in w]
    assert warning.startswith("Ubuntu's own ROCm libraries are installed (libamd-comgr2 ")
    assert "libucx0 needs libamdhip64-5 (and through it libamd-comgr2, libhsa-runtime64-1, " in (
        warning
    )
    assert warning.endswith(
        "(apt-get -s purge libamd-comgr2 libamdhip64-5 libhsa-runtime64-1 libhsakmt1 says it "
        "also removes libopenmpi-dev, libopenmpi3t64, libucx0, openmpi-bin)"
    )
    assert not any("ROCm" in problem for problem in result.problems)


def test_the_host_is_refused_for_the_nvidia_stack_and_says_which_gpu_it_has(survey):
    result = findings(survey)
    gpu, nvidia = result.problems
    assert gpu.startswith(
        "no AMD GPU found (no PCI device of vendor 0x1002 with a display or processing-"
        "accelerator class; found instead: NVIDIA Corporation 10de:2335 GH100 [H200 SXM 141GB] "
        "(3D controller) at 0000:00:06.0)"
    )
    assert nvidia.startswith("NVIDIA driver/CUDA stack installed (packages: cuda-cccl-13-0, ")
    assert "loaded modules: nvidia, nvidia_uvm): set rocm_migrate_from_cuda: true" in nvidia
    count = len(survey.nvidia_purge["packages"])
    assert nvidia.endswith(
        f"(apt-get -s purge of these {count} packages says it removes nothing else)"
    )
    # Dozens of packages: the line names five and counts the rest; the details list all.
    everything = result.details["NVIDIA packages"]
    assert len(everything) == count > 5
    assert f"{', '.join(everything[:5])} and {count - 5} more (pyinfra -v or rocm-fleet " in nvidia
    assert everything[5] not in nvidia and len(nvidia) < 500


def test_with_migrate_from_cuda_and_no_gpu_expected_the_host_may_go_ahead(survey):
    result = findings(survey, rocm_migrate_from_cuda=True, expected_gpu_count=0)
    assert result.problems == []
    assert result.row.key == "ubuntu 24.04"
    assert any(
        w.startswith("NVIDIA stack present (packages: cuda-cccl-13-0") for w in result.warnings
    )
    assert any("libucx0 needs libamdhip64-5" in w for w in result.warnings)
