"""The reboot operation: only when needed and allowed, and back (a fresh uptime) before it returns,
else the host fails with a message."""

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
from rocm_fleet.model.untrusted import visible
from rocm_fleet.operations._script import failure

logger = logging.getLogger("pyinfra")

# host name -> reboot reasons left at the end of the run / console notes / refusals,
# for the end-of-run report.
NEEDS_REBOOT: dict[str, list[str]] = {}
NOTES: dict[str, list[str]] = {}
REFUSED: dict[str, list[str]] = {}
# host name -> (uptime before, monotonic time the reboot was issued)
_REBOOTS: dict[str, tuple[int, float]] = {}


def reasons_from(fact: dict | None) -> list[str]:
    """Reasons from a ``RebootRequired`` answer: ours, then packages not named in them."""
    if not fact or not fact.get("required"):
        return []
    reasons = list(fact.get("reasons") or [])
    covered = " ".join(reasons)
    reasons += [f"package {p}" for p in fact.get("packages") or [] if p not in covered]
    return reasons or [f"{paths.REBOOT_REQUIRED} exists"]


def _wait_for_boot(state, host, timeout: int, interval: float = 1.0) -> bool:
    """Reconnect until /proc/uptime shows a boot after the reboot was issued; False on timeout."""
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


def boot_refusal(
    driver: str | None, mok_cert: str | None, dkms_max: str | None = None
) -> list[str]:
    """Why rebooting now could strand the host (``model.boot.reboot_refusal``), read fresh (sees
    this run's changes)."""
    boot = read_fact(BootKernels) or BootState()
    secure = (read_fact(SecureBoot) or {}).get("state") == "enabled"
    mok = (
        (read_fact(MokKeyState, path=mok_cert) or {}).get("state") if secure and mok_cert else None
    )
    return reboot_refusal(boot, driver, secure, mok, dkms_max)


@operation(is_idempotent=False)
def reboot_when_needed(
    allowed: bool,
    timeout: int,
    planned: list[str],
    driver: str | None,
    mok_cert: str | None,
    dkms_max: str | None = None,
):
    """Reboot the host if it needs it (planning: or will, ``planned``), ``allowed``, and the kernel
    it boots next is ready for ``driver`` (``dkms_max``; ``mok_cert`` where Secure Boot is on; else
    the host fails); wait up to ``timeout`` seconds until it is back."""
    reasons = reasons_from(read_fact(RebootRequired))
    if not executing():
        reasons += [r for r in planned if r not in reasons]
    if not reasons:
        host.noop("no reboot needed")
        return
    refusal = boot_refusal(driver, mok_cert, dkms_max)
    if not allowed:
        if executing():
            NEEDS_REBOOT[host.name] = reasons + [f"not safe yet: {r}" for r in refusal]
        host.noop(f"needs a reboot ({'; '.join(reasons)}), not allowed (rocm_reboot: allow)")
        return
    if refusal and (executing() or not planned):
        REFUSED[host.name] = refusal
        host.log_styled(
            visible(f"reboot refused: {'; '.join(refusal)}"), fg="red", log_func=logger.error
        )
        yield failure(f"reboot refused ({'; '.join(reasons)}): {'; '.join(refusal)}")
        return
    if refusal:
        host.log_styled(
            visible(
                f"the kernel it boots next isn't ready now ({'; '.join(refusal)}); checked "
                "again after this run's changes, before the reboot"
            ),
            fg="yellow",
            log_func=logger.warning,
        )
    host.log_styled(visible(f"rebooting: {'; '.join(reasons)}"), fg="blue")
    yield FunctionCommand(_remember_uptime, (), {})
    # Detached: the SSH channel closes at once (as server.reboot).
    yield StringCommand("( sleep 1 && reboot ) </dev/null >/dev/null 2>&1 &")
    yield FunctionCommand(_wait_for_boot, (timeout,), {})
