"""Reboots that are safe: only when allowed, only hosts that need one, N at a time.

A host needs a reboot when ``/run/reboot-required`` exists: a new kernel (tasks/kernel.py), a
new driver (tasks/driver.py), a MOK enrollment just queued (tasks/secureboot.py), or anything
else Debian/Ubuntu marked. Reasons come from ``/run/reboot-required.pkgs`` and rocm-fleet's
``/run/rocm-fleet/reboot-reasons``; /run is a tmpfs, so a reboot clears them.

* Without ``reboot: allow`` nothing reboots; the run ends with the list of hosts that need
  one and why (and those that wait for someone at the console).
* With it, the hosts that need one reboot ``reboot_parallel`` at a time. This is pyinfra's
  ``_parallel`` global argument on this one operation: pyinfra runs an operation for all
  hosts in batches of that size and waits for a whole batch before starting the next
  (pyinfra/api/operations.py ``_run_single_op``), and every host's operation returns only
  once its host is back (or failed). Hosts that need no reboot finish their turn at once.
  ``--serial`` would serialise every operation of the deploy, and a python.call with a
  semaphore would re-implement the batching pyinfra already has, so neither is used.
* The reboot itself is what pyinfra 3.10's ``server.reboot`` does (remove sudo askpass
  files, remember ``/proc/uptime``, ``( sleep 1 && reboot ) &`` detached from the SSH
  channel, disconnect, reconnect until uptime shows a fresh boot), with two differences:
  a host that doesn't come back within ``reboot_timeout`` fails with a clear message instead
  of an exception traceback, and a fresh boot is recognised by uptime being less than the
  time since the reboot was issued (server.reboot compares with its fixed ``delay``).
* The operation comes before tasks/verify.py's, so every rebooted host is verified again.

``reboot_parallel`` is read per host, but pyinfra takes an operation's global arguments from
one host: set it once for the whole fleet (group_data/all.py or the inventory's groups).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from pyinfra import host
from pyinfra.api import FunctionCommand, StringCommand, deploy, operation
from pyinfra.api.operation import OperationMeta
from pyinfra.api.state import BaseStateCallback
from pyinfra.connectors.util import clear_askpass_cache, remove_any_sudo_askpass_file
from pyinfra.facts.server import Uptime

from tasks import settings
from tasks.facts import RebootRequired, read_fact

if TYPE_CHECKING:
    from tasks.config import Config

logger = logging.getLogger("pyinfra")


def positive(value: object) -> str | None:
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return None if valid else "a whole number >= 1"


SETTINGS = (
    settings.Setting(
        "reboot", "never",
        "Reboots: `allow` = hosts that need one (new kernel, new driver, MOK to confirm) reboot, "
        "then are verified again; `never` = the run ends listing them",
        settings.one_of("allow", "never"),
    ),
    settings.Setting(
        "reboot_parallel", 1,
        "How many hosts reboot at a time (set it fleet-wide)", positive,
    ),
    settings.Setting(
        "reboot_timeout", 600,
        "Seconds a rebooting host has to come back before it fails", positive,
    ),
)  # fmt: skip

# host name -> reasons it still needs a reboot at the end of the run (no permission), and
# host name -> console notes (MOK pending); printed once by the end-of-run report.
NEEDS_REBOOT: dict[str, list[str]] = {}
NOTES: dict[str, list[str]] = {}
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
    return reasons or ["/run/reboot-required exists"]


def _wait_for_boot(state, host, timeout: int, interval: float = 1.0) -> bool:
    """Reconnect until /proc/uptime shows a boot after the reboot was issued."""
    before, issued = _REBOOTS.get(host.name, (0, time.monotonic()))
    clear_askpass_cache(host)
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
        f"did not come back within {timeout}s after the reboot (reboot_timeout); check its console",
        fg="red",
        log_func=logger.error,
    )
    return False


def _remember_uptime(state, host) -> bool:
    remove_any_sudo_askpass_file(host)
    _REBOOTS[host.name] = (host.get_fact(Uptime), time.monotonic())
    return True


@operation(is_idempotent=False)
def reboot_when_needed(allowed: bool, timeout: int, planned: list[str]):
    """
    Reboot the host if it needs it and the inventory allows it; wait until it is back.

    + allowed: the inventory allows reboots
    + timeout: seconds to come back
    + planned: reasons earlier operations of this run will add (used while planning)
    """
    reasons = reasons_from(read_fact(RebootRequired))
    if not host.state.is_executing:
        reasons += [r for r in planned if r not in reasons]
    if not reasons:
        host.noop("no reboot needed")
        return
    if not allowed:
        if host.state.is_executing:
            NEEDS_REBOOT[host.name] = reasons
        host.noop(f"needs a reboot ({'; '.join(reasons)}), not allowed (reboot: allow)")
        return
    host.log_styled(f"rebooting: {'; '.join(reasons)}", fg="blue")
    yield FunctionCommand(_remember_uptime, (), {})
    # Detached so the SSH channel closes at once (as server.reboot, pyinfra #1708).
    yield StringCommand("( sleep 1 && reboot ) </dev/null >/dev/null 2>&1 &")
    yield FunctionCommand(_wait_for_boot, (timeout,), {})


class _Report(BaseStateCallback):
    """Prints the hosts that still need a reboot (or a person) after the reboot operation."""

    def __init__(self) -> None:
        self.op_hashes: set[str] = set()

    def operation_end(self, state, op_hash) -> None:  # type: ignore[override]
        if op_hash not in self.op_hashes:
            return
        lines = []
        for name in sorted(NEEDS_REBOOT):
            lines.append(f"  {name}: {'; '.join(NEEDS_REBOOT[name])}")
        if lines:
            logger.warning(
                "Hosts that need a reboot (not allowed: set reboot: allow, or reboot them "
                "yourself):\n" + "\n".join(lines)
            )
        console = [f"  {name}: {'; '.join(NOTES[name])}" for name in sorted(NOTES)]
        if console:
            logger.warning("Hosts waiting for someone at the console:\n" + "\n".join(console))


def _report(state) -> _Report:
    for handler in state.callback_handlers:
        if isinstance(handler, _Report):
            return handler
    handler = _Report()
    state.add_callback_handler(handler)
    return handler


@deploy("Reboot")
def reboot_if_needed(config: Config, planned: list[tuple[str, OperationMeta]]) -> None:
    """Reboot (if allowed) the hosts that need it; ``planned``: (reason, operation) pairs of
    this run whose change will need one."""
    reasons = [reason for reason, op in planned if op.will_change]
    meta = reboot_when_needed(
        name="Reboot hosts that need it (when allowed)",
        allowed=config.reboot == "allow",
        timeout=config.reboot_timeout,
        planned=reasons,
        _parallel=config.reboot_parallel,
    )
    _report(host.state).op_hashes.add(meta._hash)
