"""The survey: every fact preflight and the plan of a converged host read (``survey_reads``), read
in one round trip into the fact cache (``read_survey``)."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any

from pyinfra import host

from rocm_fleet.engine.factcache import remember_facts
from rocm_fleet.facts import apt, boot, files, gpu, python, secureboot, slurm, system, users
from rocm_fleet.facts.apt_removal import DistroRocmPackages, PackagePurge
from rocm_fleet.facts.round_trip import Read, Survey, Unreadable, host_survey
from rocm_fleet.model import conflicts, paths
from rocm_fleet.model.nvidia import NVIDIA_PACKAGE_EXCEPTIONS, NVIDIA_PACKAGE_PATTERNS, nvidia_stack

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config
    from rocm_fleet.model.host_survey import HostSurvey


def survey_reads(config: Config) -> list[Read]:
    """Every read a host gets, each once: preflight's, the audit's, and every fact the deploy
    reads on a converged host, with the same arguments."""
    return list(_reads(
        config.pytorch_venv, config.torch is not None,
        tuple(config.wanted_packages(config.expected_gfx_list)),
        config.stream.version_regex(config.release), config.rocm_driver,
        tuple(config.rocm_users), config.rocm_slurm_gres, config.rocm_slurm_node_name,
    ))  # fmt: skip


@functools.lru_cache(maxsize=16)
def _reads(venv: str, torch: bool, packages: tuple[str, ...], version_regex: str,
           rocm_driver: str, rocm_users: tuple[str, ...], slurm_gres: bool,
           slurm_node_name: str | None) -> tuple[Read, ...]:  # fmt: skip
    install_paths = [*paths.INSTALL_PATHS, *([venv] if torch else [])]
    certificates = [cert for cert, _ in paths.MOK_KEYS.values()]
    digest, ledger = files.FileDigest, files.Ledger
    reads = [
        Read("distro", system.DistroRelease), Read("arch", system.Architecture),
        Read("kernel", system.RunningKernel), Read("identity", system.Identity),
        Read("wsl", system.Wsl), Read("pci", gpu.PciGpus), Read("kfd", gpu.KfdNodes),
        Read("amdgpu", system.AmdgpuModule), Read("apu_memory", system.ApuMemory),
        Read("modules", system.LoadedModules), Read("packages", apt.InstalledPackages),
        Read("nvidia_purge", PackagePurge,
             {"patterns": NVIDIA_PACKAGE_PATTERNS, "exceptions": NVIDIA_PACKAGE_EXCEPTIONS}),
        Read("distro_rocm", DistroRocmPackages, {"patterns": conflicts.DISTRO_ROCM_PACKAGES,
             "same_names": conflicts.AMD_PACKAGE_NAMES, "tools": conflicts.AMD_PROGRAMS}),
        Read("sources", apt.AptSourceLines, {"hosts": conflicts.AMD_REPOSITORY_HOSTS}),
        Read("rocm_version", gpu.RocmVersion), Read("secure_boot", secureboot.SecureBoot),
        Read("reboot", system.RebootRequired),
        Read("venv", python.VenvDistributions, {"venv": venv}),
        Read("torch_build", python.TorchBuildStrings, {"venv": venv}),
        Read("disk", system.FreeSpace, {"paths": install_paths}),
        # Sized as if expected_gfx named every GPU (else the plan asks apt again).
        Read("apt", apt.AptInstallSize,
             {"packages": list(packages), "version_regex": version_regex}),
        *(Read("mok", secureboot.MokKeyState, {"path": cert}) for cert in certificates),
        Read("dpkg", apt.DpkgInterrupted),
        *(Read("keyrings", apt.KeyringFingerprints, {"path": k}) for k in paths.MANAGED_KEYRINGS),
        *(Read("files", digest, {"path": f}) for f in paths.MANAGED_FILES),
        *(Read("files", digest, {"path": k}) for k in paths.MANAGED_KEYRINGS),
        *(Read("directories", files.DirectoryExists, {"path": d})
          for d in paths.MANAGED_DIRECTORIES),
        Read("nginx", system.DaemonRunning, {"pidfile": paths.NGINX_PID}),
        Read("ledgers", ledger, {"path": paths.DRIVER_LEDGER}),
        Read("held_packages", apt.HeldPackages),
        Read("ledgers", ledger, {"path": paths.KERNEL_HOLD_LEDGER}),
        Read("files", digest, {"path": paths.venv_marker(venv)}),
        Read("files", digest, {"path": paths.venv_marker(paths.PULL_VENV)}),
        Read("ledgers", ledger, {"path": paths.PULL_INSTALLED}),
        Read("ledgers", ledger, {"path": paths.DIRECTORY_LEDGER}),
        Read("writable_by_others", files.WritableByOthers, {"path": venv}),
        Read("writable_by_others", files.WritableByOthers, {"path": paths.PULL_VENV}),
        Read("boot", boot.BootKernels),
        *(Read("files", digest, {"path": cert}) for cert in certificates),
        *(Read("mok_pending", secureboot.MokPending, {"path": cert})
          for cert in (certificates if rocm_driver == "dkms" else [])),
        Read("groups", users.GroupMembership,
             {"groups": list(paths.GPU_GROUPS), "users": list(rocm_users)}),
        Read("mirror", apt.DebianMirror), Read("nameservers", system.Nameservers),
        Read("pull_running", files.LockHeld, {"path": paths.PULL_LOCK}),
        Read("pull_status", files.PullStatus, {"path": paths.PULL_STATUS_METRICS}),
        Read("files", digest, {"path": paths.SLURM_GRES_CONF}),
        Read("ledgers", ledger, {"path": paths.SLURM_GRES_LEDGER}),
        Read("files", digest, {"path": paths.SLURM_GRES_LEDGER}),
        Read("files", digest, {"path": paths.SLURM_HEALTH_PROGRAM}),
        Read("files", digest, {"path": paths.SLURM_HEALTH_BASELINE}),
        Read("ledgers", ledger, {"path": paths.ACCEPTANCE_LEDGER}),
        Read("files", digest, {"path": paths.ACCEPTANCE_LEDGER}),
    ]  # fmt: skip
    if slurm_gres:
        reads += [
            Read("directories", files.DirectoryExists, {"path": paths.SLURM_DIR}),
            Read("slurm_node", slurm.SlurmNode, {"node": slurm_node_name}),
        ]
    unique: dict[str, Read] = {}
    for read in reads:  # a path named twice is read once
        unique.setdefault(read.key, read)
    return tuple(unique.values())


class QuietSurveyFailure(logging.Filter):
    """Drops pyinfra's "could not load fact: ...Survey" line: the caller's refusal says why."""

    NAME = f"could not load fact: {Survey.__module__}.{Survey.__name__} "

    def filter(self, record: logging.LogRecord) -> bool:
        return self.NAME not in record.getMessage()


#: the one instance (``logging.Logger.addFilter`` keeps one)
QUIET_SURVEY_FAILURE = QuietSurveyFailure()
#: pyinfra's logger, looked up once (``logging.getLogger`` takes the module's lock each call)
_PYINFRA_LOGGER = logging.getLogger("pyinfra")


def _survey(target: Any, reads: list[Read]) -> list[Any] | Unreadable | None:
    """The ``Survey`` fact of ``target``, None when it can't run."""
    _PYINFRA_LOGGER.addFilter(QUIET_SURVEY_FAILURE)
    # _ignore_errors: a survey that can't run becomes the caller's refusal.
    return target.get_fact(Survey, reads=reads, _ignore_errors=True)


# Kept on pyinfra's state: host name -> [reads asked with its survey, their answers or None]
_ALSO = "_rocm_fleet_also_survey"


def also_survey(target: Any, reads: list[Read], when_set: str | None = None) -> None:
    """Ask ``reads`` too (only if ``target``'s data sets ``when_set``, when given), in its next
    survey's round trip (what the audit and a feature's deploy read beside the node's); their
    answers are remembered as the survey's (``read_fact``), ``also_surveyed`` gives them."""
    if when_set is not None and not target.data.get(when_set):
        return
    vars(target.state).setdefault(_ALSO, {})[target.name] = [list(reads), None]


def also_surveyed(target: Any) -> list[Any] | None:
    """The answers to ``also_survey``'s reads, in order; None when no survey ran since."""
    asked = vars(target.state).get(_ALSO, {}).get(target.name)
    return asked[1] if asked else None


def read_survey(reads: list[Read]) -> HostSurvey | Unreadable | None:
    """Read ``reads`` (and ``also_survey``'s) from the current host in one round trip and
    remember every answer (``NvidiaStack`` derived); None when the survey can't run,
    ``Unreadable`` when its output can't be taken as answers."""
    also = vars(host.state).get(_ALSO, {}).get(host.name)
    asked = {read.key for read in reads}
    every = reads + [read for read in also[0] if read.key not in asked] if also else reads
    answers = _survey(host, every)
    if answers is None or isinstance(answers, Unreadable):
        return answers
    by_key = {read.key: answer for read, answer in zip(every, answers, strict=True)}
    if also:
        also[1] = [by_key[read.key] for read in also[0]]
    survey = host_survey(reads, answers[: len(reads)])
    stack = nvidia_stack(survey.packages or {}, survey.modules or [])
    answered = ((read.fact, read.kwargs, by_key[read.key]) for read in every)
    remember_facts([*answered, (system.NvidiaStack, {}, stack)])
    return survey


def read_apart(target: Any, reads: list[Read]) -> list[Any] | None:
    """Read ``reads`` from connected ``target`` outside any deploy, in one round trip (the audit's
    health reads); the answers in order, None when it can't run or its output is unreadable."""
    answers = _survey(target, reads)
    return None if isinstance(answers, Unreadable) else answers
