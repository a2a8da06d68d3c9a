"""The survey: every fact preflight and the plan of a converged host read, in one round trip.

``survey_reads`` is the one declaration of what a host is read for: the hardware and health
preflight's rules (``model.findings``) and the audit judge, and every fact the deploy's
operations and tasks read on a converged host, with the same arguments. ``read_survey`` reads
them all with one ``Survey`` fact (one round trip), remembers each answer in the fact cache
(``engine.factcache``), so planning a converged host asks it nothing more, and gives them to
preflight as its typed record (``model.host_survey.HostSurvey``: each read names the field it
fills). A read the plan of a converged host makes beyond the survey fails the plan tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyinfra import host

from rocm_fleet.engine.factcache import remember_facts
from rocm_fleet.facts.apt import (
    AptInstallSize,
    AptSourceLines,
    DebianMirror,
    DistroRocmPackages,
    DpkgInterrupted,
    HeldPackages,
    InstalledPackages,
    KeyringFingerprints,
    PackagePurge,
)
from rocm_fleet.facts.boot import BootKernels
from rocm_fleet.facts.files import (
    DirectoryExists,
    FileDigest,
    Ledger,
    LockHeld,
    PullStatus,
    WritableByOthers,
)
from rocm_fleet.facts.gpu import KfdNodes, PciGpus, RocmVersion
from rocm_fleet.facts.python import TorchBuildStrings, VenvDistributions
from rocm_fleet.facts.round_trip import Read, Survey, host_survey
from rocm_fleet.facts.secureboot import MokKeyState, MokPending, SecureBoot
from rocm_fleet.facts.slurm import SlurmNode
from rocm_fleet.facts.system import (
    AmdgpuModule,
    ApuMemory,
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


def survey_reads(config: Config) -> list[Read]:
    """Everything a host is read for, each key once: the hardware and health preflight's rules
    (``model.findings``) and the audit judge, and every fact the deploy's operations and
    tasks read on a converged host (with the same arguments they ask for)."""
    venv = config.pytorch_venv
    install_paths = [*paths.INSTALL_PATHS, *([venv] if config.torch is not None else [])]
    certificates = [cert for cert, _ in paths.MOK_KEYS.values()]
    reads = [
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
        Read("dpkg", DpkgInterrupted),
        *(Read("keyrings", KeyringFingerprints, {"path": k}) for k in paths.MANAGED_KEYRINGS),
        # Every file and keyring a deploy may write (a keyring is a stamp's input) and every
        # directory it may create whole, the last GPU check's record among them.
        *(Read("files", FileDigest, {"path": f}) for f in paths.MANAGED_FILES),
        *(Read("files", FileDigest, {"path": k}) for k in paths.MANAGED_KEYRINGS),
        *(Read("directories", DirectoryExists, {"path": d}) for d in paths.MANAGED_DIRECTORIES),
        Read("nginx", DaemonRunning, {"pidfile": paths.NGINX_PID}),
        # What the DKMS driver's install recorded (a host back on the inbox driver removes
        # it) and the kernel holds rocm-fleet placed (a host whose setting went releases them).
        Read("ledgers", Ledger, {"path": paths.DRIVER_LEDGER}),
        Read("held_packages", HeldPackages),
        Read("ledgers", Ledger, {"path": paths.KERNEL_HOLD_LEDGER}),
        # The venvs, and the directories the deploy created (with pytorch_install: false, a
        # venv that exists stays unless it made it).
        Read("files", FileDigest, {"path": paths.venv_marker(venv)}),
        Read("files", FileDigest, {"path": paths.venv_marker(paths.PULL_VENV)}),
        Read("ledgers", Ledger, {"path": paths.DIRECTORY_LEDGER}),
        Read("writable_by_others", WritableByOthers, {"path": venv}),
        Read("boot", BootKernels),
        *(Read("files", FileDigest, {"path": cert}) for cert in certificates),
        # The DKMS driver signs with the key: one waiting to be enrolled.
        *(
            Read("mok_pending", MokPending, {"path": cert})
            for cert in (certificates if config.rocm_driver == "dkms" else [])
        ),
        Read(
            "groups",
            GroupMembership,
            {"groups": list(paths.GPU_GROUPS), "users": config.rocm_users},
        ),
        Read("mirror", DebianMirror),
        Read("nameservers", Nameservers),
        # Whether a pull is running (a push doesn't change a node under it), what the last did.
        Read("pull_running", LockHeld, {"path": paths.PULL_LOCK}),
        Read("pull_status", PullStatus, {"path": paths.PULL_STATUS_METRICS}),
        # gres.conf and what rocm-fleet recorded of it, on every host (one whose setting went
        # removes its file); the directory and Slurm's view of the node with the setting.
        Read("files", FileDigest, {"path": paths.SLURM_GRES_CONF}),
        Read("ledgers", Ledger, {"path": paths.SLURM_GRES_LEDGER}),
        Read("files", FileDigest, {"path": paths.SLURM_GRES_LEDGER}),
    ]
    if config.rocm_slurm_gres:
        reads += [
            Read("directories", DirectoryExists, {"path": paths.SLURM_DIR}),
            Read("slurm_node", SlurmNode, {"node": config.rocm_slurm_node_name}),
        ]
    unique: dict[str, Read] = {}
    for read in reads:  # a path named twice (a custom venv that is another's) is read once
        unique.setdefault(read.key, read)
    return list(unique.values())


def read_survey(reads: list[Read]) -> HostSurvey | None:
    """Read ``reads`` from the current host in one round trip and remember every answer for
    planning; None when the survey can't run (pyinfra's own error output says why)."""
    # _ignore_errors: a survey that can't run (sudo refused) becomes the caller's refusal,
    # with pyinfra's own error output above it, instead of an unexplained failed host.
    answers = host.get_fact(Survey, reads=reads, _ignore_errors=True)
    if answers is None:
        return None
    survey = host_survey(reads, answers)
    # NvidiaStack needs no read of its own: worked out from the packages and modules, as
    # the fact works it out on the host.
    stack = nvidia_stack(survey.packages or {}, survey.modules or [])
    remember_facts(
        [
            *(
                (read.fact, read.kwargs, answer)
                for read, answer in zip(reads, answers, strict=True)
            ),
            (NvidiaStack, {}, stack),
        ]
    )
    return survey


def read_apart(target: Any, reads: list[Read]) -> list[Any] | None:
    """Read ``reads`` from ``target`` (a connected host), outside any deploy, in one round
    trip: what only the audit asks (the GPUs' health, which runs amd-smi and so stays out
    of every deploy's preflight). Their answers in their order; None when the read can't run."""
    return target.get_fact(Survey, reads=reads, _ignore_errors=True)
