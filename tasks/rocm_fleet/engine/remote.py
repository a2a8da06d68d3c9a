"""One command on an inventory host outside any deploy, through pyinfra's own connector."""

import contextlib
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyinfra.api.command import StringCommand

from rocm_fleet.engine.ssh import close, is_ssh


class RemoteFailed(Exception):
    """The host could not be reached to run the command (one line saying why)."""


@dataclass(frozen=True)
class Ran:
    status: int
    stdout: str
    stderr: str


def run_on(host: Any, argv: Sequence[str], sudo: bool = False) -> Ran:
    """Run ``argv`` (quoted) on ``host``, connecting first; one reconnect when the connection has
    gone. Status is 0 or 1; ``RemoteFailed`` when the host can't be reached."""
    command = StringCommand(" ".join(shlex.quote(word) for word in argv))
    arguments = {"_sudo": True} if sudo else {}
    for attempt in (1, 2):
        try:
            if not host.connected:
                host.connect(show_errors=False, raise_exceptions=True)
            ok, output = host.run_shell_command(command, print_output=False, **arguments)
        except Exception as exc:  # pyinfra's ConnectError, paramiko's SSHException, EOF
            forget(host)
            if attempt == 2:
                reason = " ".join(str(exc).split()) or type(exc).__name__
                raise RemoteFailed(f"{host.name}: {reason}") from None
            continue
        # pyinfra reports success or failure, not the exit status
        return Ran(0 if ok else 1, output.stdout, output.stderr)
    raise AssertionError("unreachable")


def forget(host: Any) -> None:
    """Drop ``host``'s connection (after a deploy that may have rebooted it)."""
    with contextlib.suppress(Exception):  # a connection already gone is what we wanted
        if is_ssh(host):
            close(host)
        elif host.connected:
            host.disconnect()
