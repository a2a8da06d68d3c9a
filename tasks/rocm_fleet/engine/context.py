"""pyinfra's context and gevent, set up as pyinfra's CLI has them, for rocm-fleet's commands.

pyinfra's ``host`` and ``state`` (and what a fact or an operation reads through them) stand
for whichever host and state are current in the running greenlet (``pyinfra.context``); its
CLI makes them current as it works through the hosts, on gevent's greenlets, with the
standard library monkey-patched for gevent so connections run in parallel. pyinfra 3.10
has no public call for either; ``rocm-fleet audit`` and ``rocm-fleet bundle`` need both to
work on many hosts at once outside the CLI. Those uses are here, behind named functions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def patch_as_cli() -> None:
    """Monkey-patch the process for gevent exactly as pyinfra's CLI does (importing
    ``pyinfra_cli`` patches the standard library), so connections run in parallel. Call it
    first: before anything opens a socket or starts a thread."""
    import pyinfra_cli  # noqa: F401


def on_each_host(state: Any, hosts: list[Any], each: Callable[[Any], Any]) -> list[Any]:
    """``each(host)`` for every host at once on pyinfra's greenlet pool, with ``state``
    current and, while each call runs, its host (so ``pyinfra.host`` and the facts it reads
    are that host's); each host's result, or the exception its call raised."""
    import gevent
    from pyinfra.context import ctx_host, ctx_state

    def run(host: Any) -> Any:
        with ctx_host.use(host):
            return each(host)

    with ctx_state.use(state):
        greenlets = [state.pool.spawn(run, host) for host in hosts]
        gevent.joinall(greenlets)
    return [
        greenlet.value if greenlet.successful() else greenlet.exception for greenlet in greenlets
    ]
