"""Where a host's inventory key was set (``where_set``: pyinfra's data waterfall), and ``raise_at``
raising an error from that file and line."""

import ast
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from rocm_fleet.engine.inventory import loaded_from


def _inventory_file(host: Any) -> Path | None:
    """The inventory file ``host`` came from: ``load``'s record, else a ``.py`` argument on the
    command line named after one of its groups (pyinfra's CLI keeps no record)."""
    loaded = loaded_from(host.inventory)
    if loaded is not None:
        return loaded
    for arg in sys.argv[1:]:
        path = Path(arg)
        if path.suffix == ".py" and path.stem in host.groups and path.is_file():
            return path
    return None


def _group_files(host: Any, group: str) -> list[Path]:
    """``group_data/<group>.py`` files in the order pyinfra's CLI reads them (working directory,
    then the inventory's)."""
    inventory = _inventory_file(host)
    cwd = Path(getattr(getattr(host, "state", None), "cwd", None) or ".").resolve()
    folders = [cwd / "group_data"]
    if inventory is not None and inventory.parent.resolve() != cwd:
        folders.append(inventory.parent.resolve() / "group_data")
    return [folder / f"{group}.py" for folder in folders if (folder / f"{group}.py").is_file()]


def _assigned_at(path: Path, key: str) -> int | None:
    """The line of ``path``'s last top-level assignment to ``key``, None when none (an unparsable
    file is searched as text)."""
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return _key_line(path, key) or None
    found = None
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if key in {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}:
                found = node.lineno
    return found


def _group_source(host: Any, group: str, key: str) -> tuple[str, Path | None, int]:
    """Where ``group``'s ``key`` was set: the last group_data file assigning it, else the
    inventory file naming it, else the group itself."""
    for path in reversed(_group_files(host, group)):
        line = _assigned_at(path, key)
        if line is not None:
            return _shown(path), path, line
    inventory = _inventory_file(host)
    if inventory is not None:
        line = _key_line(inventory, key, after=_key_line(inventory, group, assigned=True))
        if line:
            return _shown(inventory), inventory, line
    return ("the inventory's all group" if group == "all" else f"the inventory's group {group!r}",
            None, 0)  # fmt: skip


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def where_set(host: Any, key: str) -> tuple[str, Path | None, int] | None:
    """(description, file or None, line or 0) of where ``host``'s ``key`` was set, e.g.
    ("--data", None, 0); None when no layer holds it or it is an API inventory's host entry."""
    inventory = host.inventory
    if key in inventory.get_override_data():
        return "--data", None, 0
    if key in inventory.get_host_data(host.name):
        path = _inventory_file(host)
        if path is None:
            return None
        return _shown(path), path, _key_line(path, key, after=_key_line(path, host.name)) or 1
    for group in reversed(list(host.groups)):
        if key in inventory.get_group_data(group):
            return _group_source(host, group, key)
    if key in inventory.get_data():
        return _group_source(host, "all", key)
    return None


def origin(host: Any, key: str) -> str | None:
    found = where_set(host, key)
    return found[0] if found else None


def _key_line(path: Path, key: str, after: int = 0, assigned: bool = False) -> int:
    """The first line from ``after`` on that assigns ``key`` or names it as a host (with
    ``assigned``: only ``key = ...``); 0 when none."""
    if assigned:
        pattern = re.compile(rf"^{re.escape(key)}\s*(:[^=]*)?=")
    else:
        pattern = re.compile(rf"""(^|[\s{{,(\[])['"]?{re.escape(key)}['"]?\s*[=:,]""")
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return 0
    return next((n for n, line in enumerate(lines, 1) if n >= after and pattern.search(line)), 0)


def raise_at(error: Exception, host: Any, key: str | None) -> NoReturn:
    """Raise ``error`` from a frame compiled at the file and line that set ``key`` on ``host``
    (else the host's line; else from here). Nothing of the file runs."""
    found = where_set(host, key) if key else None
    name, line = (found[0], found[2]) if found and (found[1] or found[0] == "--data") else ("", 0)
    if not name:
        path = _inventory_file(host)
        name, line = (_shown(path), _key_line(path, host.name) or 1) if path else ("", 0)
    if not name:
        raise error
    code = compile("\n" * (max(line, 1) - 1) + "raise error from None", name, "exec")
    exec(code, {"error": error})  # the one statement above: nothing of the file runs
    raise error  # not reached: for the type checker
