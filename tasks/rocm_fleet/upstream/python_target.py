"""A host's Python as pip sees it: the wheel tags it accepts, best first, and its markers."""

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from rocm_fleet.model.matrix import HostRuntime
from rocm_fleet.model.versions import release_key


def manylinux_platforms(glibc: str) -> list[str]:
    """Platform tags a Linux x86-64 host with ``glibc`` accepts, most specific first."""
    major, minor = release_key(glibc)[:2]
    platforms = [f"manylinux_{major}_{m}_x86_64" for m in range(minor, 4, -1)]
    legacy = {17: "manylinux2014_x86_64", 12: "manylinux2010_x86_64", 5: "manylinux1_x86_64"}
    platforms += [alias for m, alias in legacy.items() if m <= minor]
    return [*platforms, "linux_x86_64"]


def interpreter_tag(python: str) -> str:
    """CPython's interpreter and ABI tag for a Python version: "3.12" -> "cp312"."""
    major, minor = release_key(python)[:2]
    return f"cp{major}{minor}"


class Target:
    """A host's Python as pip sees it: the tags it accepts and its environment markers."""

    def __init__(self, runtime: HostRuntime):
        self.runtime = runtime
        version = release_key(runtime.python)
        platforms = manylinux_platforms(runtime.glibc)
        interpreter = interpreter_tag(runtime.python)
        self.tags: list[Tag] = [
            *cpython_tags(version, platforms=platforms),
            *compatible_tags(version, interpreter, platforms=platforms),
        ]
        self._rank = {tag: i for i, tag in reversed(list(enumerate(self.tags)))}
        full = f"{runtime.python}.0"
        self.markers = {
            "python_version": runtime.python, "python_full_version": full,
            "implementation_name": "cpython", "implementation_version": full,
            "platform_python_implementation": "CPython", "os_name": "posix",
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "platform_release": "", "platform_version": "",
        }  # fmt: skip

    def describe(self) -> str:
        return f"Python {self.runtime.python} (glibc {self.runtime.glibc})"

    def rank(self, filename: str) -> int | None:
        """How much this Python prefers a wheel (lower is better); None: it can't use it."""
        try:
            _name, _version, _build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            return None
        ranks = [self._rank[tag] for tag in tags if tag in self._rank]
        return min(ranks) if ranks else None

    def admits(self, requires_python: str | None) -> bool:
        if not requires_python:
            return True
        try:
            return SpecifierSet(requires_python).contains(
                f"{self.runtime.python}.0", prereleases=True
            )
        except InvalidSpecifier:
            return True  # as pip does: an unreadable Requires-Python doesn't exclude

    def wanted(self, requirement: Requirement, extras: set[str]) -> bool:
        """Whether a ``Requires-Dist`` applies to this Python (and the extras asked for)."""
        if requirement.marker is None:
            return True
        return any(
            requirement.marker.evaluate({**self.markers, "extra": extra})
            for extra in ["", *sorted(extras)]
        )
