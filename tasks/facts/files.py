"""File facts."""

from __future__ import annotations

from typing import TypedDict

from pyinfra.api import FactBase
from typing_extensions import override

from rocm_fleet.facts._shell import ABSENT, quote


class FileDigestDict(TypedDict):
    mode: str
    sha256: str
    mtime: int


class FileDigest(FactBase[FileDigestDict | None]):
    """
    Octal mode, SHA-256 and modification time (seconds) of a regular file in one round
    trip; None when it isn't one. pyinfra's ``files.put`` reads ``File`` then ``Sha1File``
    (two round trips), and apt-list stamps need only the time.

    .. code:: python

        {"mode": "644", "sha256": "5f1c…", "mtime": 1764460800}
    """

    @override
    def command(self, path: str) -> str:
        q = quote(path)
        return (
            f"if test -f {q}; then stat -c '%a %Y' {q} && sha256sum < {q}; else echo {ABSENT}; fi"
        )

    @override
    def process(self, output: list[str]) -> FileDigestDict | None:
        if not output or output[0].strip() == ABSENT or len(output) < 2:
            return None
        mode, _, mtime = output[0].strip().partition(" ")
        return {"mode": mode, "sha256": output[1].split()[0], "mtime": int(mtime or 0)}


class DirectoryExists(FactBase[bool]):
    """Whether ``path`` is a directory (pyinfra's ``Directory`` reads its whole stat, and
    fails on a path that is a file).

    .. code:: python

        True
    """

    @staticmethod
    def default() -> bool:
        return False

    @override
    def command(self, path: str) -> str:
        return f"if test -d {quote(path)}; then echo __directory; fi; true"

    @override
    def process(self, output: list[str]) -> bool:
        return "__directory" in [line.strip() for line in output]
