"""Loading an inventory as pyinfra's CLI does, for rocm-fleet's own commands (a file, host list or
module; ``group_data/`` beside it and in the working directory). Loading imports
``pyinfra_cli``, which patches the process for gevent."""

import os
import sys
import weakref
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

# inventory -> the file it was loaded from (None: a host list or a module)
_FILES: weakref.WeakKeyDictionary[Any, Path | None] = weakref.WeakKeyDictionary()


def load(inventory_path: str, *, check_for_changes: bool,
         override_data: Mapping[str, Any] | None = None) -> tuple[Any, Any]:  # fmt: skip
    """(``State``, ``Inventory``) read by pyinfra's CLI loader and made current; ``override_data``
    is ``--data``; raises what the inventory's code raises."""
    from pyinfra.api import State
    from pyinfra.context import ctx_inventory, ctx_state
    from pyinfra_cli.inventory import make_inventory

    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # as pyinfra's CLI: local modules import
    state = State(check_for_changes=check_for_changes)
    state.cwd = cwd
    ctx_state.set(state)
    data = dict(override_data) if override_data is not None else None
    inventory = make_inventory(inventory_path, override_data=data, cwd=cwd)
    ctx_inventory.set(inventory)
    path = Path(inventory_path)
    _FILES[inventory] = path if path.is_file() else None
    return state, inventory


def matching(inventory: Any, pattern: str) -> list[Any]:
    """The hosts pyinfra's ``--limit PATTERN`` picks, in inventory order: the group of that name,
    else names matching it as a glob."""
    from pyinfra.api.exceptions import NoGroupError

    try:
        matched = set(inventory.get_group(pattern))
    except NoGroupError:
        matched = {host for host in inventory if fnmatch(host.name, pattern)}
    return [host for host in inventory if host in matched]


def start(state: Any, inventory: Any, hosts: list[Any]) -> None:
    """Initialise ``state`` for ``inventory`` limited to ``hosts``, with pyinfra's config."""
    from pyinfra.api import Config

    state.init(inventory, Config(), initial_limit=hosts)


def loaded_from(inventory: Any) -> Path | None:
    """The file ``load`` read ``inventory`` from; None for a host list, a module, or an inventory
    ``load`` did not make."""
    return _FILES.get(inventory)


def of_hosts(names_data: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """pyinfra hosts, started, for ``(name, data)`` pairs from a command line, with pyinfra's
    defaults for what the data lacks."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.context import ctx_inventory, ctx_state

    inventory = Inventory((names_data, {}))
    state = State(inventory, Config())
    ctx_state.set(state)
    ctx_inventory.set(inventory)
    return list(inventory)
