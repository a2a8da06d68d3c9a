"""``rocm-fleet settings [--markdown | --json]``: every inventory key rocm-fleet reads, its
default and meaning, by concern (generated from ``rocm_fleet.model.settings``; ``--markdown``
is the README's settings table)."""

from __future__ import annotations

import json
import textwrap
from typing import Any

from rocm_fleet.cli.exits import epilog

WIDTH = 100


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "settings",
        help="every inventory key rocm-fleet reads, its default and meaning",
        description="Every inventory key rocm-fleet reads (host_data, group_data, --data), "
        "its default and meaning, by concern; generated from the model the deploy validates "
        "with.",
        epilog=epilog("Here: 0 the settings printed."),
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--markdown", action="store_true", help="the README's Markdown table")
    shown.add_argument("--json", action="store_true", help="key -> concern, default, meaning")
    parser.set_defaults(run=run)


def settings() -> list[dict[str, Any]]:
    from rocm_fleet.model.settings import SETTINGS

    found = []
    for key, field in SETTINGS.items():
        default = field.default_factory() if callable(field.default_factory) else field.default
        found.append(
            {
                "key": key,
                "concern": field.metadata["concern"],
                "default": None if key == "rocm_version" else default,
                "required": key == "rocm_version",
                "meaning": field.metadata["meaning"],
            }
        )
    return found


def plain() -> str:
    """By concern: ``key = default`` and the meaning wrapped beneath it (``WIDTH`` columns;
    the meaning's Markdown backticks dropped)."""
    out: list[str] = []
    concern = None
    for item in settings():
        if item["concern"] != concern:
            concern = item["concern"]
            out += ["" if out else None, concern] if out else [concern]
        default = "(required)" if item["required"] else repr(item["default"])
        out.append(f"  {item['key']} = {default}")
        meaning = item["meaning"].replace("`", "")
        out += textwrap.wrap(meaning, WIDTH, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(line for line in out if line is not None)


def run(args: Any) -> int:
    from rocm_fleet.model.config import settings_table

    if args.json:
        print(json.dumps({s.pop("key"): s for s in settings()}, indent=2, default=repr))
    elif args.markdown:
        print(settings_table())
    else:
        print(plain())
    return 0
