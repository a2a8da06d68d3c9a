"""``rocm-fleet settings``: every inventory key rocm-fleet reads (``model.settings``)."""

import json
import textwrap
from dataclasses import asdict
from typing import Any

from rocm_fleet.cli.exits import Command, epilog, option

WIDTH = 100


def plain() -> str:
    """By concern: ``key = default`` and the meaning wrapped beneath it."""
    from rocm_fleet.model.settings_reference import described

    out: list[str] = []
    concern = None
    for item in described():
        if item.concern != concern:
            concern = item.concern
            out += ["", concern] if out else [concern]
        default = "(required)" if item.required else repr(item.default)
        out.append(f"  {item.key} = {default}")
        meaning = item.meaning.replace("`", "")
        out += textwrap.wrap(meaning, WIDTH, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(out)


def run(args: Any) -> int:
    from rocm_fleet.model import settings_reference

    if args.json:
        found = {i.key: asdict(i) for i in settings_reference.described()}
        found = {key: {k: v for k, v in item.items() if k != "key"} for key, item in found.items()}
        print(json.dumps(found, indent=2, default=repr))
    elif args.schema:
        print(json.dumps(settings_reference.json_schema(), indent=2))
    elif args.page:
        print(settings_reference.reference_page(), end="")
    elif args.markdown:
        print(settings_reference.settings_table())
    else:
        print(plain())
    return 0


command = Command(
    "settings",
    run,
    exclusive=("markdown", "json", "schema", "page"),
    help="Print every inventory key rocm-fleet reads, by concern, with its default and "
    "meaning. Set them as pyinfra data (the inventory, group_data/, or --data KEY=VALUE for "
    "one run); any other key is left alone for your own deploys.",
    epilog=epilog("Here: 0 the settings printed."),
    params=[
        option("--markdown", is_flag=True, help="the Markdown table of docs/settings.md"),
        option("--json", is_flag=True, help="key -> concern, default, meaning"),
        option("--schema", is_flag=True, help="a JSON Schema of the settings, for editors"),
        option("--page", is_flag=True, help="the settings reference page (docs/settings.md)"),
    ],
)
