"""Loading an inventory as pyinfra's CLI does, for rocm-fleet's own commands.

pyinfra 3.10's API makes an ``Inventory`` from host names and data; reading an inventory
*argument* (a file with its groups, the group named after the file, ``group_data/`` in the
working directory and beside the file, a host list, a module) is its CLI's
(``pyinfra_cli.inventory.make_inventory``), which runs it with the new ``State`` current
and then makes the inventory current (``pyinfra.context``). The audit, the bundle and the
node checks load an inventory the same way, so a fleet's inventory means the same to them
as to ``pyinfra INVENTORY deploy.py``. Those uses are here, behind named functions.

Importing ``pyinfra_cli`` monkey-patches the process for gevent (``context.patch_as_cli``),
which loading an inventory therefore does too.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

# inventory -> the file it was loaded from (None: a host list or a module)
_FILES: weakref.WeakKeyDictionary[Any, Path | None] = weakref.WeakKeyDictionary()


def load(
    inventory_path: str,
    *,
    check_for_changes: bool,
    override_data: Mapping[str, Any] | None = None,
) -> tuple[Any, Any]:
    """(pyinfra ``State``, ``Inventory``) for an inventory file, host list or module, read
    by pyinfra's CLI loader with the state current (``pyinfra.state``) and then the
    inventory (``pyinfra.inventory``), as pyinfra's CLI has them while a deploy runs;
    ``override_data`` wins over every host's data (pyinfra's ``--data``). Whatever the
    inventory's own code raises (it may raise anything) is raised here; ``start`` the state
    once its hosts are chosen."""
    from pyinfra.api import State
    from pyinfra.context import ctx_inventory, ctx_state
    from pyinfra_cli.inventory import make_inventory

    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # as pyinfra's CLI has it: group_data/ and local modules import
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
    """The hosts of ``inventory`` that pyinfra's ``--limit PATTERN`` picks, in the inventory's
    order ([] for none): the group of that name, else the hosts whose names match it as a
    glob.

    pyinfra's rule, as its CLI applies it (``pyinfra_cli.cli._get_inventory_pattern_matches``
    in 3.10, no public call; ``tests/integration/test_engine_loading.py`` compares the two,
    also on the newest 3.x under ``make pyinfra-next``). Written here rather than called: importing
    pyinfra's CLI module loads all of it (typeguard among it, which pytest, running the node
    checks, then can't rewrite), and it warns about a pattern that matches nothing, which
    the caller refuses with its own message.
    """
    from pyinfra.api.exceptions import NoGroupError

    try:
        matched = set(inventory.get_group(pattern))
    except NoGroupError:
        matched = {host for host in inventory if fnmatch(host.name, pattern)}
    return [host for host in inventory if host in matched]


def start(state: Any, inventory: Any, hosts: list[Any]) -> None:
    """Initialise ``state`` for ``inventory`` limited to ``hosts`` (pyinfra's ``--limit``),
    with pyinfra's default config, as pyinfra's CLI does once the inventory is loaded."""
    from pyinfra.api import Config

    state.init(inventory, Config(), initial_limit=hosts)


def loaded_from(inventory: Any) -> Path | None:
    """The inventory file ``load`` read ``inventory`` from; None for a host list, a module,
    or an inventory ``load`` did not make (pyinfra's own CLI records no file: see
    ``origin``)."""
    return _FILES.get(inventory)


def of_hosts(names_data: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """pyinfra hosts, started, for ``(name, data)`` pairs given on a command line rather
    than in an inventory file (``rocm-fleet check --hosts ssh://...``): each is connected
    as pyinfra connects an inventory's host, with its defaults for what the data lacks."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.context import ctx_inventory, ctx_state

    inventory = Inventory((names_data, {}))
    state = State(inventory, Config())
    ctx_state.set(state)
    ctx_inventory.set(inventory)
    return list(inventory)
