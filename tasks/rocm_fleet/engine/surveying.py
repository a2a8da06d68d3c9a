"""The survey: every fact preflight and the plan of a converged host read, in one round trip.

The survey derives from declarations: ``preflight_reads`` are the hardware and health reads
preflight's rules (``model.findings``) and the audit judge; each operations module declares
what its operations read on a converged host (its ``survey_reads(config)``: the same facts
with the same arguments the operations ask for), and the deploy what its tasks read
themselves (``deploy.preflight.survey_reads`` puts them together with ``merged``). A fact
read with ``read_fact`` that no declaration names fails a unit test (``test_plan``), and a
converged host planned from its survey alone must ask nothing more (the same tests).
``read_survey`` reads them all with one ``Survey`` fact (one round trip), remembers each
answer in the fact cache (``engine.factcache``), so planning asks the host nothing more, and
gives them to preflight as its typed record (``model.host_survey.HostSurvey``: each read names
the field it fills).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pyinfra import host

from rocm_fleet.engine.factcache import remember_fact
from rocm_fleet.facts.apt import (
    AptInstallSize,
    AptSourceLines,
    DistroRocmPackages,
    InstalledPackages,
    PackagePurge,
)
from rocm_fleet.facts.gpu import KfdNodes, PciGpus, RocmVersion
from rocm_fleet.facts.python import TorchBuildStrings, VenvDistributions
from rocm_fleet.facts.round_trip import Read, Survey, host_survey
from rocm_fleet.facts.secureboot import MokKeyState, SecureBoot
from rocm_fleet.facts.system import (
    AmdgpuModule,
    ApuMemory,
    Architecture,
    DistroRelease,
    FreeSpace,
    Identity,
    LoadedModules,
    NvidiaStack,
    RebootRequired,
    RunningKernel,
    Wsl,
)
from rocm_fleet.model import paths
from rocm_fleet.model.conflicts import (
    AMD_PACKAGE_NAMES,
    AMD_PROGRAMS,
    AMD_REPOSITORY_HOSTS,
    DISTRO_ROCM_PACKAGES,
)
from rocm_fleet.model.nvidia import NVIDIA_PACKAGE_EXCEPTIONS, NVIDIA_PACKAGE_PATTERNS, nvidia_stack

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config
    from rocm_fleet.model.host_survey import HostSurvey


def preflight_reads(config: Config) -> list[Read]:
    """What preflight's rules (``model.findings``) and the audit judge: the host's hardware
    and health. The operations and tasks declare what else the plan reads
    (``deploy.preflight.survey_reads`` puts them together)."""
    venv = config.pytorch_venv
    install_paths = [*paths.INSTALL_PATHS, *([venv] if config.torch is not None else [])]
    certificates = [cert for cert, _ in paths.MOK_KEYS.values()]
    return [
        Read("distro", DistroRelease),
        Read("arch", Architecture),
        Read("kernel", RunningKernel),
        Read("identity", Identity),
        Read("wsl", Wsl),
        Read("pci", PciGpus),
        Read("kfd", KfdNodes),
        Read("amdgpu", AmdgpuModule),
        Read("apu_memory", ApuMemory),
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
        Read("sources", AptSourceLines, {"hosts": AMD_REPOSITORY_HOSTS}),
        Read("rocm_version", RocmVersion),
        Read("secure_boot", SecureBoot),
        Read("reboot", RebootRequired),
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
        *(Read("mok", MokKeyState, {"path": cert}) for cert in certificates),
    ]


#: Facts the survey answers without a read of their own: worked out from other answers
#: (``read_survey`` remembers them), as the fact itself works them out on the host.
DERIVED = (NvidiaStack,)


def merged(*declared: Iterable[Read]) -> list[Read]:
    """One survey of several declarations: each key once, in the order first declared. Two
    declarations of a key must be the same read (else ValueError: one key, two questions)."""
    reads: dict[str, Read] = {}
    for group in declared:
        for read in group:
            seen = reads.setdefault(read.key, read)
            if seen != read:
                raise ValueError(f"survey key {read.key!r} declared twice: {seen} and {read}")
    return list(reads.values())


def read_survey(reads: list[Read]) -> HostSurvey | None:
    """Read ``reads`` from the current host in one round trip and remember every answer for
    planning; None when the survey can't run (pyinfra's own error output says why)."""
    # _ignore_errors: a survey that can't run (sudo refused) becomes the caller's refusal,
    # with pyinfra's own error output above it, instead of an unexplained failed host.
    answers = host.get_fact(Survey, reads=reads, _ignore_errors=True)
    if answers is None:
        return None
    for read, answer in zip(reads, answers, strict=True):
        remember_fact(read.fact, answer, **read.kwargs)
    survey = host_survey(reads, answers)
    remember_fact(NvidiaStack, nvidia_stack(survey.packages or {}, survey.modules or []))
    return survey


def read_apart(target: Any, reads: list[Read]) -> list[Any] | None:
    """Read ``reads`` from ``target`` (a connected host), outside any deploy, in one round
    trip: what only the audit asks (the GPUs' health, which runs amd-smi and so stays out
    of every deploy's preflight). Their answers in their order; None when the read can't run."""
    return target.get_fact(Survey, reads=reads, _ignore_errors=True)
