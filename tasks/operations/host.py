"""Operations on the host as a whole."""

from __future__ import annotations

from pyinfra.api import operation

from rocm_fleet.operations._script import failure


@operation()
def fail(reason: str):
    """
    Stop this host here with ``reason`` (the other hosts carry on).

    + reason: what is wrong and how to fix it; printed on the host's error output
    """
    yield failure(reason)
