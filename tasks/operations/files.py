"""File operations."""

from __future__ import annotations

import hashlib

from pyinfra import host
from pyinfra.api import StringCommand, operation

from rocm_fleet.facts.cache import read_fact
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.operations._script import script


@operation()
def text_file(path: str, content: str = "", mode: str = "644", present: bool = True):
    """
    Write a small text file owned by root when its content or mode differs; or remove it.

    One fact read (``FileDigest``) where ``files.put`` reads two (``File``, then
    ``Sha1File``), which counts on a converged fleet; written to a temporary name and
    renamed, so readers never see half a file.

    + path: the file; its directory must exist
    + content: the whole text
    + mode: octal permissions, e.g. "644"
    + present: whether the file should exist
    """
    current = read_fact(FileDigest, path=path)
    if not present:
        yield from removed(path, exists=current is not None)
        return
    digest = hashlib.sha256(content.encode()).hexdigest()
    if current is not None and (current["mode"], current["sha256"]) == (mode, digest):
        host.noop(f"{path} is up to date")
        return
    yield script("text-file", path, mode, content)


def removed(path: str, exists: bool):
    """The commands that remove a file the deploy put there; none (a noop) when it's gone.
    For operations whose ``present=False`` is just that (``yield from removed(...)``)."""
    if not exists:
        host.noop(f"{path} is absent")
        return
    yield StringCommand("rm", "-f", path)
