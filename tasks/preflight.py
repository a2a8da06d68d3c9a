"""Checks before any change: can this host take the chosen ROCm release as the inventory says?

Everything is read with one fact (``NodeSurvey``, one SSH round trip) and judged by
``findings``, a pure function. A host with problems gets a single failing operation whose
message names each problem and its fix, and none of the deploy's other operations, so it
stops unchanged while the rest of the fleet carries on. Warnings (pairings AMD doesn't
list, a distro override) are printed and the deploy goes ahead.

Checked: amd64; the distro and release pairing in the matrix (or an explicit override);
not WSL; root (directly or through ``_sudo``); an AMD GPU on PCI (mapped to gfx targets by
``tasks.pci_ids``, or the KFD topology when amdgpu is loaded) matching ``expected_gfx`` /
``expected_gpu_count``; the kernel at least the one AMD lists for the distro; free space
for the packages; and no conflicting stack (NVIDIA driver or CUDA packages, the distro's
own ROCm packages, another ROCm release's apt source, a CUDA or CPU torch in the venv).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyinfra import host
from pyinfra.api import deploy

from tasks import matrix, settings
from tasks.facts import NodeSurvey, RunningKernel, remember_fact
from tasks.matrix import ROCM_SOURCE_PATH
from tasks.operations import fail
from tasks.pci_ids import lookup

if TYPE_CHECKING:
    from tasks.config import Config

logger = logging.getLogger("pyinfra")

DISTRO_KEYS = tuple(d.key for d in matrix.DISTROS)

SETTINGS = (
    settings.Setting(
        "rocm_distro_override", None,
        "Deploy a distro the matrix doesn't know as one it does, e.g. `\"ubuntu 24.04\"` for "
        "Linux Mint 22 (unofficial: warned). Without it an unknown distro is refused",
        settings.optional(settings.one_of(*DISTRO_KEYS)),
    ),
    settings.Setting(
        "preflight_min_free_gb", 10,
        "Free space (GB) preflight requires for /opt, the venv and apt's cache while apt "
        "can't size the ROCm packages (no AMD source yet); once it can, apt's figure is used",
        settings.count,
    ),
)  # fmt: skip

# Paths whose filesystems receive the install: AMD's packages unpack under /opt/rocm-X.Y.Z,
# apt downloads them to its archive cache first.
INSTALL_PATHS = ("/opt", "/var/cache/apt/archives")

# Debian and Ubuntu package AMD's ROCm under their own names (Debian: rocminfo 5.2.3,
# rocm-smi, librocm-smi64-1, hipcc, libamdhip64-*, libhsa-runtime64-1, librocblas0 ...;
# fact sheet §12). Installed next to AMD's, programs can load either copy of a library.
DISTRO_ROCM = re.compile(
    r"^(rocminfo|rocm-.*|hipcc|hip-.*|libamdhip64.*|libhsa-runtime64.*|libhsakmt.*|"
    r"librocm.*|libroc[a-z]+\d.*|libhip[a-z]+\d.*|librccl.*|libmiopen.*|miopen.*)$"
)
# AMD versions every classic ROCm package <x.y.z>.<tag>-<build> (tasks.operations).
AMD_VERSION = re.compile(r"^\d+\.\d+\.\d+\.\d{5}-")
# A ROCm apt source line names its release directory: .../rocm/apt/6.4.3 jammy main.
ROCM_APT_PATH = re.compile(r"repo\.radeon\.com/rocm/apt/([^/\s]+)")


@dataclass
class Findings:
    row: matrix.Distro | None
    problems: list[str]
    warnings: list[str]


def findings(config: Config, survey: dict[str, Any]) -> Findings:
    """Problems (each with its fix) and warnings for a host, from its ``NodeSurvey``."""
    problems: list[str] = []
    warnings: list[str] = []
    row = _distro(config, survey, problems, warnings)
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
    override = config.values.get("rocm_distro_override")
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


def _family(gfx: str) -> str | None:
    target = matrix.gpu_target(gfx)
    return target.family if target else None


def _system(survey: dict, problems: list[str]) -> None:
    if survey.get("wsl") or "microsoft" in (survey.get("kernel") or "").lower():
        problems.append(
            "this is WSL: ROCm on WSL is a different stack (AMD's WSL driver and "
            "runtime, installed from Windows); deploy to a Linux host instead"
        )
    if survey.get("uid") != 0:
        problems.append(
            f"connected as {survey.get('user') or 'an unknown user'} (uid {survey.get('uid')}), "
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
    release = matrix.version_key(config.release.version)
    for gfx in sorted({g["gfx"] for g in found if g["gfx"]}):
        target = matrix.gpu_target(gfx)
        since = target.supported_from if target else None
        listed = since is not None and release >= matrix.version_key(since)
        wanted = not config.expected_gfx_list or gfx in config.expected_gfx_list
        if wanted and not listed:
            warnings.append(f"AMD does not list {gfx} for ROCm {config.release.version}")


def kernel_version(release: str) -> tuple[int, ...]:
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", release or "")
    return tuple(int(p) for p in match.groups(default="0")) if match else ()


def _kernel(row: matrix.Distro, survey: dict, problems: list[str]) -> None:
    minimum = matrix.MIN_KERNEL.get(row.key)
    running = survey.get("kernel") or ""
    if minimum and kernel_version(running) < matrix.version_key(minimum):
        problems.append(
            f"kernel {running} is older than {minimum}, the one AMD lists for {row.key}: "
            "install the distribution's current kernel and reboot"
        )


def _disk(config: Config, survey: dict, problems: list[str]) -> None:
    need = survey.get("apt_need")
    source = "what apt says the ROCm packages need"
    if need is None:
        need = config.preflight_min_free_gb * 10**9
        source = "preflight_min_free_gb, as apt can't size AMD's packages before their source"
    short = {}
    for entry in survey.get("disk") or []:
        if entry["avail"] < need:
            short.setdefault(entry["mount"], (entry["avail"], []))[1].append(entry["path"])
    for mount, (avail, paths) in short.items():
        problems.append(
            f"not enough free space on {mount} (for {', '.join(paths)}): "
            f"{avail / 10**9:.2f} GB free, {need / 10**9:.2f} GB needed ({source}): "
            "free some space or grow the filesystem"
        )


def torch_build(torch: dict | None) -> str | None:
    """ "rocm", "cuda", "cpu" or None (no torch) for a NodeSurvey torch entry."""
    if not torch or not torch.get("torch"):
        return None
    if torch.get("hip") or "+rocm" in torch["torch"]:
        return "rocm"
    if torch.get("cuda") or "+cu" in torch["torch"]:
        return "cuda"
    return "cpu"


def _conflicts(config: Config, survey: dict, problems: list[str], warnings: list[str]) -> None:
    migrate = bool(config.values.get("migrate_from_cuda"))
    nvidia = survey.get("nvidia") or {}
    if nvidia.get("packages") or nvidia.get("modules"):
        what = ", ".join(nvidia.get("packages") or []) or "none"
        modules = ", ".join(nvidia.get("modules") or []) or "none"
        if migrate:
            warnings.append(f"NVIDIA stack present (packages: {what}); migrate_from_cuda")
        else:
            problems.append(
                f"NVIDIA driver/CUDA stack installed (packages: {what}; loaded modules: "
                f"{modules}): set migrate_from_cuda: true to remove it first, or purge it "
                "yourself and reboot"
            )
    distro_rocm = sorted(
        f"{name} {version}"
        for name, version in (survey.get("packages") or {}).items()
        if DISTRO_ROCM.match(name) and not AMD_VERSION.match(version)
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
            if path != ROCM_SOURCE_PATH
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
            f"deploy writes {ROCM_SOURCE_PATH} for ROCm {config.release.version})"
        )
    build = torch_build(survey.get("torch"))
    if config.pytorch_install and build in ("cuda", "cpu"):
        torch = survey["torch"]["torch"]
        message = (
            f"{config.pytorch_venv} holds a {build.upper()} torch ({torch}): remove the venv "
            "(or set pytorch_venv to a new path) so the ROCm build goes into a clean one"
        )
        if migrate:
            warnings.append(message + "; migrate_from_cuda")
        else:
            problems.append(message + ", or set migrate_from_cuda: true")


def survey_args(config: Config) -> dict[str, Any]:
    paths = list(INSTALL_PATHS)
    if config.pytorch_install:
        paths.append(config.pytorch_venv)
    return {
        "venv": config.pytorch_venv,
        "users": list(config.rocm_users),
        "packages": list(config.rocm_packages),
        "space_paths": paths,
        "release_tag": config.release.numeric_tag,
    }


@deploy("Preflight")
def preflight(config: Config) -> matrix.Distro | None:
    """The host's matrix row when it may be deployed, else None (and a failing operation)."""
    # _ignore_errors: a survey that can't run (sudo refused) becomes this host's refusal,
    # with pyinfra's own error output above it, instead of an unexplained failed host.
    survey = host.get_fact(NodeSurvey, **survey_args(config), _ignore_errors=True)
    if survey is None:
        fail(
            name="Preflight: refuse this host",
            reason=f"preflight could not read {host.name} (see the error above): connect as "
            "root, or set _sudo: True with passwordless sudo or _sudo_password",
        )
        return None
    if survey.get("kernel"):
        remember_fact(RunningKernel, survey["kernel"])  # the survey ran `uname -r` too
    result = findings(config, survey)
    for warning in result.warnings:
        logger.warning(f"{host.print_prefix}warning: {warning}")
    if result.problems:
        fail(
            name="Preflight: refuse this host",
            reason=f"preflight refused {host.name}: " + "; ".join(result.problems),
        )
    return result.row
