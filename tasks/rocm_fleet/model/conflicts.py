"""Preflight's conflicts: what on a host would fight AMD's stack, read from its survey. A removal
is suggested only with what ``apt-get -s purge`` says it takes along."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rocm_fleet.model import paths, streams
from rocm_fleet.model.host_survey import LISTED, Found, HostSurvey, listed
from rocm_fleet.model.nvidia import is_nvidia_package, nvidia_stack
from rocm_fleet.model.versions import ROCM_APT_PATH

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


# Debian's and Ubuntu's own ROCm binary packages (Packages of bookworm 12.15, trixie 13.8,
# noble main/universe, 2026-11-30); AMD's of the same name differ by version.
DISTRO_ROCM_PACKAGES = (
    "rocminfo", "rocm-*", "hipcc", "hipify-*", "amd-smi", "amd-dbgapi*", "pkg-rocm-tools",
    "libamd-comgr*", "libamd-smi*", "libamdhip64*", "libhsa-runtime*", "libhsakmt*",
    "libhipblas*", "libhipcub*", "libhipfft*", "libhiprand*", "libhiprtc*", "libhipsolver*",
    "libhipsparse*", "liboam*", "librccl*", "librocalution*", "librocblas*", "librocfft*",
    "librocm*", "librocprim*", "librocrand*", "librocsolver*", "librocsparse*",
    "librocthrust*", "libroctx*", "libroctracer*",
)  # fmt: skip


# AMD package names the distributions version higher, so AMD's pin can't replace them
# (apt_preferences(5); ROCm/legacy-rocm-build #3656, #6367, #1899).
AMD_PACKAGE_NAMES = ("hipcc", "rocminfo", "rocm-cmake", "rocm-device-libs")


# AMD's programs the distributions' packages also put in paths.DISTRO_BIN (dpkg -c of each
# in bookworm, trixie, noble), shadowing AMD's on PATH.
AMD_PROGRAMS = (
    "rocminfo", "rocm_agent_enumerator", "rocm-smi", "amd-smi", "hipcc", "hipcc.pl",
    "hipconfig", "hipconfig.pl", "hipify-perl", "roc-obj", "roc-obj-extract", "roc-obj-ls",
)  # fmt: skip


# repo.amd.com matches stable.repo.amd.com too.
AMD_REPOSITORY_HOSTS = ("repo.radeon.com", "repo.amd.com")
_CORE_SDK_HOSTS = ("stable.repo.amd.com", "repo.amd.com")
# The source files the deploy itself writes, for any stream: never a conflict.
OWN_SOURCES = {repo.source for repo in streams.REPOSITORIES}


def conflicts(config: Config, survey: HostSurvey) -> Found:
    """Another stack on the host: NVIDIA's, the distribution's ROCm, another release's apt
    source, a CUDA or CPU torch in the venv."""
    found = _nvidia(config, survey) + _distro_rocm(survey)
    others = set()
    for path, line in survey.sources or []:
        match = ROCM_APT_PATH.search(line)
        if path not in OWN_SOURCES and match and match.group(1) != config.release.apt_path:
            others.add(f"{path} ({match.group(1)})")
        host = next((h for h in _CORE_SDK_HOSTS if h in line), None)
        if path not in OWN_SOURCES and host:
            others.add(f"{path} (ROCm Core SDK, {host})")
    if others := sorted(others):
        found.problems.append(
            f"apt sources of another ROCm release: {', '.join(others)}: remove them (the "
            f"deploy writes {config.repository.source} for ROCm {config.release.version})"
        )
    torch = venv_torch(survey)
    if config.torch is not None and torch.build in ("cuda", "cpu"):
        message = (
            f"{config.pytorch_venv} holds a {torch.build.upper()} torch ({torch.torch}): remove "
            "the venv (or set pytorch_venv to a new path) so the ROCm build goes into a clean one"
        )
        if config.rocm_migrate_from_cuda:
            found.warnings.append(message + "; rocm_migrate_from_cuda")
        else:
            found.problems.append(message + ", or set rocm_migrate_from_cuda: true")
    return found


def _nvidia(config: Config, survey: HostSurvey) -> Found:
    found = Found()
    nvidia = nvidia_stack(survey.packages or {}, survey.modules or [])
    packages = nvidia.get("packages") or []
    if not packages and not nvidia.get("modules"):
        return found
    what = listed(packages, "(pyinfra -v or rocm-fleet audit --json lists all)") or "none"
    if len(packages) > LISTED:
        found.details["NVIDIA packages"] = list(packages)
    modules = ", ".join(nvidia.get("modules") or []) or "none"
    simulated = (survey.nvidia_purge or {}).get("purge")
    removal = f" ({removal_effect(simulated, packages)})" if packages else ""
    if config.rocm_migrate_from_cuda:  # only when apt's purge takes nothing but NVIDIA's
        unknown = simulated is None or bool(simulated["errors"])
        others = [] if unknown else [
            name for name in simulated["removes"] if name not in packages
            and not is_nvidia_package(name)
        ]  # fmt: skip
        if packages and (unknown or others):
            found.problems.append(
                f"rocm_migrate_from_cuda would purge NVIDIA's packages ({what}), but "
                f"{removal_effect(simulated, packages)}: the migration never removes more "
                "than NVIDIA's stack; deal with those yourself (remove them, or what makes "
                "them depend on NVIDIA's), then run again"
            )
            return found
        found.warnings.append(
            f"NVIDIA stack present (packages: {what}); rocm_migrate_from_cuda: the deploy "
            f"purges them{removal}"
        )
    else:
        found.problems.append(
            f"NVIDIA driver/CUDA stack installed (packages: {what}; loaded modules: "
            f"{modules}): set rocm_migrate_from_cuda: true to remove it first, or purge it "
            f"yourself and reboot{removal}"
        )
    return found


def _distro_rocm(survey: HostSurvey) -> Found:
    """The distribution's ROCm: shadowing programs and AMD-named packages are problems; its
    libraries a warning naming what needs them."""
    found = Found()
    if not (rocm := survey.distro_rocm):
        return found
    packages, conflicting = rocm["packages"], rocm["conflicting"]
    distro = ((survey.distro or {}).get("id") or "the distribution").capitalize()
    if conflicting:
        reasons = []
        for name in conflicting:
            shadowing = sorted(path for path, owner in rocm["tools"].items() if owner == name)
            on_path = f"{', '.join(shadowing)} would run instead of AMD's on PATH"
            why = [on_path] if shadowing else []
            if name in AMD_PACKAGE_NAMES:
                why.append(
                    "AMD's package of that name is versioned lower, so its pin can't replace it"
                )
            reasons.append(f"{name} {packages[name]} ({'; '.join(why)})")
        found.problems.append(
            f"{distro}'s own ROCm tools are installed: {', '.join(reasons)}: remove them with "
            f"apt-get purge {' '.join(conflicting)} "
            f"({removal_effect(rocm['purge_conflicting'], conflicting)})"
        )
    if kept := sorted(set(packages) - set(conflicting)):
        listed = ", ".join(f"{name} {packages[name]}" for name in kept)
        found.warnings.append(
            f"{distro}'s own ROCm libraries are installed ({listed}): "
            f"{_needed_by(kept, rocm['needed_by'])}. They install under /usr, apart from "
            f"AMD's {paths.ROCM_ROOT}, and put none of AMD's programs on PATH, so they are left in "
            f"place ({removal_effect(rocm['purge_kept'], kept)})"
        )
    return found


def _needed_by(libraries: list[str], needed_by: dict[str, list[str]]) -> str:
    """Which installed packages need ``libraries``: "libucx0 needs libamdhip64-5 (and through it
    libamd-comgr2, libhsa-runtime64-1)"."""
    inside = set(libraries)
    roots = sorted({other for lib in libraries for other in needed_by.get(lib, [])} - inside)
    parts, reached = [], set()
    for root in roots:
        direct = sorted(lib for lib in libraries if root in needed_by.get(lib, []))
        through, frontier = set(), list(direct)
        while frontier:
            current = frontier.pop()
            for lib in libraries:
                if current in needed_by.get(lib, []) and lib not in through | set(direct):
                    through.add(lib)
                    frontier.append(lib)
        reached |= set(direct) | through
        part = f"{root} needs {', '.join(direct)}"
        if through:
            pronoun = "it" if len(direct) == 1 else "them"
            part += f" (and through {pronoun} {', '.join(sorted(through))})"
        parts.append(part)
    if orphans := sorted(inside - reached):
        parts.append(f"nothing installed needs {', '.join(orphans)}")
    return "; ".join(parts)


def removal_effect(purge: dict[str, Any] | None, names: list[str]) -> str:
    """A sentence saying what ``apt-get purge names`` would take along, per apt's simulation."""
    these = " ".join(names) if len(names) <= 6 else f"of these {len(names)} packages"
    command = f"apt-get -s purge {these}"
    if purge is None or purge["errors"]:
        why = "; ".join(purge["errors"]) if purge else "it did not run"
        return (
            f"apt could not work out what removing them takes along ({why}): "
            f"run apt-get -s purge {' '.join(names)}"
        )
    if extra := sorted(set(purge["removes"]) - set(names)):
        return f"{command} says it also removes {listed(extra, 'packages')}"
    return f"{command} says it removes nothing else"


@dataclass(frozen=True)
class VenvTorch:
    """The venv's torch version, ``torch.version.hip``/``.cuda`` and build (None: no torch)."""

    torch: str | None
    hip: str | None
    cuda: str | None
    build: Literal["rocm", "cuda", "cpu"] | None


def venv_torch(survey: HostSurvey) -> VenvTorch:
    """The venv's torch and its build."""
    version = (survey.venv or {}).get("torch")
    strings = survey.torch_build or {}
    hip, cuda = strings.get("hip"), strings.get("cuda")
    if not version:
        build: Literal["rocm", "cuda", "cpu"] | None = None
    elif hip or "+rocm" in version:
        build = "rocm"
    elif cuda or "+cu" in version:
        build = "cuda"
    else:
        build = "cpu"
    return VenvTorch(version, hip, cuda, build)


def venv_problems(config: Config, survey: HostSurvey) -> list[str]:
    """Why the venv at ``pytorch_venv`` (with torch) or the pull venv (with ``rocm_pull``), whose
    Python the deploy runs as root, can't be used: not root's alone, or under a directory that
    is not (the safe path rule)."""
    venvs, problems = [], []
    if config.torch is not None:
        venvs.append((config.pytorch_venv, "remove it or set pytorch_venv to a new path"))
    if config.rocm_pull:
        venvs.append((paths.PULL_VENV, "remove it"))
    for venv, remedy in venvs:
        if not (found := survey.writable_by_others.get(venv)):
            continue
        owner, mode, path = found.split(" ", 2)
        if path != venv and f"{venv}/".startswith(f"{path.rstrip('/')}/"):
            problems.append(
                f"the venv {venv} is in a directory not root's alone: {path} is owned by "
                f"{owner} (mode {mode}); every directory above a path root runs must be root's "
                "and writable by no one else (the safe path rule), or its owner could swap the "
                f"venv before the deploy runs its Python as root: make {path} root's and not "
                "writable by others, or put the venv elsewhere"
            )
        else:
            problems.append(
                f"the venv {venv} is not root's alone: {path} is owned by {owner} "
                f"(mode {mode}), and the deploy runs its Python as root; {remedy} "
                "(the deploy makes a venv of root's there)"
            )
    return problems
