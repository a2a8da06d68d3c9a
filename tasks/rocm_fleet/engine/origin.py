"""Where a host's inventory data came from, so an error about a key names the file that set it.

pyinfra's host data is a waterfall (``pyinfra.api.host.HostData``): ``--data`` overrides,
then the host's own entry in the inventory file, then its groups' data (the inventory's
groups and ``group_data/<group>.py``, the last group listed winning), then the ``all``
group's. ``origin`` walks it the same way and names the first layer holding the key, and
in it the file and line that assigned it (a group_data file is named only when it assigns
the key: the inventory file may have set it for the group instead).

``raise_at`` raises an error so that pyinfra's CLI, which prints "pyinfra error in FILE
line N" for the innermost frame outside pyinfra, names that file and the key's line instead
of the library's line that raised it.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path
from typing import Any, NoReturn

from rocm_fleet.engine.inventory import loaded_from


def _inventory_file(host: Any) -> Path | None:
    """The inventory file ``host`` came from. rocm-fleet's own commands load it themselves
    and keep it (``engine.inventory.loaded_from``). pyinfra's CLI keeps no record of it:
    in pyinfra 3.10 ``pyinfra_cli.inventory.make_inventory`` gets the argument and neither
    the ``Inventory`` it makes nor the ``State`` keeps it (only ``State.cwd``), and there is
    no hook to see it on the way. What its CLI does leave: every host of an inventory file
    is in a group named after the file's stem (inventories/lab.py: "lab"), and the file is
    on the command line, so that is where this looks."""
    loaded = loaded_from(host.inventory)
    if loaded is not None:
        return loaded
    for arg in sys.argv[1:]:
        path = Path(arg)
        if path.suffix == ".py" and path.stem in host.groups and path.is_file():
            return path
    return None


def _group_files(host: Any, group: str) -> list[Path]:
    """``group_data/<group>.py`` where pyinfra's CLI reads it, in its order (the working
    directory's, then the inventory's directory's, each updating the last:
    ``pyinfra_cli.inventory.make_inventory_from_files``)."""
    inventory = _inventory_file(host)
    cwd = Path(getattr(getattr(host, "state", None), "cwd", None) or ".").resolve()
    folders = [cwd / "group_data"]
    if inventory is not None and inventory.parent.resolve() != cwd:
        folders.append(inventory.parent.resolve() / "group_data")
    return [folder / f"{group}.py" for folder in folders if (folder / f"{group}.py").is_file()]


def _assigned_at(path: Path, key: str) -> int | None:
    """The line of ``path``'s last top-level assignment to ``key`` (a group_data file's
    data is its module's names, so the last assignment is the value), None when it has
    none. A file Python can't parse is searched for the key as text."""
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except (OSError, SyntaxError, ValueError):
        line = _key_line(path, key)
        return line if line else None
    found = None
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, (ast.AnnAssign, ast.AugAssign))
            else []
        )
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if key in names:
            found = node.lineno
    return found


def _group_source(host: Any, group: str, key: str) -> tuple[str, Path | None, int]:
    """Where ``group``'s ``key`` was set: the last group_data file that assigns it, else the
    inventory file when it names the key (a group's data in it), else the group itself."""
    for path in reversed(_group_files(host, group)):
        line = _assigned_at(path, key)
        if line is not None:
            return _shown(path), path, line
    inventory = _inventory_file(host)
    if inventory is not None:
        line = _key_line(inventory, key, after=_key_line(inventory, group, assigned=True))
        if line:
            return _shown(inventory), inventory, line
    if group == "all":
        return "the inventory's all group", None, 0
    return f"the inventory's group {group!r}", None, 0


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def where_set(host: Any, key: str) -> tuple[str, Path | None, int] | None:
    """Where ``host``'s ``key`` was set: a description ("--data", "inventories/lab.py",
    "group_data/radeon.py", "the inventory's group 'radeon'"), the file, if any, and the
    line in it (0 without a file); None when no layer holds it, or it is the host's own
    entry in an inventory that is no file (pyinfra's API): the error names the host
    already. A file is named only when it sets the key, not because it exists."""
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


def source(host: Any, key: str) -> tuple[str, Path | None] | None:
    """``where_set`` less the line."""
    found = where_set(host, key)
    return (found[0], found[1]) if found else None


def origin(host: Any, key: str) -> str | None:
    found = where_set(host, key)
    return found[0] if found else None


def _key_line(path: Path, key: str, after: int = 0, assigned: bool = False) -> int:
    """The first line of ``path`` from line ``after`` on that assigns ``key`` (``key =
    ...`` or ``"key": ...``), or names it as a host (``("node1", {...})``); with
    ``assigned``, only an assignment (``key = ...``). 0 when none does."""
    if assigned:
        pattern = re.compile(rf"^{re.escape(key)}\s*(:[^=]*)?=")
    else:
        pattern = re.compile(rf"""(^|[\s{{,(\[])['"]?{re.escape(key)}['"]?\s*[=:,]""")
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return 0
    numbered = enumerate(lines, 1)
    return next((n for n, line in numbered if n >= after and pattern.search(line)), 0)


def raise_at(error: Exception, host: Any, key: str | None) -> NoReturn:
    """Raise ``error`` from the line of the file that set ``key`` on ``host``: a frame whose
    code is compiled with that file's name and line, so pyinfra's "pyinfra error in FILE line
    N" (and a traceback with -vvv) points at the inventory, not at rocm-fleet. A key given
    with ``--data`` is placed on "--data" (there is no file); a key no file set (a required
    one missing) points at the host's line in the inventory file. Without any file (an API
    inventory) the error is raised here."""
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
