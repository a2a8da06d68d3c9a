"""What a host's survey shows that no operation enforces, read once into plain values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rocm_fleet.model import paths
from rocm_fleet.model.boot import BootOutlook, dkms_limit, survey_boot, wanted_driver
from rocm_fleet.model.conflicts import VenvTorch, venv_torch
from rocm_fleet.model.host_survey import HostSurvey, amd_pci, describe_gpus, gpus_found
from rocm_fleet.model.slurm import GresError, SlurmNodeView, gres_mismatch, node_gres, slurm_gpus
from rocm_fleet.model.versions import kernel_releases, newer_kernels

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@dataclass(frozen=True)
class SlurmSeen:
    """Slurm's view against the node's GPUs: ``problem`` why it can't be told, else ``needs``
    and the ``mismatch`` (None: agreed)."""

    view: SlurmNodeView
    problem: str | None = None
    drift: bool = False
    needs: str | None = None
    mismatch: str | None = None


@dataclass(frozen=True)
class Observed:
    """A surveyed host's readings; ``slurm`` None when ``rocm_slurm_gres`` is off or unread."""

    distro: str  #: "debian 12"
    kernel: str  #: the running release, "?" when unread
    newer: list[str]  #: the installed kernels newer than the running one, oldest first
    secure_boot: str  #: mokutil's state, "unknown" when unread
    mok: str | None  #: the first managed MOK key's state that says something
    rocm: str | None
    torch: VenvTorch
    gpus: list[dict[str, Any]]  #: as ``gpus_found``
    gpus_text: str  #: as ``describe_gpus``
    amd_pci: bool  #: an AMD GPU is on the PCI bus
    bound: tuple[str, ...]  #: the drivers bound to the AMD GPUs
    amdgpu: dict[str, Any]
    reboot: dict[str, Any]
    boot: BootOutlook
    slurm: SlurmSeen | None


def observe(survey: HostSurvey, config: Config) -> Observed:
    """The readings of ``survey`` for a host configured by ``config``."""
    distro = survey.distro or {}
    running = survey.kernel or "?"
    states = [(survey.mok.get(cert) or {}).get("state") for cert, _ in paths.MOK_KEYS.values()]
    found = gpus_found(survey)
    pci = amd_pci(survey)
    cert = paths.MOK_KEYS.get(distro.get("id") or "", ("",))[0] or None
    return Observed(
        distro=f"{distro.get('id', '?')} {distro.get('point_release') or distro.get('version_id')}",
        kernel=running,
        newer=newer_kernels(running, kernel_releases(survey.packages or {})),
        secure_boot=(survey.secure_boot or {}).get("state", "unknown"),
        mok=next((s for s in states if s not in ("missing", "absent", None)), None),
        rocm=survey.rocm_version,
        torch=venv_torch(survey),
        gpus=found,
        gpus_text=describe_gpus(found),
        amd_pci=bool(pci),
        bound=tuple(sorted({g["driver"] for g in pci if g.get("driver")})),
        amdgpu=survey.amdgpu or {},
        reboot=survey.reboot or {},
        boot=survey_boot(survey, wanted_driver(config), cert, dkms_limit(config)),
        slurm=slurm_seen(survey, config),
    )


def slurm_seen(survey: HostSurvey, config: Config) -> SlurmSeen | None:
    """Whether Slurm's ``Gres=`` for the node is what its GPUs make."""
    view = survey.slurm_node
    if not config.rocm_slurm_gres or view is None:
        return None
    if survey.kfd is None:
        return SlurmSeen(view, "unknown (no KFD topology)")
    try:
        gpus = slurm_gpus(survey.kfd, config.rocm_slurm_gres_type)
    except GresError as exc:  # the deploy refuses the host, saying the same
        return SlurmSeen(view, f"! {exc}", drift=True)
    return SlurmSeen(view, needs=node_gres(gpus) or "(null)", mismatch=gres_mismatch(gpus, view))
