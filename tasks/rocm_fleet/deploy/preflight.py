"""Checks before any change, from one survey (``model.findings``): a host that can't take the
release as the inventory says is refused (``engine.refuse``); the rest of the fleet carries on."""

import logging
import os
import sys
from typing import Any

from pyinfra import host
from pyinfra.api import deploy
from pyinfra.facts.server import Which

from rocm_fleet.deploy.pull import mark_pushes, pull_problems, pull_warnings
from rocm_fleet.engine.refuse import Outcome, outcome_of, record_outcome, refuse_host, warn_host
from rocm_fleet.engine.run import sudo_asked, verbose
from rocm_fleet.engine.surveying import read_survey, survey_reads
from rocm_fleet.facts.round_trip import Unreadable
from rocm_fleet.model import matrix, paths
from rocm_fleet.model.config import Config
from rocm_fleet.model.conflicts import venv_problems
from rocm_fleet.model.findings import Findings, findings
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.untrusted import visible
from rocm_fleet.operations.secureboot import PASSWORD_MAX, PASSWORD_MIN

logger = logging.getLogger("pyinfra")


def _unreadable() -> str:
    """Why the survey could not run, with the fix (checks whether the host has sudo)."""
    if not sudo_asked():
        return (
            f"preflight could not read {host.name} (see the error above): connect as root, "
            "or set _sudo: True with passwordless sudo or _sudo_password"
        )
    sudo = host.get_fact(Which, command="sudo", _sudo=False, _ignore_errors=True)
    if not sudo:
        return (
            f"_sudo is set but {host.name} has no sudo (sudo: not found): install it there "
            "as root (apt-get install sudo), or connect as root (ssh_user: root) without _sudo"
        )
    return (
        f"preflight could not read {host.name} through sudo (see the error above): give the "
        "SSH user passwordless sudo, or set _sudo_password"
    )


#: Why a survey's output was not taken as answers (``Unreadable.forged`` ->), and where to look.
_NOT_ANSWERS = {
    True: (
        "preflight refused {node}'s survey ({reason}): a file or tool on the host printed a line "
        "posing as a survey section marker, so no answer can be trusted; find that line in what "
        "the survey reads (pyinfra -vvv prints its output, the host's untrusted text) and remove it"
    ),
    False: (
        "preflight could not take {node}'s survey output as answers ({reason}): a read's output "
        "ran into the next section or was cut short; pyinfra -vvv prints the survey's output (the "
        "host's untrusted text)"
    ),
}


def _controller_problems(config: Config, row: matrix.Distro, survey: HostSurvey) -> list[str]:
    """Problems the rules can't see: a MOK password needed but neither in the environment nor
    askable, or of the wrong length."""
    if config.rocm_driver != "dkms":
        return []
    if (survey.secure_boot or {}).get("state") != "enabled":
        return []
    cert = paths.MOK_KEYS[row.id][0]
    state = (survey.mok.get(cert) or {}).get("state")
    if state not in ("not_enrolled", "missing") or (survey.mok_pending.get(cert) or {}).get(
        "pending"
    ):
        return []  # enrolled or queued: no password asked
    env = config.rocm_mok_password_env
    password = os.environ.get(env)
    if password is None and not sys.stdin.isatty():
        return [
            f"Secure Boot is on and the DKMS signing key must be enrolled, which needs a "
            f"one-time MOK password: set the environment variable {env} where pyinfra runs "
            "(or run pyinfra in a terminal to be asked)"
        ]
    if password is not None and not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        return [f"the MOK password in ${env} must be {PASSWORD_MIN}-{PASSWORD_MAX} characters"]
    return []


def refused(target: Any = None) -> str | None:
    """Why preflight refused ``target`` (default: the host being planned), or None (not refused,
    not yet run, or ``rocm_state: absent``). A refused host runs none of its operations and the
    run exits 1; guard your own later operations with ``if not refused(): ...`` for ``--dry``."""
    found = outcome_of(target)
    return found.refused if found else None


@deploy("Preflight")
def preflight(config: Config) -> Findings | None:
    """The findings (matrix row, GPUs) when the host may be deployed; else None (refused)."""
    survey = read_survey(survey_reads(config))
    if survey is None or isinstance(survey, Unreadable):
        reason = (
            _unreadable()
            if survey is None
            else _NOT_ANSWERS[survey.forged].format(node=host.name, reason=survey.reason)
        )
        record_outcome(Outcome(None, None, reason))
        refuse_host(reason)
        return None
    bundle_files = None
    if config.mirror is not None and config.mirror.bundle:
        # Imported here: only needed with a bundle.
        from rocm_fleet.upstream import manifest as bundle_files
    result = findings(config, survey, bundle_files)
    result.warnings += pull_warnings(config, survey)
    if result.row is not None:
        result.problems += _controller_problems(config, result.row, survey)
        result.problems += pull_problems(host, survey, config)
        result.problems += venv_problems(config, survey)
        if result.problems:
            result.row = None
    reason = "; ".join(result.problems) or None
    record_outcome(Outcome(survey, result, reason))
    for warning in result.warnings:
        warn_host(warning)
    if verbose():  # pyinfra -v: the lists a message summarised, in full
        for what, names in result.details.items():
            host.log_styled(visible(f"{what}: {', '.join(names)}"), log_func=logger.info)
    if reason:
        refuse_host(reason)
        return None
    mark_pushes(host)
    return result
