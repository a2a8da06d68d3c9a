"""Checks before any change: can this host take the chosen ROCm release as the inventory says?

Everything is read with one survey (one SSH round trip): the hardware and health reads
preflight judges, and every fact the rest of the plan reads on a converged host, which are
remembered (``facts.cache``) so planning asks the host nothing more. ``findings``, a pure
function, turns the survey into problems (each with its fix) and warnings. A host with
problems is refused while planning: the reason is printed on its line, in ``--dry`` too, it
is marked failed (so the run's exit status says so) and it gets none of the deploy's
operations, while the rest of the fleet carries on. Warnings (pairings AMD doesn't list, a
distro override) are printed and the deploy goes ahead.

Checked: amd64; the distro and release pairing in the matrix (or an explicit override);
not WSL; root (directly or through ``_sudo``); an AMD GPU on PCI (mapped to gfx targets by
``pci_ids``, or the KFD topology when amdgpu is loaded) matching ``expected_gfx`` /
``expected_gpu_count``; the kernel at least the one AMD lists for the distro; free space
for the packages; and no conflicting stack (NVIDIA driver or CUDA packages, the distro's
own ROCm packages, another ROCm release's apt source, a CUDA or CPU torch in the venv).
"""

from __future__ import annotations

import logging
import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.api.exceptions import PyinfraError
from pyinfra.context import ctx_host

from rocm_fleet import matrix, paths
from rocm_fleet.bundle import incomplete, missing
from rocm_fleet.facts.apt import (
    AptInstallSize,
    AptSourceLines,
    DebianMirror,
    DpkgInterrupted,
    InstalledPackages,
    KeyringFingerprints,
)
from rocm_fleet.facts.cache import remember_fact
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
    nvidia_stack,
)
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.groups import GPU_GROUPS
from rocm_fleet.pci_ids import lookup
from rocm_fleet.sources import host_needs
from rocm_fleet.versions import amd_release_tag, kernel_key, release_key

if TYPE_CHECKING:
    from rocm_fleet.config import Config

logger = logging.getLogger("pyinfra")

DISTRO_KEYS = tuple(d.key for d in matrix.DISTROS)

# Debian and Ubuntu package AMD's ROCm under their own names (Debian: rocminfo 5.2.3,
# rocm-smi, librocm-smi64-1, hipcc, libamdhip64-*, libhsa-runtime64-1, librocblas0 ...;
# fact sheet §12). Installed next to AMD's, programs can load either copy of a library.
DISTRO_ROCM = re.compile(
    r"^(rocminfo|rocm-.*|hipcc|hip-.*|libamdhip64.*|libhsa-runtime64.*|libhsakmt.*|"
    r"librocm.*|libroc[a-z]+\d.*|libhip[a-z]+\d.*|librccl.*|libmiopen.*|miopen.*)$"
)
# A ROCm apt source line names its release directory: .../rocm/apt/6.4.3 jammy main.
ROCM_APT_PATH = re.compile(r"repo\.radeon\.com/rocm/apt/([^/\s]+)")
# Upstream hosts whose apt sources preflight looks for.
AMD_REPOSITORY_HOSTS = ("repo.radeon.com", "repo.amd.com")


@dataclass
class Findings:
    row: matrix.Distro | None
    problems: list[str]
    warnings: list[str]


def findings(config: Config, survey: dict[str, Any]) -> Findings:
    """Problems (each with its fix) and warnings for a host, from its survey (``survey_reads``)."""
    problems: list[str] = []
    warnings: list[str] = []
    row = _distro(config, survey, problems, warnings)
    if row is not None and config.release.suite_published(row):
        _bundle(config, row, problems)
    _system(survey, problems)
    _gpus(config, survey, problems, warnings)
    if row is not None:
        _kernel(row, survey, problems)
    _disk(config, survey, problems)
    _conflicts(config, survey, problems, warnings)
    return Findings(row if not problems else None, problems, warnings)


def _distro(config: Config, survey: dict, problems: list[str], warnings: list[str]):
    arch = survey.get("arch")
    if arch != "amd64":
        problems.append(
            f"architecture is {arch or 'unknown'}; AMD publishes ROCm for amd64 only: "
            "use an x86-64 machine"
        )
    distro = survey.get("distro") or {}
    distro_id, version_id = distro.get("id") or "", distro.get("version_id") or ""
    row = matrix.distro(distro_id, version_id)
    rel = config.release
    override = config.rocm_distro_override
    if row is None and override:
        row = next(d for d in matrix.DISTROS if d.key == override)
        warnings.append(
            f"{distro_id} {version_id} is not in the matrix; deploying it as {row.key} "
            "(rocm_distro_override): unofficial"
        )
    elif row is None:
        supported = ", ".join(DISTRO_KEYS)
        problems.append(
            f"{distro_id or 'unknown'} {version_id} is not supported ({supported}): "
            "upgrade the host to one of them, or set rocm_distro_override to the one it "
            "is built on"
        )
        return None
    support = rel.support(row)
    if support is None:
        problems.append(
            f"ROCm {rel.version} publishes no {row.suite} packages for {row.key} "
            f"(first in {row.first_release}); choose a newer rocm_version"
        )
    elif support is matrix.Support.UNLISTED:
        warnings.append(f"AMD does not list {row.key} for ROCm {rel.version}: unofficial")
    elif support is matrix.Support.INSTINCT_ONLY:
        radeon = [g for g in config.expected_gfx_list if _family(g) == "radeon"]
        if radeon:
            warnings.append(
                f"AMD lists {row.key} for Instinct only; {', '.join(radeon)} on it is unofficial"
            )
    return row


def _bundle(config: Config, row: matrix.Distro, problems: list[str]) -> None:
    """A bundle the fleet mirror serves must hold everything this host will fetch: apt or
    pip failing halfway through on a missing file is worse than not starting."""
    mirror = config.mirror
    if mirror is None or not mirror.bundle:
        return
    broken = incomplete(mirror.bundle) if mirror.serves else []
    if broken:
        problems.append(
            f"the bundle {mirror.bundle} this host is to serve is incomplete ({len(broken)} "
            f"file(s) its manifest lists are missing or cut short: {', '.join(broken[:5])}): "
            f"run `rocm-fleet bundle INVENTORY --output {mirror.bundle}` again"
        )
    gaps = missing(mirror.bundle, host_needs(config, row))
    if gaps:
        problems.append(
            f"the fleet mirror's bundle {mirror.bundle} lacks what this host needs: "
            f"{'; '.join(gaps)}: run `rocm-fleet bundle INVENTORY --output {mirror.bundle}` "
            "again with this inventory, then deploy"
        )


def _family(gfx: str) -> str | None:
    target = matrix.gpu_target(gfx)
    return target.family if target else None


def _system(survey: dict, problems: list[str]) -> None:
    if survey.get("wsl") or "microsoft" in (survey.get("kernel") or "").lower():
        problems.append(
            "this is WSL: ROCm on WSL is a different stack (AMD's WSL driver and "
            "runtime, installed from Windows); deploy to a Linux host instead"
        )
    identity = survey.get("identity") or {}
    if identity.get("uid") != 0:
        problems.append(
            f"connected as {identity.get('user') or 'an unknown user'} "
            f"(uid {identity.get('uid')}), "
            "not root: set _sudo: True (with passwordless sudo or _sudo_password) in the "
            "inventory, or connect as root"
        )


def gpus_found(survey: dict) -> list[dict[str, Any]]:
    """AMD GPUs on the host: KFD nodes when amdgpu is loaded (authoritative gfx), else the
    PCI devices mapped by the PCI-ID table. Each: slot, device, gfx (None: unknown), name."""
    pci = {gpu["slot"]: gpu for gpu in survey.get("pci") or []}
    found = []
    kfd = survey.get("kfd")
    if kfd:
        for node in kfd:
            row = lookup(node["device_id"]) if node.get("device_id") else None
            found.append(
                {
                    "slot": node.get("slot"),
                    "device": node.get("device_id"),
                    "gfx": node["gfx"],
                    "name": row.name if row else None,
                }
            )
        return found
    for gpu in pci.values():
        row = lookup(gpu["device"])
        found.append(
            {
                "slot": gpu["slot"],
                "device": gpu["device"],
                "gfx": row.gfx if row else None,
                "name": row.name if row else None,
            }
        )
    return found


def describe_gpus(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no AMD GPU"
    counts: dict[str, int] = {}
    for gpu in found:
        label = gpu["gfx"] or f"unknown AMD device {gpu['device']}"
        counts[label] = counts.get(label, 0) + 1
    return ", ".join(f"{n} x {label}" for label, n in counts.items())


def gpu_mismatch(config: Config, found: list[dict[str, Any]]) -> str | None:
    """What is wrong with the GPUs against expected_gfx / expected_gpu_count, or None."""
    expected_count = config.expected_gpu_count
    expected_gfx = config.expected_gfx_list
    if expected_count == 0:
        return None
    found_text = describe_gpus(found)
    if not found:
        return (
            "no AMD GPU found (no PCI device of vendor 0x1002 with a display or "
            "processing-accelerator class): seat the card, or set expected_gpu_count: 0 "
            "for a GPU-less host (CI runner, image builder)"
        )
    matching = [g for g in found if g["gfx"] in expected_gfx] if expected_gfx else found
    wanted = "/".join(expected_gfx) if expected_gfx else "AMD GPU"
    if expected_gfx and not matching:
        return (
            f"expected {expected_count or 'at least 1'} x {wanted}, found {found_text}: "
            "correct expected_gfx in the inventory or check the host's cards"
        )
    if expected_count is not None and len(matching) != expected_count:
        fewer = "too few GPUs" if len(matching) < expected_count else "more GPUs than expected"
        return (
            f"{fewer}: expected {expected_count} x {wanted}, found {len(matching)} "
            f"({found_text}): correct expected_gpu_count or check that every card is seated "
            "and enabled in the firmware"
        )
    return None


def _gpus(config: Config, survey: dict, problems: list[str], warnings: list[str]) -> None:
    found = gpus_found(survey)
    mismatch = gpu_mismatch(config, found)
    if mismatch:
        problems.append(mismatch)
        return
    release = release_key(config.release.version)
    for gfx in sorted({g["gfx"] for g in found if g["gfx"]}):
        target = matrix.gpu_target(gfx)
        since = target.supported_from if target else None
        listed = since is not None and release >= release_key(since)
        wanted = not config.expected_gfx_list or gfx in config.expected_gfx_list
        if wanted and not listed:
            warnings.append(f"AMD does not list {gfx} for ROCm {config.release.version}")


def _kernel(row: matrix.Distro, survey: dict, problems: list[str]) -> None:
    minimum = matrix.MIN_KERNEL.get(row.key)
    running = survey.get("kernel") or ""
    if minimum and kernel_key(running) < kernel_key(minimum):
        problems.append(
            f"kernel {running} is older than {minimum}, the one AMD lists for {row.key}: "
            "install the distribution's current kernel and reboot"
        )


def _disk(config: Config, survey: dict, problems: list[str]) -> None:
    need = (survey.get("apt") or {}).get("need")
    source = "what apt says the ROCm packages need"
    if need is None:
        need = config.preflight_min_free_gb * 10**9
        source = "preflight_min_free_gb, as apt can't size AMD's packages before their source"
    short = {}
    for entry in survey.get("disk") or []:
        if entry["avail"] < need:
            short.setdefault(entry["mount"], (entry["avail"], []))[1].append(entry["path"])
    for mount, (avail, where) in short.items():
        problems.append(
            f"not enough free space on {mount} (for {', '.join(where)}): "
            f"{avail / 10**9:.2f} GB free, {need / 10**9:.2f} GB needed ({source}): "
            "free some space or grow the filesystem"
        )


def venv_torch(survey: dict) -> dict[str, Any]:
    """The venv's torch as the survey saw it: {"torch": version or None, "hip", "cuda",
    "build": "rocm" | "cuda" | "cpu" | None (no torch)}."""
    version = (survey.get("venv") or {}).get("torch")
    strings = survey.get("torch_build") or {}
    hip, cuda = strings.get("hip"), strings.get("cuda")
    if not version:
        build = None
    elif hip or "+rocm" in version:
        build = "rocm"
    elif cuda or "+cu" in version:
        build = "cuda"
    else:
        build = "cpu"
    return {"torch": version, "hip": hip, "cuda": cuda, "build": build}


def _conflicts(config: Config, survey: dict, problems: list[str], warnings: list[str]) -> None:
    migrate = config.rocm_migrate_from_cuda
    nvidia = nvidia_stack(survey.get("packages") or {}, survey.get("modules") or [])
    if nvidia.get("packages") or nvidia.get("modules"):
        what = ", ".join(nvidia.get("packages") or []) or "none"
        modules = ", ".join(nvidia.get("modules") or []) or "none"
        if migrate:
            warnings.append(f"NVIDIA stack present (packages: {what}); rocm_migrate_from_cuda")
        else:
            problems.append(
                f"NVIDIA driver/CUDA stack installed (packages: {what}; loaded modules: "
                f"{modules}): set rocm_migrate_from_cuda: true to remove it first, or purge it "
                "yourself and reboot"
            )
    distro_rocm = sorted(
        f"{name} {version}"
        for name, version in (survey.get("packages") or {}).items()
        if DISTRO_ROCM.match(name) and not amd_release_tag(version)
    )
    if distro_rocm:
        names = " ".join(item.split()[0] for item in distro_rocm)
        problems.append(
            f"the distribution's own ROCm packages are installed ({', '.join(distro_rocm)}); "
            f"next to AMD's they mix two ROCm builds: apt-get purge {names}"
        )
    others = sorted(
        {
            f"{path} ({match.group(1)})"
            for path, line in survey.get("sources") or []
            if path != paths.ROCM_SOURCE
            and (match := ROCM_APT_PATH.search(line))
            and match.group(1) != config.release.apt_path
        }
        | {
            f"{path} (ROCm Core SDK, repo.amd.com)"
            for path, line in survey.get("sources") or []
            if "repo.amd.com" in line
        }
    )
    if others:
        problems.append(
            f"apt sources of another ROCm release: {', '.join(others)}: remove them (the "
            f"deploy writes {paths.ROCM_SOURCE} for ROCm {config.release.version})"
        )
    torch = venv_torch(survey)
    build = torch["build"]
    if config.pytorch_install and build in ("cuda", "cpu"):
        message = (
            f"{config.pytorch_venv} holds a {build.upper()} torch ({torch['torch']}): remove the "
            "venv (or set pytorch_venv to a new path) so the ROCm build goes into a clean one"
        )
        if migrate:
            warnings.append(message + "; rocm_migrate_from_cuda")
        else:
            problems.append(message + ", or set rocm_migrate_from_cuda: true")


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
        Read("dpkg", DpkgInterrupted),
        Read("sources", AptSourceLines, {"hosts": AMD_REPOSITORY_HOSTS}),
        Read("mirror", DebianMirror),
        Read("rocm_version", RocmVersion),
        Read("secure_boot", SecureBoot),
        Read("reboot", RebootRequired),
        Read("groups", GroupMembership, {"groups": GPU_GROUPS, "users": config.rocm_users}),
        Read("venv", VenvDistributions, {"venv": venv}),
        Read("torch_build", TorchBuildStrings, {"venv": venv}),
        Read("disk", FreeSpace, {"paths": install_paths}),
        Read(
            "apt",
            AptInstallSize,
            {"packages": config.rocm_packages, "release_tag": config.release.numeric_tag},
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


@dataclass(frozen=True)
class Outcome:
    """What preflight found on a host: its survey (None when unreadable) and verdict."""

    survey: dict[str, Any] | None
    findings: Findings | None
    refused: str | None  # the reason, when refused


# state -> host name -> Outcome, for the run's other views (rocm-fleet audit).
_OUTCOMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def outcome(state: Any, host_name: str) -> Outcome | None:
    """Preflight's outcome for a host planned in ``state`` (None: not planned)."""
    return _OUTCOMES.get(state, {}).get(host_name)


def _refuse(reason: str) -> None:
    """Refuse this host while planning: say why on its line and mark it failed, so neither
    a real run nor --dry goes on with it and the run's exit status reports it."""
    host.log_styled(f"refused: {reason}", fg="red", log_func=logger.error)
    state = host.state
    try:
        # The Host itself: ``host`` is pyinfra's context proxy, which stands for whichever
        # host is current, so a set holding it would lose this one once planning moves on.
        state.fail_hosts({ctx_host.get()})
    except PyinfraError:
        if state.active_hosts:
            raise  # over --fail-percent: pyinfra's own stop
        # the last host refused: pyinfra says "No hosts remaining!" when it runs


@deploy("Preflight")
def preflight(config: Config) -> matrix.Distro | None:
    """The host's matrix row when it may be deployed, else None (the host is refused)."""
    reads = survey_reads(config)
    # _ignore_errors: a survey that can't run (sudo refused) becomes this host's refusal,
    # with pyinfra's own error output above it, instead of an unexplained failed host.
    survey = host.get_fact(Survey, reads=reads, _ignore_errors=True)
    if survey is None:
        reason = (
            f"preflight could not read {host.name} (see the error above): connect as root, "
            "or set _sudo: True with passwordless sudo or _sudo_password"
        )
        _OUTCOMES.setdefault(host.state, {})[host.name] = Outcome(None, None, reason)
        _refuse(reason)
        return None
    for read in reads:
        remember_fact(read.fact, survey[read.key], **read.kwargs)
    remember_fact(NvidiaStack, nvidia_stack(survey["packages"], survey["modules"]))
    result = findings(config, survey)
    reason = "; ".join(result.problems) or None
    _OUTCOMES.setdefault(host.state, {})[host.name] = Outcome(survey, result, reason)
    for warning in result.warnings:
        host.log_styled(f"warning: {warning}", fg="yellow", log_func=logger.warning)
    if reason:
        _refuse(reason)
        return None
    return result.row
