"""Slurm's gres.conf and health program (docs/decisions/slurm-gres.md)."""

import hashlib
from pathlib import Path

from pyinfra.api import deploy

from rocm_fleet import assets
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.refuse import refuse_after_preflight, warn_host
from rocm_fleet.facts.files import DirectoryExists, FileDigest, Ledger
from rocm_fleet.facts.gpu import KfdNodes
from rocm_fleet.facts.slurm import SlurmNode
from rocm_fleet.model import health, health_check, paths
from rocm_fleet.model.config import Config
from rocm_fleet.model.slurm import GresError, gres_conf, gres_mismatch, slurm_gpus
from rocm_fleet.operations.apt import debian_packages
from rocm_fleet.operations.files import files_absent, text_file


@deploy("Slurm GRES")
def configure_slurm_gres(config: Config, present: bool = True) -> None:
    """gres.conf from the node's GPUs; else the one rocm-fleet wrote is removed."""
    if not (present and config.rocm_slurm_gres):
        _remove_written()
        return
    if not read_fact(DirectoryExists, path=paths.SLURM_DIR):
        warn_host(
            f"rocm_slurm_gres is set but {paths.SLURM_DIR} does not exist (slurmd not "
            f"installed?): {paths.SLURM_GRES_CONF} not written"
        )
        return
    kfd = read_fact(KfdNodes)
    if kfd is None:
        # An empty gres.conf would take the GPUs from Slurm at slurmd's next start.
        warn_host(
            f"rocm_slurm_gres: amdgpu's KFD topology is not there (driver not loaded?): "
            f"{paths.SLURM_GRES_CONF} left as it is"
        )
        return
    try:
        gpus = slurm_gpus(kfd, config.rocm_slurm_gres_type)
    except GresError as exc:
        refuse_after_preflight(f"rocm_slurm_gres: {exc}; {paths.SLURM_GRES_CONF} not written")
        return
    # One name for every host: pyinfra names an operation by its first host's call.
    content = gres_conf(gpus)
    text_file(
        name=f"Write {paths.SLURM_GRES_CONF} from the node's GPUs",
        path=paths.SLURM_GRES_CONF,
        content=content,
        mode="644",
    )
    text_file(
        name=f"Record what rocm-fleet wrote to {paths.SLURM_GRES_CONF}",
        path=paths.SLURM_GRES_LEDGER,
        content=hashlib.sha256(content.encode()).hexdigest() + "\n",
        mode="644",
    )
    mismatch = gres_mismatch(gpus, read_fact(SlurmNode, node=config.rocm_slurm_node_name))
    if mismatch:
        warn_host(mismatch)


def _remove_written() -> None:
    """Remove rocm-fleet's gres.conf if unchanged since written (else warn); forget the record."""
    recorded = read_fact(Ledger, path=paths.SLURM_GRES_LEDGER)
    if not recorded:
        return  # rocm-fleet never wrote one: the site's file, if any, is left alone
    current = read_fact(FileDigest, path=paths.SLURM_GRES_CONF)
    if current is not None and current["sha256"] == recorded[0]:
        text_file(
            name=f"Remove rocm-fleet's {paths.SLURM_GRES_CONF}",
            path=paths.SLURM_GRES_CONF,
            present=False,
        )
    elif current is not None:
        warn_host(
            f"{paths.SLURM_GRES_CONF} changed since rocm-fleet wrote it: left as it is "
            f"(rocm_slurm_gres is off)"
        )
    text_file(
        name=f"Forget what rocm-fleet wrote to {paths.SLURM_GRES_CONF}",
        path=paths.SLURM_GRES_LEDGER,
        present=False,
    )


def health_program(
    node_name: str | None,
    render_nodes: list[str],
    expected_gpus: int | None,
    *,
    baseline: str = paths.SLURM_HEALTH_BASELINE,
    amd_smi: tuple[str, ...] = paths.AMD_SMI_PROGRAMS,
    scontrol: tuple[str, ...] = paths.SCONTROL_PROGRAMS,
    kfd: str = "/dev/kfd",  # amdgpu's compute device
) -> str:
    """The health program's text; every path absolute."""
    modules = {m.__name__: Path(m.__file__).read_text() for m in (health, health_check)}
    return assets.render(
        "rocm-fleet-health-check.j2",
        node_name=node_name,
        render_nodes=render_nodes,
        kfd=kfd,
        expected_gpus=expected_gpus,
        amd_smi=list(amd_smi),
        reads=health.AMD_SMI_READS,
        scontrol=list(scontrol),
        baseline=baseline,
        sources=modules,
    )


@deploy("Slurm health check")
def configure_slurm_health_check(config: Config, present: bool = True) -> None:
    """Slurm's health program for the node's GPUs; else its removal."""
    if not (present and config.rocm_slurm_health_check):
        files_absent(
            *((f"Remove {p}", p) for p in (paths.SLURM_HEALTH_PROGRAM, paths.SLURM_HEALTH_BASELINE))
        )
        return
    kfd = read_fact(KfdNodes) or []
    try:
        render_nodes = [gpu.file for gpu in slurm_gpus(kfd)]
    except GresError as exc:
        refuse_after_preflight(f"rocm_slurm_health_check: {exc}; not written")
        return
    debian_packages(name="Install python3 for the health program", packages=["python3"])
    text_file(
        name=f"Write Slurm's health program {paths.SLURM_HEALTH_PROGRAM}",
        path=paths.SLURM_HEALTH_PROGRAM,
        content=health_program(
            config.rocm_slurm_node_name, render_nodes, config.expected_gpu_count
        ),
        mode="755",
    )
