"""``rocm-fleet monitoring DIRECTORY``: write the audit's Prometheus alert rules, their
promtool tests and the Grafana dashboard, as the wheel ships them (``files/monitoring/``).

A file already there with other content (your edits) is left alone and named, unless
``--force``; one with the same content is unchanged. Each file is written whole or not at
all, never through a link.

Exit status: 0 every file written or already the same; 1 a file left alone (named)."""

from pathlib import Path
from typing import Any

import click

from rocm_fleet import assets
from rocm_fleet.atomic import write_atomically
from rocm_fleet.cli.exits import Command, Exit, UsageError, described, epilog, option

#: the files, as named in the wheel and written
FILES = ("rocm-fleet-alerts.yml", "rocm-fleet-alerts.test.yml", "grafana-dashboard.json")


def run(args: Any) -> int:
    directory: Path = args.directory
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory (make it first)")
    status = Exit.OK
    for name in FILES:
        content = assets.text(f"monitoring/{name}")
        path = directory / name
        try:
            current = path.read_text() if path.is_file() and not path.is_symlink() else None
        except OSError as exc:
            raise UsageError(f"{path}: {exc.strerror}") from None
        if current == content:
            print(f"{path}: unchanged")
        elif path.exists() and not args.force:
            print(f"{path}: differs from rocm-fleet's, left alone (--force replaces it)")
            status = Exit.FINDINGS
        else:
            write_atomically(path, content)
            print(f"{path}: written")
    return status


command = Command(
    "monitoring",
    run,
    help=described(__doc__),
    epilog=epilog("Here: 0 every file written or the same; 1 a file left alone."),
    params=[
        click.Argument(["directory"], type=click.Path(path_type=Path)),
        option("--force", is_flag=True, help="replace files that differ from rocm-fleet's"),
    ],
)
