"""``rocm-fleet``: the command-line tools beside the deploy.

``rocm-fleet audit INVENTORY`` (read-only drift report; table, JSON or OpenMetrics),
``rocm-fleet check INVENTORY`` (the node checks, testinfra), ``rocm-fleet roll INVENTORY``
(the deploy in waves, each node drained in Slurm, checked, resumed), ``rocm-fleet matrix [check]``
(the compatibility matrix, and whether upstream agrees), ``rocm-fleet bundle INVENTORY
--output DIR`` (what the fleet installs from AMD and PyTorch, for an offline mirror),
``rocm-fleet mirror-ca DIR ADDRESS`` (the fleet mirror's CA, certificate and key),
``rocm-fleet publish INVENTORY --repository DIR --keys KEYS`` (pull nodes' signed settings),
``rocm-fleet pull-fetch`` (the pull service's verified fetch), ``rocm-fleet settings``
(every inventory key), ``rocm-fleet --version``. Each tool is a module here with
``add_parser(subcommands)`` and ``run(args) -> exit status``; every tool exits by one scheme
(``exits``: 0 clean, 1 findings, 2 could not check, 4 bad input), and errors a user can fix
are one line on stderr, never a traceback. Output into a closed pipe (``| head``) ends
quietly, as a Unix tool does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rocm_fleet.cli import (
    audit,
    bundle,
    check,
    exits,
    matrix,
    mirror_ca,
    publish,
    pull_fetch,
    roll,
    settings,
)
from rocm_fleet.cli.exits import Exit
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.version import __version__

TOOLS = (audit, check, roll, matrix, bundle, mirror_ca, publish, pull_fetch, settings)
#: the top-level --help: the tools below are beside the deploy, which pyinfra itself runs
DESCRIPTION = (
    "The tools beside rocm-fleet's deploy. Deploying is pyinfra's own command: "
    "`pyinfra INVENTORY rocm_fleet.deploy.rocm_node` (in a checkout: `pyinfra INVENTORY "
    "deploy.py`), with --dry to see what would change. These commands check, audit and "
    "prepare what it deploys; each one's --help says more."
)
#: the exit status of a tool whose reader went away (128 + SIGPIPE, as the shell reports it)
BROKEN_PIPE = Exit.BROKEN_PIPE


def parser() -> argparse.ArgumentParser:
    """The command line: each tool's subcommand, every parser of the scheme's class (usage
    errors exit 4, not argparse's 2)."""
    found = exits.ArgumentParser(
        prog="rocm-fleet",
        description=DESCRIPTION,
        epilog=exits.EPILOG,
    )
    found.add_argument("--version", action="version", version=f"rocm-fleet {__version__}")
    commands = found.add_subparsers(dest="command", required=True)
    for tool in TOOLS:
        tool.add_parser(commands)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # After `--`: options for the tool underneath (pytest's, for `check`), never ours.
    passed_on = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    command_line = parser()
    args = command_line.parse_args(argv)
    args.passed_on = passed_on
    if passed_on and not getattr(args, "passes_on", False):
        command_line.error(f"{args.command} takes no options after --")
    try:
        status = args.run(args)
        sys.stdout.flush()
        return int(status)
    except UsageError as exc:
        print(f"rocm-fleet {args.command}: {exc}", file=sys.stderr)
        return Exit.USAGE
    except BrokenPipeError:
        # The reader (`head`) has gone: nothing more to say to it. Python's own advice:
        # point stdout at devnull so the flush at exit doesn't raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
