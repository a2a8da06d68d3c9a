"""What a deploy would change on a host (``--dry --diff``, the audit's JSON): package moves and
each file's unified diff, every line ``visible``; a secret's file is never diffed."""

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from rocm_fleet.model.untrusted import visible

#: what a secret's file shows instead of its diff
SECRET = "(secret: not shown)"
#: a new version apt can't name yet (its source is written on this run)
UNKNOWN = "?"


@dataclass(frozen=True)
class PackageChange:
    """One package apt would install, upgrade or remove; or a Python distribution of ``venv``."""

    action: Literal["install", "upgrade", "remove"]
    name: str
    old: str | None = None  #: the installed version (upgrade, remove)
    new: str | None = None  #: the version to install (install, upgrade); None: unknown
    venv: str | None = None  #: the venv of a Python distribution; None: a dpkg package

    def line(self) -> str:
        """``install NAME NEW``, ``upgrade NAME OLD -> NEW`` or ``remove NAME OLD``."""
        new = self.new or UNKNOWN
        said = {
            "install": f"install {self.name} {new}",
            "upgrade": f"upgrade {self.name} {self.old} -> {new}",
            "remove": f"remove {self.name} {self.old}",
        }[self.action]
        return visible(f"{said} (pip, {self.venv})" if self.venv else said)

    def to_json(self) -> dict[str, Any]:
        found = {"action": self.action, "name": self.name, "old": self.old, "new": self.new}
        return {**found, "venv": self.venv} if self.venv else found


@dataclass(frozen=True)
class FileChange:
    """One file a deploy would create, modify or remove, with its diff (unless ``secret``)."""

    action: Literal["create", "modify", "remove"]
    path: str
    diff: tuple[str, ...] = ()
    secret: bool = False

    def lines(self) -> list[str]:
        """A heading (``create|modify|remove PATH``), then the diff or ``SECRET``."""
        heading = f"{self.action} {visible(self.path)}"
        return [f"{heading} {SECRET}"] if self.secret else [heading, *self.diff]

    def to_json(self) -> dict[str, Any]:
        shown = {"secret": True} if self.secret else {"diff": list(self.diff)}
        return {"action": self.action, "path": self.path, **shown}


def file_change(
    path: str,
    current: str | None,
    wanted: str | None,
    secret: bool = False,
    modes: tuple[str, str] | None = None,
) -> FileChange:
    """The change from ``current`` (None: no file) to ``wanted`` (None: removed); ``modes``
    (old, new) adds ``mode OLD -> NEW`` when they differ."""
    action: Literal["create", "modify", "remove"] = (
        "remove" if wanted is None else "create" if current is None else "modify"
    )
    if secret:
        return FileChange(action, path, secret=True)
    mode = [f"mode {modes[0]} -> {modes[1]}"] if modes and modes[0] != modes[1] else []
    return FileChange(action, path, (*mode, *unified_diff(path, current, wanted)))


def unified_diff(path: str, current: str | None, wanted: str | None) -> list[str]:
    """``diff -u`` of ``current`` and ``wanted`` (None: ``/dev/null``), each line ``visible``."""
    before = (current or "").splitlines(keepends=True)
    after = (wanted or "").splitlines(keepends=True)
    old = visible(path) if current is not None else "/dev/null"
    new = visible(path) if wanted is not None else "/dev/null"
    shown = []
    for line in difflib.unified_diff(before, after, old, new):
        body = line.removesuffix("\n")
        shown.append(visible(body))
        if body == line and not line.startswith(("---", "+++", "@@")):
            shown.append("\\ No newline at end of file")
    return shown
