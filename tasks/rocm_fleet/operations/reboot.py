"""The reboot operation: only when needed and allowed, and back before it returns.

The reboot itself is what pyinfra 3.10's ``server.reboot`` does (remove sudo askpass files,
remember ``/proc/uptime``, ``( sleep 1 && reboot ) &`` detached from the SSH channel,
disconnect, reconnect until uptime shows a fresh boot), with two differences: a host that
doesn't come back within the timeout fails with a clear message instead of an exception
traceback, and a fresh boot is recognised by uptime being less than the time since the
reboot was issued (server.reboot compares with its fixed ``delay``).
"""

from __future__ import annotations

import logging
import time

from pyinfra import host
from pyinfra.api import FunctionCommand, StringCommand, operation
from pyinfra.facts.server import Uptime

from rocm_fleet.engine.connection import before_reboot, forget_after_reboot
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.run import executing
from rocm_fleet.facts.boot import BootKernels
from rocm_fleet.facts.secureboot import MokKeyState, SecureBoot
from rocm_fleet.facts.system import RebootRequired
from rocm_fleet.model import paths
from rocm_fleet.model.boot import BootState, reboot_refusal
from rocm_fleet.operations._script import failure

logger = logging.getLogger("pyinfra")

# host name -> reasons it still needs a reboot at the end of the run (no permission), and
# host name -> console notes (MOK pending); printed once by the end-of-run report.
NEEDS_REBOOT: dict[str, list[str]] = {}
NOTES: dict[str, list[str]] = {}
# host name -> why its reboot was refused: the kernel it would boot isn't ready (model.boot)
REFUSED: dict[str, list[str]] = {}
# host name -> (uptime before, monotonic time the reboot was issued)
_REBOOTS: dict[str, tuple[int, float]] = {}


def note(host_name: str, text: str) -> None:
    if text not in NOTES.setdefault(host_name, []):
        NOTES[host_name].append(text)


def reasons_from(fact: dict | None) -> list[str]:
    """Human reasons from the RebootRequired fact: ours first, then packages."""
    if not fact or not fact.get("required"):
        return []
    reasons = list(fact.get("reasons") or [])
    covered = " ".join(reasons)
    reasons += [f"package {p}" for p in fact.get("packages") or [] if p not in covered]
    return reasons or [f"{paths.REBOOT_REQUIRED} exists"]


def _wait_for_boot(state, host, timeout: int, interval: float = 1.0) -> bool:
    """Reconnect until /proc/uptime shows a boot after the reboot was issued."""
    before, issued = _REBOOTS.get(host.name, (0, time.monotonic()))
    forget_after_reboot(host)
    host.disconnect()
    deadline = issued + timeout
    time.sleep(min(2.0, timeout))
    while time.monotonic() < deadline:
        host.connect(show_errors=False)
        if host.connected:
            uptime = host.get_fact(Uptime)
            # Not rebooted: uptime ~ before + elapsed. Rebooted: uptime <= elapsed.
            if uptime + 1 < before + (time.monotonic() - issued):
                host.log_styled(f"back after {time.monotonic() - issued:.0f}s", fg="green")
                return True
            host.disconnect()
        time.sleep(interval)
    host.log_styled(
        f"did not come back within {timeout}s after the reboot (rocm_reboot_timeout); "
        "check its console",
        fg="red",
        log_func=logger.error,
    )
    return False


def _remember_uptime(state, host) -> bool:
    before_reboot(host)
    _REBOOTS[host.name] = (host.get_fact(Uptime), time.monotonic())
    return True


def boot_refusal(driver: str | None, mok_cert: str | None) -> list[str]:
    """Why rebooting this host now could strand it (``model.boot.reboot_refusal``), read
    fresh: an operation of this run that changed the host (a driver build) is seen."""
    boot = read_fact(BootKernels) or BootState()
    secure = (read_fact(SecureBoot) or {}).get("state") == "enabled"
    mok = (
        (read_fact(MokKeyState, path=mok_cert) or {}).get("state") if secure and mok_cert else None
    )
    return reboot_refusal(boot, driver, secure, mok)


@operation(is_idempotent=False)
def reboot_when_needed(
    allowed: bool, timeout: int, planned: list[str], driver: str | None, mok_cert: str | None
):
    """
    Reboot the host if it needs it, the inventory allows it and the kernel it boots next
    is ready for the driver; wait until it is back.

    + allowed: the inventory allows reboots
    + timeout: seconds to come back
    + planned: reasons earlier operations of this run will add (used while planning)
    + driver: the amdgpu driver the kernel must have (``dkms``, ``inbox``; None: none)
    + mok_cert: the DKMS signing certificate, checked as a MOK where Secure Boot is on
    """
    reasons = reasons_from(read_fact(RebootRequired))
    if not executing():
        reasons += [r for r in planned if r not in reasons]
    if not reasons:
        host.noop("no reboot needed")
        return
    refusal = boot_refusal(driver, mok_cert)
    if not allowed:
        if executing():
            NEEDS_REBOOT[host.name] = reasons + [f"not safe yet: {r}" for r in refusal]
        host.noop(f"needs a reboot ({'; '.join(reasons)}), not allowed (rocm_reboot: allow)")
        return
    if refusal and (executing() or not planned):
        # Nothing left in this run can make the kernel ready: refused, and the host fails.
        REFUSED[host.name] = refusal
        host.log_styled(f"reboot refused: {'; '.join(refusal)}", fg="red", log_func=logger.error)
        yield failure(f"reboot refused ({'; '.join(reasons)}): {'; '.join(refusal)}")
        return
    if refusal:
        host.log_styled(
            f"the kernel it boots next isn't ready now ({'; '.join(refusal)}); checked again "
            "after this run's changes, before the reboot",
            fg="yellow",
            log_func=logger.warning,
        )
    host.log_styled(f"rebooting: {'; '.join(reasons)}", fg="blue")
    yield FunctionCommand(_remember_uptime, (), {})
    # Detached so the SSH channel closes at once (as server.reboot, pyinfra #1708).
    yield StringCommand("( sleep 1 && reboot ) </dev/null >/dev/null 2>&1 &")
    yield FunctionCommand(_wait_for_boot, (timeout,), {})
