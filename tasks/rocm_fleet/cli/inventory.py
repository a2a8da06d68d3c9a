"""Loading a pyinfra inventory for the tools, with one-line errors."""

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rocm_fleet.cli.exits import UsageError, option
from rocm_fleet.engine import inventory as engine_inventory


def load_inventory(inventory_path: str, limits: Sequence[str], check_for_changes: bool,
                   override_data: dict[str, Any] | None = None,
                   ) -> tuple[Any, list[Any]]:  # fmt: skip
    """(pyinfra State, the hosts ``limits`` choose), loaded as pyinfra's CLI does; each limit a
    ``--limit`` value, commas splitting it."""
    # @local, @chroot/DIR, @docker/NAME, ...: pyinfra connectors, not files
    looks_like_file = not inventory_path.startswith("@") and (
        inventory_path.endswith(".py") or os.sep in inventory_path
    )
    if looks_like_file and not Path(inventory_path).is_file():
        raise UsageError(f"inventory file {inventory_path} does not exist")
    try:
        state, inventory = engine_inventory.load(
            inventory_path, check_for_changes=check_for_changes, override_data=override_data
        )
    except SyntaxError as exc:
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else inventory_path
        raise UsageError(f"{where}: {exc.msg}") from None
    except Exception as exc:  # pyinfra's CliError, or anything the inventory's code raises
        raise UsageError(f"could not load inventory {inventory_path}: {exc}") from None
    hosts = list(inventory)
    if not hosts:
        raise UsageError(f"inventory {inventory_path} has no hosts")
    patterns = [p.strip() for item in limits for p in item.split(",") if p.strip()]
    if patterns:
        chosen = []
        for pattern in patterns:
            matched = engine_inventory.matching(inventory, pattern)
            if not matched:
                raise UsageError(f"--limit {pattern} matches no host or group of {inventory_path}")
            chosen += matched
        hosts = [h for h in hosts if h in chosen]
    engine_inventory.start(state, inventory, hosts)
    return state, hosts


def host_options(prefix: str = "") -> list[Any]:
    """``--limit`` and ``--data``; ``prefix`` leads their help (e.g. "with INVENTORY: ")."""
    return [
        option("--limit", multiple=True,
               help=f"{prefix}group, host name or glob (repeatable; commas split)"),
        option("--data", multiple=True, metavar="KEY=VALUE", help=f"{prefix}override a data "
               "value for every host, as pyinfra's --data does (repeatable)"),
    ]  # fmt: skip


def parse_data(items: Sequence[str]) -> dict[str, Any]:
    """``--data key=value`` values as pyinfra's CLI reads them (booleans, numbers, JSON)."""
    data = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--data {item!r}: expected key=value")
        data[key.strip()] = parse_cli_arg(value)
    return data


def parse_cli_arg(value: str) -> Any:
    """pyinfra_cli.util.parse_cli_arg (3.x), without importing pyinfra_cli (gevent)."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return json.loads(value)
    except ValueError:
        return value
