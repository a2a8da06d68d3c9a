"""The lines a host's pip installs a locked wheel set from: one pinned file a line.

Both makers of a lock (``upstream.lock`` for a host that reaches the index, ``upstream.manifest``
for one that installs from a bundle) write them, and ``operations.python`` reads the marks
back; the format is here once so the three can't drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

# Pip's own requirement-file syntax: ``name==version --hash=sha256:...`` per file the set
# installs; a build requirement of an sdist has a line of its own ending in the comment
# BUILD_MARK (pip ignores it; the host installs those first, where the build finds them:
# operations.python.pinned_wheels), beside its plain line when the set needs it too;
# NO_BINARY names the distributions pinned to an sdist (pip's FormatControl: a name in
# --no-binary beats ``:all:`` in --only-binary).
BUILD_MARK = "# build requirement"
NO_BINARY = "--no-binary="


@dataclass(frozen=True)
class Locked:
    """One pinned file, as a lock or a bundle records it."""

    name: str
    version: str
    sha256: str
    sdist: bool = False
    build: bool = False  # the build of an sdist of the set needs it
    runtime: bool = True  # the set needs it installed


def lock_lines(pins: list[Locked]) -> list[str]:
    """The lines for ``pins``, sorted by name: the set's, then the build requirements',
    then the NO_BINARY line when an sdist is pinned."""
    ordered = sorted(pins, key=lambda p: p.name)
    line = "{0.name}=={0.version} --hash=sha256:{0.sha256}".format
    lines = [line(p) for p in ordered if p.runtime]
    lines += [f"{line(p)} {BUILD_MARK}" for p in ordered if p.build]
    sdists = [p.name for p in ordered if p.sdist]
    if sdists:
        lines.append(NO_BINARY + ",".join(sdists))
    return lines
