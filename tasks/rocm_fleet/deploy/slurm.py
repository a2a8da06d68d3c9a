"""Slurm's view of the node's GPUs (``rocm_slurm_gres``): gres.conf written from what
preflight found, and the ``Gres=`` the controller's slurm.conf needs for this node, said
when Slurm's own view disagrees (``model.slurm`` explains both).

gres.conf is the node's and rocm-fleet's to write; slurm.conf is the site's (one file for
the whole cluster, usually kept by its own tooling), so the deploy never edits it: it warns
with the exact value instead, and ``rocm-fleet check`` fails until Slurm agrees. slurmd
reads gres.conf when it starts; restarting it is left to the site's maintenance (drain,
restart, resume), as a restart under running jobs is the site's call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra.api import deploy

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.refuse import warn_host
from rocm_fleet.facts.files import DirectoryExists, FileDigest
from rocm_fleet.facts.gpu import KfdNodes
from rocm_fleet.facts.slurm import SlurmNode
from rocm_fleet.facts.survey import Read
from rocm_fleet.model import paths
from rocm_fleet.model.slurm import gres_conf, gres_mismatch, slurm_gpus
from rocm_fleet.operations.files import text_file

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


def survey_reads(config: Config) -> list[Read]:
    """What this task reads, in preflight's one survey (nothing when the setting is off)."""
    if not config.rocm_slurm_gres:
        return []
    return [
        Read(f"dir {paths.SLURM_DIR}", DirectoryExists, {"path": paths.SLURM_DIR}),
        Read(f"file {paths.SLURM_GRES_CONF}", FileDigest, {"path": paths.SLURM_GRES_CONF}),
        Read("slurm node", SlurmNode),
    ]


@deploy("Slurm GRES")
def configure_slurm_gres(config: Config) -> None:
    if not config.rocm_slurm_gres:
        return  # the file is the site's then: left as it is
    if not read_fact(DirectoryExists, path=paths.SLURM_DIR):
        warn_host(
            f"rocm_slurm_gres is set but {paths.SLURM_DIR} does not exist (slurmd not "
            f"installed?): {paths.SLURM_GRES_CONF} not written"
        )
        return
    kfd = read_fact(KfdNodes)
    if kfd is None:
        # A driver not loaded yet (DKMS before its reboot): an empty gres.conf would take
        # the node's GPUs away from Slurm at slurmd's next start.
        warn_host(
            f"rocm_slurm_gres: amdgpu's KFD topology is not there (driver not loaded?): "
            f"{paths.SLURM_GRES_CONF} left as it is"
        )
        return
    gpus = slurm_gpus(kfd, config.rocm_slurm_gres_type)
    # One name for every host (pyinfra shows an operation by its first host's name); the
    # file's own header says the Gres= it makes.
    text_file(
        name=f"Write {paths.SLURM_GRES_CONF} from the node's GPUs",
        path=paths.SLURM_GRES_CONF,
        content=gres_conf(gpus),
        mode="644",
    )
    mismatch = gres_mismatch(gpus, read_fact(SlurmNode))
    if mismatch:
        warn_host(mismatch)
