"""``rocm-fleet``: the click group of the tools beside the deploy (``COMMANDS``, lazy)."""

import importlib
import sys
from collections.abc import Sequence

import click
from click.shell_completion import CompletionItem

from rocm_fleet.cli.exits import EPILOG, Exit
from rocm_fleet.engine.collector import paused
from rocm_fleet.version import __version__

#: each subcommand: its module, the extra it needs (None: the core's), its --help line
COMMANDS = {
    "audit": ("rocm_fleet.audit.command", "audit",
              "read-only drift report: inventory vs hosts, one row per host"),
    "monitoring": ("rocm_fleet.audit.monitoring", None,
                   "write the audit's Prometheus alert rules, their tests and a Grafana dashboard"),
    "check": ("rocm_fleet.checks.command", "check",
              "run the node checks (testinfra) against an inventory's hosts or --hosts"),
    "roll": ("rocm_fleet.roll.command", "roll",
             "rolling maintenance: drain, change, check and resume the drifted hosts in waves"),
    "matrix": ("rocm_fleet.matrix.command", "matrix",
               "the compatibility matrix; `matrix check` compares it with upstream"),
    "bundle": ("rocm_fleet.bundle.command", "bundle",
               "fetch and verify what the inventory installs from AMD and PyTorch, for a mirror"),
    "mirror-ca": ("rocm_fleet.bundle.mirror_ca", "bundle",
                  "make a CA and the fleet mirror's TLS certificate and key"),
    "publish": ("rocm_fleet.pull.publish", "pull",
                "sign and publish pull nodes' settings in the fleet's TUF repository"),
    "pull-fetch": ("rocm_fleet.pull.fetch", "pull",
                   "(run by the pull service) fetch and verify this node's signed settings"),
    "settings": ("rocm_fleet.cli.settings", None,
                 "every inventory key rocm-fleet reads, its default and meaning"),
}  # fmt: skip
#: the third-party packages the extras bring: a command that misses one names its extra
OPTIONAL = {"tuf", "securesystemslib", "pytest", "testinfra", "rich", "prometheus_client", "yaml"}
#: the top-level --help: the tools below are beside the deploy, which pyinfra itself runs
DESCRIPTION = (
    "The tools beside rocm-fleet's deploy. Deploying is pyinfra's own command: "
    "`pyinfra INVENTORY rocm_fleet.deploy.rocm_node` (in a checkout: `pyinfra INVENTORY "
    "deploy.py`), with --dry to see what would change. These commands check, audit and "
    "prepare what it deploys; each one's --help says more."
)


class LazyGroup(click.Group):
    """The subcommands of ``COMMANDS``, each imported when asked for (help lists the table)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        with paused():  # what the import makes lives as long as the process
            return importlib.import_module(COMMANDS[name][0]).command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, about) for name, (_, _, about) in COMMANDS.items()])

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        found = [
            CompletionItem(n, help=c[2]) for n, c in COMMANDS.items() if n.startswith(incomplete)
        ]
        return found + click.Command.shell_complete(self, ctx, incomplete)


@click.group("rocm-fleet", cls=LazyGroup, help=DESCRIPTION, epilog=EPILOG, no_args_is_help=False,
             context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
@click.version_option(__version__, prog_name="rocm-fleet", message="%(prog)s %(version)s")
@click.pass_context
def shell(ctx: click.Context) -> None:
    if ctx.obj and ctx.invoked_subcommand != "check":  # check passes them to pytest
        raise click.UsageError(f"{ctx.invoked_subcommand} takes no options after --")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``rocm-fleet`` with ``argv`` (default: the process's) and give its exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # After `--`: options for the tool underneath (pytest's, for `check`), never ours.
    passed_on = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    try:
        return int(shell.main(argv, "rocm-fleet", standalone_mode=False, obj=passed_on) or 0)
    except click.UsageError as exc:  # click's status is 2 ("could not check" here): 4
        # in argparse's form, as scripts and the tests read it: the usage, then "PROG: error: ..."
        where = exc.ctx.command_path if exc.ctx else "rocm-fleet"
        usage = exc.ctx.get_usage().removeprefix("Usage: ") if exc.ctx else where
        print(f"usage: {usage}\n{where}: error: {exc.format_message()}", file=sys.stderr)
        return Exit.USAGE
    except click.Abort:
        raise KeyboardInterrupt from None
    except ModuleNotFoundError as exc:
        command = next((word for word in argv if not word.startswith("-")), "")
        extra = COMMANDS.get(command, (None, None))[1]
        if extra is None or (exc.name or "").split(".")[0] not in OPTIONAL:
            raise
        print(f"rocm-fleet {command} needs the '{extra}' extra: "
              f"pip install 'rocm-fleet[{extra}]'", file=sys.stderr)  # fmt: skip
        return Exit.USAGE


if __name__ == "__main__":
    sys.exit(main())
