"""``rocm-fleet``: the command-line tools beside the deploy.

``rocm-fleet audit INVENTORY`` (read-only drift report; table, JSON or OpenMetrics),
``rocm-fleet check INVENTORY`` (the node checks, testinfra), ``rocm-fleet matrix [check]``
(the compatibility matrix, and whether upstream agrees), ``rocm-fleet bundle INVENTORY
--output DIR`` (what the fleet installs from AMD and PyTorch, for an offline mirror),
``rocm-fleet mirror-ca DIR ADDRESS`` (the fleet mirror's CA, certificate and key),
``rocm-fleet publish INVENTORY --repository DIR --keys KEYS`` (pull nodes' signed settings),
``rocm-fleet pull-fetch`` (the pull service's verified fetch), ``rocm-fleet settings``
(every inventory key), ``rocm-fleet --version``. Each tool is a
module here with ``add_parser(subcommands)`` and ``run(args) -> exit status``; errors a
user can fix are one line on stderr and exit status 2, never a traceback. Output into a
closed pipe (``| head``) ends quietly, as a Unix tool does.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from rocm_fleet.cli import audit, bundle, check, matrix, mirror_ca, publish, pull_fetch, settings
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.version import __version__

TOOLS = (audit, check, matrix, bundle, mirror_ca, publish, pull_fetch, settings)
#: the exit status of a tool whose reader went away (128 + SIGPIPE, as the shell reports it)
BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rocm-fleet", description="rocm-fleet tools")
    parser.add_argument("--version", action="version", version=f"rocm-fleet {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for tool in TOOLS:
        tool.add_parser(commands)
    args = parser.parse_args(argv)
    try:
        status = args.run(args)
        sys.stdout.flush()
        return status
    except UsageError as exc:
        print(f"rocm-fleet {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader (`head`) has gone: nothing more to say to it. Python's own advice:
        # point stdout at devnull so the flush at exit doesn't raise again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return BROKEN_PIPE


if __name__ == "__main__":
    sys.exit(main())
