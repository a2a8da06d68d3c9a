"""An inventory host's SSH connection made by pyinfra itself (its ``ssh_*`` data and host-key
checks), for tools running their own commands over it (the node checks)."""

import logging
import logging.handlers
from typing import Any


class ConnectFailed(Exception):
    """The host could not be reached, or was refused (its key); one line saying why."""


_QUIET = logging.NullHandler()


def connect(host: Any) -> Any:
    """The connected ``paramiko.SSHClient`` of an SSH ``host`` of a started state; raises
    ``ConnectFailed`` with pyinfra's reason (and the fix for a changed key)."""
    # paramiko's transport thread logs a traceback for what ConnectFailed says in one line.
    logging.getLogger("paramiko").addHandler(_QUIET)
    logger = logging.getLogger("pyinfra")  # its warnings collected instead of printed
    warned, propagate = logging.handlers.BufferingHandler(capacity=1000), logger.propagate
    warned.setLevel(logging.WARNING)
    logger.addHandler(warned)
    logger.propagate = False
    try:
        host.connect(show_errors=False, raise_exceptions=True)
    except Exception as exc:  # pyinfra's ConnectError, or whatever paramiko raised
        reason = " ".join(str(exc).split()) or type(exc).__name__
        lines = [record.getMessage().strip() for record in warned.buffer]
        fix = [line for line in lines if line.startswith("ssh-keygen -R")]
        if "host key" in reason.lower() and fix:
            reason += f": refused, as pyinfra refuses it; if the new key is expected: {fix[0]}"
        raise ConnectFailed(reason) from None
    finally:
        logger.removeHandler(warned)
        logger.propagate = propagate
    client = getattr(host.connector, "client", None)
    if client is None:
        raise ConnectFailed(f"{host.name} is not reached over SSH ({type(host.connector)})")
    return client


def close(host: Any) -> None:
    """Close ``host``'s SSH connection and client, so the next ``connect`` makes a new one."""
    client = getattr(host.connector, "client", None)
    if host.connected:
        host.disconnect()
    if client is not None:
        client.close()


def is_ssh(host: Any) -> bool:
    """Whether pyinfra reaches ``host`` over SSH (not @local, @chroot, @docker, ...)."""
    return type(host.connector).__name__ == "SSHConnector"
