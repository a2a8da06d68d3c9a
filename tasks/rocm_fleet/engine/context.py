"""pyinfra's context and gevent set up as pyinfra's CLI has them, for rocm-fleet's commands that
work on many hosts at once (no public call in pyinfra 3.10)."""

from collections.abc import Callable
from typing import Any


def patch_as_cli() -> None:
    """Monkey-patch the process for gevent as pyinfra's CLI does. Call it first, before any socket
    or thread."""
    import pyinfra_cli  # noqa: F401


def on_each_host(state: Any, hosts: list[Any], each: Callable[[Any], Any]) -> list[Any]:
    """``each(host)`` for every host at once on pyinfra's greenlet pool, with ``state`` and that
    host current; each host's result or exception."""
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
