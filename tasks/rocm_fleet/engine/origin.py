"""Where a host's inventory data came from, so an error about a key names the file that set it.

pyinfra's host data is a waterfall (``pyinfra.api.host.HostData``): ``--data`` overrides,
then the host's own entry in the inventory file, then its groups' data (the inventory's
groups and ``group_data/<group>.py``, the last group listed winning), then the ``all``
group's. ``origin`` walks it the same way and names the first layer holding the key.

``raise_at`` raises an error so that pyinfra's CLI, which prints "pyinfra error in FILE
line N" for the innermost frame outside pyinfra, names that file and the key's line instead
of the library's line that raised it.
"""

from __future__ import annotations

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


def _group_file(host: Any, group: str) -> Path | None:
    """``group_data/<group>.py`` where pyinfra's CLI looks for it: the working directory's
    and the inventory's directory's."""
    inventory = _inventory_file(host)
    cwd = Path(getattr(getattr(host, "state", None), "cwd", None) or ".")
    folders = [cwd / "group_data", *([inventory.parent / "group_data"] if inventory else [])]
    for folder in folders:
        candidate = folder / f"{group}.py"
        if candidate.is_file():
            return candidate
    if inventory is not None and inventory.stem == group:
        return inventory
    return None


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def source(host: Any, key: str) -> tuple[str, Path | None] | None:
    """Where ``host``'s ``key`` was set: a description ("--data", "inventories/lab.py",
    "group_data/radeon.py", "the inventory's group 'radeon'") and the file, if any; None
    when no layer holds it, or it is the host's own entry in an inventory that is no file
    (pyinfra's API): the error names the host already."""
    inventory = host.inventory
    if key in inventory.get_override_data():
        return "--data", None
    if key in inventory.get_host_data(host.name):
        path = _inventory_file(host)
        return (_shown(path), path) if path else None
    for group in reversed(list(host.groups)):
        if key in inventory.get_group_data(group):
            path = _group_file(host, group)
            return (_shown(path), path) if path else (f"the inventory's group {group!r}", None)
    if key in inventory.get_data():
        path = _group_file(host, "all")
        return (_shown(path), path) if path else ("the inventory's all group", None)
    return None


def origin(host: Any, key: str) -> str | None:
    found = source(host, key)
    return found[0] if found else None


def _key_line(path: Path, key: str) -> int:
    """The first line of ``path`` that assigns ``key`` (``key = ...`` or ``"key": ...``), or
    names it as a host (``("node1", {...})``); 1 when none does."""
    pattern = re.compile(rf"""(^|[\s{{,(\[])['"]?{re.escape(key)}['"]?\s*[=:,]""")
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return 1
    return next((n for n, line in enumerate(lines, 1) if pattern.search(line)), 1)


def raise_at(error: Exception, host: Any, key: str | None) -> NoReturn:
    """Raise ``error`` from the line of the file that set ``key`` on ``host``: a frame whose
    code is compiled with that file's name and line, so pyinfra's "pyinfra error in FILE line
    N" (and a traceback with -vvv) points at the inventory, not at rocm-fleet. A key no file
    set (a required one missing) points at the host's line in the inventory file. Without
    any file (an API inventory) the error is raised here."""
    found = source(host, key) if key else None
    path = found[1] if found else None
    line = _key_line(path, key or "") if path else 1
    if path is None and (found is None or found[0] != "--data"):
        path = _inventory_file(host)
        line = _key_line(path, host.name) if path else 1
    if path is None:
        raise error
    code = compile("\n" * (line - 1) + "raise error from None", _shown(path), "exec")
    exec(code, {"error": error})  # the one statement above: nothing of the file runs
    raise error  # not reached: for the type checker
