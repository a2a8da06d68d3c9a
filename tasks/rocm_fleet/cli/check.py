"""``rocm-fleet check INVENTORY | --hosts SPECS --rocm-version X.Y.Z``: the node checks.

Runs the testinfra checks that ship in the package (``rocm_fleet.checks``) with pytest, as
``pytest --pyargs rocm_fleet.checks`` does, against an inventory's hosts (each checked
against its own inventory data, read by the deploy's model) or hosts named directly with
what they should have. The user's own pytest configuration (a pyproject.toml or pytest.ini
in the current directory) is not read: the checks run the same wherever they are started.

Exit status: pytest's: 0 every check passed, 1 a check failed (or a host did not answer),
4 nothing to compare against or a bad option/inventory (one line on stderr).
"""

from __future__ import annotations

import os
from typing import Any

#: pytest's own exit status for a usage error (pytest.ExitCode.USAGE_ERROR)
USAGE_ERROR = 4


def add_parser(commands: Any) -> None:
    check = commands.add_parser(
        "check",
        help="run the node checks (testinfra) against an inventory's hosts or --hosts",
        description=(
            "Check nodes from outside: rocminfo reports the expected GPUs, torch is the ROCm "
            "build and sees them, the apt source, pin and packages are the release's, the "
            "users can reach the GPU. What each host should have comes from its inventory "
            "data (group_data included), validated by the deploy's own model."
        ),
        epilog=(
            "exit status: 0 every check passed; 1 a check failed or a host did not answer; "
            "4 nothing to compare against, or a bad option or inventory. "
            "Same checks: pytest --pyargs rocm_fleet.checks --rocm-inventory FILE"
        ),
    )
    check.add_argument(
        "inventory", nargs="?", help="pyinfra inventory the hosts and their data come from"
    )
    check.add_argument(
        "--limit",
        action="append",
        default=[],
        help="with INVENTORY: group, host name or glob (repeatable; commas split)",
    )
    check.add_argument(
        "--hosts",
        help="instead of INVENTORY: testinfra host specs, comma-separated "
        "(paramiko://user@host?sudo=true, local://)",
    )
    check.add_argument("--rocm-version", help="with --hosts: the ROCm release the hosts have")
    check.add_argument("--expected-gfx", help="with --hosts: the gfx target(s), e.g. gfx1100")
    check.add_argument("-v", "--verbose", action="store_true", help="one line per check")
    check.add_argument("--junitxml", metavar="PATH", help="also write a JUnit XML report (CI)")
    check.set_defaults(run=run)


def pytest_args(args: Any) -> list[str]:
    """The pytest command line for these options (the checks' plugin options)."""
    argv = ["--pyargs", "rocm_fleet.checks", "-p", "no:cacheprovider"]
    # Not the user's pytest configuration: an empty one, rooted where we are.
    argv += ["-c", os.devnull, "--rootdir", os.getcwd()]
    argv += ["-v"] if args.verbose else ["-q"]
    if args.inventory:
        argv += ["--rocm-inventory", args.inventory]
        argv += [f"--rocm-limit={limit}" for limit in args.limit]
    if args.hosts:
        argv += ["--hosts", args.hosts]
    if args.rocm_version:
        argv += ["--rocm-version", args.rocm_version]
    if args.expected_gfx:
        argv += ["--expected-gfx", args.expected_gfx]
    if args.junitxml:
        argv += ["--junitxml", args.junitxml]
    return argv


def run(args: Any) -> int:
    import sys

    import pytest

    def refuse(message: str) -> int:
        print(f"rocm-fleet check: {message}", file=sys.stderr)
        return USAGE_ERROR

    if args.inventory and args.hosts:
        return refuse("give an INVENTORY or --hosts, not both")
    if args.inventory and (args.rocm_version or args.expected_gfx):
        return refuse(
            "with an INVENTORY each host's rocm_version and expected_gfx come from its "
            "inventory data; --rocm-version and --expected-gfx go with --hosts"
        )
    if args.limit and not args.inventory:
        return refuse("--limit chooses hosts of an INVENTORY; give one")
    if not args.inventory and not args.hosts:
        return refuse("nothing to check: give an INVENTORY, or --hosts with --rocm-version")
    if args.hosts and not args.rocm_version:
        return refuse(
            "nothing to compare --hosts against: say what they should have with "
            "--rocm-version X.Y.Z (and --expected-gfx gfxNNNN), or check an INVENTORY"
        )
    return int(pytest.main(pytest_args(args)))
