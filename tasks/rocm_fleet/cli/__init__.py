"""``rocm-fleet``: the command-line tools beside the deploy.

``rocm-fleet audit INVENTORY`` (read-only drift report), ``rocm-fleet matrix [check]`` (the
compatibility matrix, and whether upstream agrees), ``rocm-fleet bundle INVENTORY
--output DIR`` (what the fleet installs from AMD and PyTorch, for an offline mirror),
``rocm-fleet --version``. Each tool
is a module here with ``add_parser(subcommands)`` and ``run(args) -> exit status``; errors a
user can fix are one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rocm_fleet.cli import audit, bundle, check, matrix
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.version import __version__

TOOLS = (audit, check, matrix, bundle)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rocm-fleet", description="rocm-fleet tools")
    parser.add_argument("--version", action="version", version=f"rocm-fleet {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for tool in TOOLS:
        tool.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except UsageError as exc:
        print(f"rocm-fleet {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
