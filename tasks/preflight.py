"""Checks before any change: is this host one the chosen ROCm release can run on?

A host that fails a check gets a single failing operation naming the problem and the fix,
and none of the deploy's other operations, so it stops unchanged while the rest of the fleet
carries on. Warnings (pairings AMD doesn't list) are printed and the deploy goes ahead.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.facts.deb import DebArch
from pyinfra.facts.server import LinuxDistribution

from tasks import matrix
from tasks.operations import fail

if TYPE_CHECKING:
    from tasks.config import Config

logger = logging.getLogger("pyinfra")


def distro_findings(
    config: Config, os_release: dict[str, str], arch: str | None
) -> tuple[matrix.Distro | None, list[str], list[str]]:
    """(matrix row, problems, warnings) for a host's os-release and dpkg architecture."""
    problems: list[str] = []
    warnings: list[str] = []
    if arch != "amd64":
        problems.append(f"architecture is {arch or 'unknown'}; AMD publishes ROCm for amd64 only")
    distro_id, version_id = os_release.get("ID", ""), os_release.get("VERSION_ID", "")
    row = matrix.distro(distro_id, version_id)
    rel = config.release
    if row is None:
        supported = ", ".join(f"{d.id} {d.version}" for d in matrix.DISTROS)
        problems.append(f"{distro_id or 'unknown'} {version_id} is not supported ({supported})")
        return None, problems, warnings
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
    return (row if not problems else None), problems, warnings


def _family(gfx: str) -> str | None:
    target = matrix.gpu_target(gfx)
    return target.family if target else None


@deploy("Preflight")
def preflight(config: Config) -> matrix.Distro | None:
    """The host's matrix row when it may be deployed, else None (and a failing operation)."""
    os_release = host.get_fact(LinuxDistribution)["release_meta"]
    row, problems, warnings = distro_findings(config, os_release, host.get_fact(DebArch))
    for warning in warnings:
        logger.warning(f"{host.print_prefix}warning: {warning}")
    if problems:
        fail(name="Preflight: refuse this host", reason="; ".join(problems))
    return row
