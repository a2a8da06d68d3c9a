"""``rocm-fleet check INVENTORY | --hosts SPECS --rocm-version X.Y.Z``: the packaged testinfra
checks run by pytest (without the user's configuration), settings validated first."""

import dataclasses
import os
import sys
from typing import Any

import click

from rocm_fleet.cli.exits import Command, Exit, epilog, option, print_problems, problem_lines
from rocm_fleet.cli.inventory import UsageError, host_options, load_inventory, parse_data
from rocm_fleet.cli.tables import COLOR_CHOICES, screen_for

#: pytest.ExitCode -> the scheme's
PYTEST_EXITS = {2: Exit.NOT_CHECKED, 3: Exit.NOT_CHECKED, 4: Exit.USAGE, 5: Exit.USAGE}


@dataclasses.dataclass(eq=False)  # a pytest plugin: hashed by identity
class Chosen:
    """What a run checks (validated; the plugin finds it): pyinfra ``hosts``, or ``specs``
    (``--hosts``) expected to have ``expected``."""

    hosts: list[Any] = dataclasses.field(default_factory=list)
    specs: list[str] = dataclasses.field(default_factory=list)
    expected: Any = None


def pytest_args(args: Any) -> list[str]:
    """The pytest command line: the installed checks, no user configuration or cache; then what
    came after ``--``."""
    argv = ["--pyargs", "rocm_fleet.checks", "-p", "no:cacheprovider"]
    # Not the user's pytest configuration: an empty one, rooted where we are.
    argv += ["-c", os.devnull, "--rootdir", os.getcwd(), "--tb=no"]
    # rocm_fleet is imported already: pytest can't rewrite its asserts, and would say so.
    argv += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    if args.junitxml:
        argv += [f"--junitxml={args.junitxml}"]
    return argv + list(getattr(args, "passed_on", []))


def refuse_combinations(args: Any) -> None:
    inventory = args.inventory
    for refused, message in (
        (inventory and args.hosts, "give an INVENTORY or --hosts, not both"),
        (inventory and (args.rocm_version or args.expected_gfx),
         "with an INVENTORY each host's rocm_version and expected_gfx come from its inventory "
         "data; --rocm-version and --expected-gfx go with --hosts"),
        (args.limit and not inventory, "--limit chooses hosts of an INVENTORY; give one"),
        (args.data and not inventory, "--data overrides an INVENTORY's data; give one"),
        (not inventory and not args.hosts,
         "nothing to check: give an INVENTORY, or --hosts with --rocm-version"),
        (args.hosts and not args.rocm_version,
         "nothing to compare --hosts against: say what they should have with --rocm-version "
         "X.Y.Z (and --expected-gfx gfxNNNN), or check an INVENTORY"),
    ):  # fmt: skip
        if refused:
            raise UsageError(message)


def choose(args: Any) -> tuple[Chosen, list[str]]:
    """The hosts and what each should have, validated; the settings errors, one line each."""
    from rocm_fleet.model.config import ConfigError, load_config

    if args.hosts:
        gfx = {"expected_gfx": args.expected_gfx} if args.expected_gfx else {}
        try:
            expected = load_config({"rocm_version": args.rocm_version, **gfx}, "--rocm-version")
        except ConfigError as exc:
            return Chosen(), problem_lines(str(exc))
        specs = [spec.strip() for spec in args.hosts.split(",") if spec.strip()]
        return Chosen(specs=specs, expected=expected), []
    from rocm_fleet.engine.inventory_fleet import fleet_of

    data = parse_data(args.data) or None
    _, hosts = load_inventory(
        args.inventory, args.limit, check_for_changes=False, override_data=data
    )
    fleet = fleet_of(hosts[0].inventory)
    invalid = fleet.invalid(host.name for host in hosts)
    return Chosen(hosts=hosts), [line for exc in invalid for line in problem_lines(str(exc))]


def run(args: Any) -> int:
    import pytest

    from rocm_fleet.checks.report import Report

    refuse_combinations(args)
    chosen, errors = choose(args)
    print_problems("rocm-fleet check", errors)
    if errors:
        return Exit.USAGE
    report = Report(sys.stdout, details=args.verbose, screen=screen_for(sys.stdout, args.color))
    status = pytest.main(pytest_args(args), plugins=[chosen, report])
    if status == pytest.ExitCode.NO_TESTS_COLLECTED:
        print("rocm-fleet check: no check chosen (see -k)", file=sys.stderr)
    return PYTEST_EXITS.get(int(status)) or report.status()


command = Command(
    "check",
    run,
    gevent=True,
    usage="[INVENTORY | --hosts SPECS --rocm-version X.Y.Z] [options] [-- PYTEST_OPTIONS]",
    help="Check nodes from outside: rocminfo reports the expected GPUs, torch is the ROCm "
    "build and sees them, the apt source, pin and packages are the release's, the users can "
    "reach the GPU. What each host should have comes from its inventory data (group_data "
    "included), validated by the deploy's own model before any check runs; SSH hosts are "
    "connected by pyinfra, their host keys checked as a deploy checks them. One line per host "
    "and check, named by a sentence and wrapped to the terminal's width, then a summary. "
    "Options after -- go to pytest (-- -k torch --tb=short).",
    epilog=epilog(
        "Here: 0 every check passed; 1 a check failed; 2 a host was unreachable or its "
        "host key refused, and no check failed; 4 a bad option, inventory or setting. "
        "Same checks: pytest --pyargs rocm_fleet.checks --rocm-inventory=FILE"
    ),
    params=[
        click.Argument(["inventory"], required=False,
                       help="pyinfra inventory the hosts and their data come from"),
        *host_options("with INVENTORY: "),
        option("--hosts", help="instead of INVENTORY: host specs, comma-separated "
               "(ssh://user@host:port, local://, docker://NAME, chroot:///DIR; ?sudo=true)"),
        option("--rocm-version", help="with --hosts: the ROCm release the hosts have"),
        option("--expected-gfx", help="with --hosts: the gfx target(s), e.g. gfx1100"),
        option("-v", "--verbose", is_flag=True, help="pytest's explanation under a failed check"),
        option("--color", type=click.Choice(COLOR_CHOICES), default="auto",
               help="colour each check's outcome; auto (default): on a terminal unless NO_COLOR "
               "is set (FORCE_COLOR forces it); lines fit the terminal (COLUMNS), else 100 "
               "columns"),
        option("--junitxml", metavar="PATH", help="also write a JUnit XML report (CI)"),
    ],
)  # fmt: skip
