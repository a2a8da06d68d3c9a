"""The survey: every fact preflight and the plan of a converged host read, in one round trip.

``survey_reads`` lists them for a host's configuration: the hardware and health reads
preflight's rules (``model.findings``) judge, and every fact the operations read on a
converged host (the same facts with the same arguments the operations ask for).
``read_survey`` reads them all with one ``Survey`` fact and remembers each answer in the
fact cache (``engine.factcache``), so planning asks the host nothing more.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyinfra import host

from rocm_fleet.engine.factcache import remember_fact
from rocm_fleet.facts.apt import (
    AptInstallSize,
    AptSourceLines,
    DebianMirror,
    DistroRocmPackages,
    DpkgInterrupted,
    InstalledPackages,
    KeyringFingerprints,
    PackagePurge,
)
from rocm_fleet.facts.files import DirectoryExists, FileDigest
from rocm_fleet.facts.gpu import KfdNodes, PciGpus, RocmVersion
from rocm_fleet.facts.python import TorchBuildStrings, VenvDistributions
from rocm_fleet.facts.secureboot import MokKeyState, MokPending, SecureBoot
from rocm_fleet.facts.survey import Read, Survey
from rocm_fleet.facts.system import (
    AmdgpuModule,
    Architecture,
    DaemonRunning,
    DistroRelease,
    FreeSpace,
    Identity,
    LoadedModules,
    Nameservers,
    NvidiaStack,
    RebootRequired,
    RunningKernel,
    Wsl,
)
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.model import paths
from rocm_fleet.model.findings import (
    AMD_PACKAGE_NAMES,
    AMD_PROGRAMS,
    AMD_REPOSITORY_HOSTS,
    DISTRO_ROCM_PACKAGES,
)
from rocm_fleet.model.nvidia import NVIDIA_PACKAGE_EXCEPTIONS, NVIDIA_PACKAGE_PATTERNS, nvidia_stack

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


def survey_reads(config: Config) -> list[Read]:
    """What preflight reads: the host's hardware and health, and every fact the plan of a
    converged host reads (the same facts with the same arguments the operations ask for)."""
    venv = config.pytorch_venv
    install_paths = [*paths.INSTALL_PATHS, *([venv] if config.pytorch_install else [])]
    certificates = [cert for cert, _ in paths.MOK_KEYS.values()]
    files = [*paths.MANAGED_FILES, *paths.MANAGED_KEYRINGS, paths.venv_marker(venv), *certificates]
    reads = [
        Read("distro", DistroRelease),
        Read("arch", Architecture),
        Read("kernel", RunningKernel),
        Read("identity", Identity),
        Read("wsl", Wsl),
        Read("pci", PciGpus),
        Read("kfd", KfdNodes),
        Read("amdgpu", AmdgpuModule),
        Read("modules", LoadedModules),
        Read("packages", InstalledPackages),
        Read(
            "nvidia_purge",
            PackagePurge,
            {"patterns": NVIDIA_PACKAGE_PATTERNS, "exceptions": NVIDIA_PACKAGE_EXCEPTIONS},
        ),
        Read(
            "distro_rocm",
            DistroRocmPackages,
            {
                "patterns": DISTRO_ROCM_PACKAGES,
                "same_names": AMD_PACKAGE_NAMES,
                "tools": AMD_PROGRAMS,
            },
        ),
        Read("dpkg", DpkgInterrupted),
        Read("sources", AptSourceLines, {"hosts": AMD_REPOSITORY_HOSTS}),
        Read("mirror", DebianMirror),
        Read("rocm_version", RocmVersion),
        Read("secure_boot", SecureBoot),
        Read("reboot", RebootRequired),
        Read(
            "groups",
            GroupMembership,
            {"groups": list(paths.GPU_GROUPS), "users": config.rocm_users},
        ),
        Read("venv", VenvDistributions, {"venv": venv}),
        Read("torch_build", TorchBuildStrings, {"venv": venv}),
        Read("disk", FreeSpace, {"paths": install_paths}),
        # Sized before the GPUs are known: as if expected_gfx names every GPU of the host
        # (a host with others gets the all-targets package, and a plan asks apt again).
        Read(
            "apt",
            AptInstallSize,
            {
                "packages": config.wanted_packages(config.expected_gfx_list),
                "version_regex": config.stream.version_regex(config.release),
            },
        ),
        *(Read(f"file {path}", FileDigest, {"path": path}) for path in files),
        *(Read(f"keyring {k}", KeyringFingerprints, {"path": k}) for k in paths.MANAGED_KEYRINGS),
        *(Read(f"dir {d}", DirectoryExists, {"path": d}) for d in paths.MANAGED_DIRECTORIES),
        Read("nginx", DaemonRunning, {"pidfile": paths.NGINX_PID}),
        Read("nameservers", Nameservers),
        *(Read(f"mok {cert}", MokKeyState, {"path": cert}) for cert in certificates),
    ]
    if config.rocm_driver == "dkms":
        reads += [Read(f"mok-new {cert}", MokPending, {"path": cert}) for cert in certificates]
    return reads


def read_survey(reads: list[Read]) -> dict[str, Any] | None:
    """Read ``reads`` from the current host in one round trip and remember every answer for
    planning; None when the survey can't run (pyinfra's own error output says why)."""
    # _ignore_errors: a survey that can't run (sudo refused) becomes the caller's refusal,
    # with pyinfra's own error output above it, instead of an unexplained failed host.
    survey = host.get_fact(Survey, reads=reads, _ignore_errors=True)
    if survey is None:
        return None
    for read in reads:
        remember_fact(read.fact, survey[read.key], **read.kwargs)
    remember_fact(NvidiaStack, nvidia_stack(survey["packages"], survey["modules"]))
    return survey
