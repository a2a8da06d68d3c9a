"""A stand-in for the controller's wheel locks in the unit tests' plans (conftest installs it)."""

from __future__ import annotations

import hashlib


def lock_hash(requirement: str, python: str) -> str:
    """The hash ``UpstreamLocks`` pins ``requirement`` to for a Python."""
    return hashlib.sha256(f"{requirement} {python}".encode()).hexdigest()


class UpstreamLocks:
    """The controller's wheel locks without download.pytorch.org (the unit tests can't
    reach it): each requirement with a hash made from its text, where the real lock
    (``upstream.lock``, tested in test_lock) pins each wheel to its published hash."""

    def __init__(self) -> None:
        self.requests: list = []

    def lines(self, request, refresh: bool = False) -> list[str]:
        """Each requirement as given (``rocm[device-all,libraries]==7.14.*`` too, which
        the real lock turns into its wheels: the converged surveys read it as one), with a
        hash."""
        self.requests.append(request)
        return [f"{t} --hash=sha256:{lock_hash(t, request.python)}" for t in request.requirements]
