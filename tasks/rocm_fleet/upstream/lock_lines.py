"""The lines a host's pip installs a locked wheel set from."""

from dataclasses import dataclass

# ``name==version --hash=sha256:...`` per file; an sdist's build requirement also has a line
# ending in BUILD_MARK (a comment to pip); NO_BINARY names the distributions pinned to an sdist.
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
    """The lines for ``pins`` by name: the set's, the build requirements', the NO_BINARY line."""
    ordered = sorted(pins, key=lambda p: p.name)
    line = "{0.name}=={0.version} --hash=sha256:{0.sha256}".format
    lines = [line(p) for p in ordered if p.runtime]
    lines += [f"{line(p)} {BUILD_MARK}" for p in ordered if p.build]
    sdists = [p.name for p in ordered if p.sdist]
    if sdists:
        lines.append(NO_BINARY + ",".join(sdists))
    return lines
