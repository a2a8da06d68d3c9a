"""A real SSH server on 127.0.0.1 for the unit suite (paramiko's server side, in a thread):
one host key, one authorised client key, and every command a client asks to run recorded
(answered with exit status 0 for ``true``, 1 for anything else, no output). What the host
key tests need to see: whether a client logged in and ran anything at all."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import paramiko


@dataclass
class Sshd:
    port: int
    host_key: paramiko.PKey
    logins: list[str] = field(default_factory=list)  #: users that authenticated
    commands: list[str] = field(default_factory=list)  #: commands asked for, in order


def _interface(sshd: Sshd, allowed: paramiko.PKey) -> paramiko.ServerInterface:
    class Interface(paramiko.ServerInterface):
        def get_allowed_auths(self, username: str) -> str:
            return "publickey"

        def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
            if key == allowed:
                sshd.logins.append(username)
                return paramiko.AUTH_SUCCESSFUL
            return paramiko.AUTH_FAILED

        def check_channel_request(self, kind: str, chanid: int) -> int:
            if kind == "session":
                return paramiko.OPEN_SUCCEEDED
            return paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

        def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
            text = command.decode(errors="replace")
            sshd.commands.append(text)

            def answer() -> None:
                # after paramiko has told the client its request succeeded (on return)
                time.sleep(0.05)
                channel.send_exit_status(0 if text.strip() == "true" else 1)
                channel.close()

            threading.Thread(target=answer, daemon=True).start()
            return True

    return Interface()


@contextlib.contextmanager
def serving(host_key: paramiko.PKey, client_key: paramiko.PKey, port: int = 0) -> Iterator[Sshd]:
    """An SSH server with ``host_key`` on 127.0.0.1 (``port``, or a free one) letting in
    ``client_key``, until the block ends (its threads and connections closed)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(8)
    listener.settimeout(0.2)
    sshd = Sshd(listener.getsockname()[1], host_key)
    stop = threading.Event()
    transports: list[paramiko.Transport] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            transport = paramiko.Transport(connection)
            transport.add_server_key(host_key)
            transports.append(transport)
            with contextlib.suppress(Exception):  # a client refusing our key hangs up
                transport.start_server(server=_interface(sshd, client_key))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield sshd
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        for transport in transports:
            transport.close()
