"""Checks before any change: can this host take the chosen ROCm release as the inventory says?

One survey (``engine.survey``: one SSH round trip) reads the hardware and health preflight
judges and every fact the rest of the plan reads on a converged host, which are remembered
so planning asks the host nothing more. The rules (``model.findings``, a pure function of
the survey) turn it into problems (each with its fix) and warnings. A host with problems is
refused while planning (``engine.refuse``): the reason is printed on its line, in ``--dry``
too, it is marked failed (so the run's exit status says so) and it gets none of the
deploy's operations, while the rest of the fleet carries on. Warnings are printed and the
deploy goes ahead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import deploy

from rocm_fleet.engine.refuse import Outcome, record_outcome, refuse_host, warn_host
from rocm_fleet.engine.survey import read_survey, survey_reads
from rocm_fleet.model.findings import Findings, findings

if TYPE_CHECKING:
    from rocm_fleet.model.config import Config


@deploy("Preflight")
def preflight(config: Config) -> Findings | None:
    """What preflight found (the host's matrix row, its GPUs) when the host may be
    deployed, else None (the host is refused)."""
    survey = read_survey(survey_reads(config))
    if survey is None:
        reason = (
            f"preflight could not read {host.name} (see the error above): connect as root, "
            "or set _sudo: True with passwordless sudo or _sudo_password"
        )
        record_outcome(Outcome(None, None, reason))
        refuse_host(reason)
        return None
    bundle_files = None
    if config.mirror is not None and config.mirror.bundle:
        # Imported here: the bundle code (requests and all) is only needed with a bundle.
        from rocm_fleet.offline import bundle as bundle_files
    result = findings(config, survey, bundle_files)
    reason = "; ".join(result.problems) or None
    record_outcome(Outcome(survey, result, reason))
    for warning in result.warnings:
        warn_host(warning)
    if reason:
        refuse_host(reason)
        return None
    return result
