"""``rocm-fleet matrix``, ``matrix check`` and ``matrix update`` (exit statuses: each epilog)."""

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click

from rocm_fleet.cli.exits import Command, epilog, invoke, option
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.cli.tables import grid, screen_for, whole
from rocm_fleet.matrix import site as matrix_site
from rocm_fleet.matrix import tables
from rocm_fleet.matrix.inputs import MatrixDataError
from rocm_fleet.matrix.release_table import (
    matrix_json,
    plain_table,
    release_table,
    sources_markdown,
    sources_text,
)
from rocm_fleet.model import matrix, site_data, streams, torch_builds, upstream_data
from rocm_fleet.upstream.matrix_check import UpstreamClient, check_matrix


def render_report(report: dict[str, Any]) -> str:
    """What is not as the matrix says, one line each, then the summary."""
    checks = report["checks"]
    table = grid(["", "", ""], gap=1)
    table.columns[0].min_width, table.columns[1].min_width = 11, 22
    for check in checks:
        if check["status"] != "ok":
            why = f"{check['what']}: {check['detail']}  <{check['url']}>"
            table.add_row(check["status"].upper(), check["row"], why)
    for item in report["missing_releases"]:
        table.add_row("MISSING", item["release"], f"upstream publishes it: {item['where']}")
    for error in report["unreachable"]:
        table.add_row("UNREACHABLE", "releases upstream", error)
    out = [whole(table)] if table.row_count else []
    counts = {s: sum(c["status"] == s for c in checks) for s in ("ok", "wrong", "unreachable")}
    checked = f"{len(checks)} checks" if len(checks) != 1 else "1 check"
    if checks and counts["unreachable"] == len(checks):
        summary = f"checked nothing: upstream unreachable for all {checked}"
    else:
        summary = (
            f"{checked}: {counts['ok']} ok, {counts['wrong']} wrong, "
            f"{counts['unreachable']} unreachable (not checked)"
        )
    if report["unreachable"]:
        summary += "; releases upstream publishes: not checked (unreachable)"
    elif report.get("releases_checked", True):
        missing = len(report["missing_releases"])
        summary += f"; {missing} release{'s' if missing != 1 else ''} upstream publishes that "
        summary += "the matrix lacks"
    out.append(summary)
    return "\n".join(out)


def _url(value: str | None, option: str) -> str | None:
    if value is not None and not re.match(r"^https?://[^/\s]+", value):
        raise UsageError(f"{option} {value!r}: expected an http:// or https:// URL")
    return value


def _fingerprints(values: list[str]) -> dict[str, str]:
    names = {s.name for s in streams.STREAMS}
    found = {}
    for value in values:
        stream, _, fingerprint = value.rpartition("=")
        stream = stream or "*"
        if stream not in names | {"*"} or not re.fullmatch(r"[0-9A-Fa-f]{40}", fingerprint):
            raise UsageError(
                f"--key-fingerprint {value!r}: expected [STREAM=]FINGERPRINT, STREAM one of "
                f"{', '.join(sorted(names))}, FINGERPRINT 40 hexadecimal digits"
            )
        found[stream] = fingerprint.upper()
    return found


def show(args: Any) -> int:
    """``rocm-fleet matrix``: the table, ``--json`` or ``--sources``."""
    if click.get_current_context().invoked_subcommand:
        return 0
    path = site_data.where_set(args.site_data)
    try:
        site = site_data.load(path) if path else None
    except site_data.SiteDataError as err:
        given = "--site-data" if args.site_data else f"environment {site_data.ENVIRONMENT}"
        raise UsageError(f"{given}: {err}") from None
    if args.json:
        print(json.dumps(matrix_json(site), indent=2))
    else:
        width = screen_for(sys.stdout).width
        print(sources_text() if args.sources else plain_table(site, width))
    return 0


def check(args: Any) -> int:
    """``rocm-fleet matrix check``: every row (or ``--release``'s) asked of upstream."""
    if args.release is not None and args.release not in matrix.release_versions():
        raise UsageError(
            f"--release {args.release}: not a release the matrix knows "
            f"({', '.join(matrix.release_versions())})"
        )
    fingerprints = _fingerprints(args.key_fingerprint)
    upstream = UpstreamClient(
        _url(args.apt_base, "--apt-base"), _url(args.torch_base, "--torch-base"),
        args.timeout, args.retries,
    )  # fmt: skip
    report = check_matrix(upstream, args.release, fingerprints)
    print(json.dumps(report, indent=2) if args.json else render_report(report))
    return report["exit_status"]


def update(args: Any) -> int:
    """``matrix update``: a site's data (``--output``) or rocm-fleet's tables."""
    if args.output is not None:
        if args.records or args.overrides or args.data_dir or args.check:
            raise UsageError(
                "--output FILE writes a site's data from upstream: without --records, "
                "--overrides, --data-dir or --check (those update rocm-fleet's own tables)"
            )
        return matrix_site.run(args, _fingerprints(args.key_fingerprint))
    if not (args.records and args.overrides):
        raise UsageError(
            "matrix update: --output FILE (a site's data, from upstream), or --records DIR "
            "--overrides TOML (rocm-fleet's own tables, from stored records)"
        )
    if not args.data_dir and not args.check:  # --records: matrix.tables.update
        raise UsageError(
            "--data-dir: name the directory to write the data files into (without it, only "
            f"--check compares with the ones this rocm-fleet reads, {upstream_data.DATA_DIR})"
        )
    data_dir = Path(args.data_dir) if args.data_dir else upstream_data.DATA_DIR
    try:
        lines, status = tables.update(
            Path(args.records), Path(args.overrides), data_dir, check=args.check
        )
    except MatrixDataError as err:
        raise UsageError(str(err)) from err
    print("\n".join(lines))
    return status


def _fingerprint_option(help: str) -> click.Option:
    return option("--key-fingerprint", multiple=True, metavar="[STREAM=]FINGERPRINT", help=help)


command = click.Group(
    "matrix",
    invoke_without_command=True,
    callback=lambda **kw: invoke(click.get_current_context(), show, SimpleNamespace(**kw)),
    help="Print the releases rocm-fleet can deploy, one row each: the stream, AMD's "
    "repository, the PyTorch index and torch builds, the amdgpu driver for rocm_driver: "
    "dkms, and AMD's support per distro (--json: everything the matrix knows, with the "
    "source of each row). `rocm-fleet matrix check` asks AMD and PyTorch whether every "
    "row still holds.",
    epilog=epilog("Here: 0 the matrix printed."),
    params=[
        option("--json", is_flag=True, help="print the matrix as JSON"),
        option("--sources", is_flag=True, help="print the GPU targets, distros, kernels, torch "
               "builds and repositories, each row with its source"),
        option("--site-data", metavar="FILE", help="a site's matrix data (what rocm_matrix_data "
               "names): its releases are shown after the committed ones, marked as the site's "
               f"(default: {site_data.ENVIRONMENT})"),
    ],
    commands=[
        Command(
            "check", check, short_help="check every row against upstream (or a mirror)",
            help="Ask upstream (or a mirror) about every row of the matrix: each suite's "
            "signed InRelease exists with the Origin the pin names, the Core SDK's packages and "
            "the amdgpu driver folders exist, each key URL serves the pinned fingerprint, each "
            "PyTorch index lists the pinned wheels; and list releases upstream publishes that "
            "the matrix lacks.",
            epilog=epilog(
                "Here: 0 every row holds; 1 a row is wrong or a release is missing (each "
                "named); 2 upstream did not answer for a row (not checked) and nothing was "
                "found wrong"
            ),
            params=[
                option("--release", help="check only this release's row"),
                option("--apt-base", help="mirror of AMD's hosts, one directory per host "
                       "(URL/repo.radeon.com/rocm/apt/...)"),
                option("--torch-base", help=f"mirror of {torch_builds.PYTORCH_INDEX_BASE_URL} "
                       "(URL/rocm7.2/torch/...)"),
                _fingerprint_option(
                    "the key a mirror signs with instead of AMD's, for one stream "
                    f"({', '.join(s.name for s in streams.STREAMS)}) or all (repeatable)"
                ),
                option("--timeout", type=float, default=20.0,
                       help="seconds per request (default 20)"),
                option("--retries", type=int, default=3, help="retries per request (default 3)"),
                option("--json", is_flag=True, help="print the report as JSON"),
            ],
        ),
        Command(
            "update", update,
            short_help="--output FILE: a site's data, releases published after this "
            "rocm-fleet; --records: rocm-fleet's own tables from stored upstream records",
            help="With --output FILE: write a site's own matrix data, the releases upstream "
            "publishes that this rocm-fleet's matrix lacks, with their torch, each checked as "
            "`matrix check` checks a committed row before the file is written (point the "
            "deploy at it with rocm_matrix_data or ROCM_FLEET_MATRIX_DATA; it only adds "
            "releases). With --records and --overrides (maintainers): build the matrix's GPU "
            "targets, distros, kernels and torch builds from stored copies of AMD's and "
            "PyTorch's files (a checkout's tests/fixtures/upstream/) and the cited overrides "
            "(tools/matrix_overrides.toml), each row with its source; print, row by row, how "
            "the data files differ and what the records have that they lack; write them "
            "unless --check. What tools/matrix_update.py tables runs.",
            epilog=epilog(
                "Here, --output: 0 written; 1 a row does not hold upstream (nothing written); "
                "2 upstream could not be reached. --records: 0 written, or (--check) nothing "
                "differs; 1 (--check) a row differs or a record has what the data lacks"
            ),
            params=[
                *matrix_site.OPTIONS,
                _fingerprint_option(
                    "--output: the key a mirror signs with instead of AMD's, as for `matrix check`"
                ),
                option("--records", help="the stored upstream records' directory"),
                option("--overrides", help="the cited overrides (TOML)"),
                option("--data-dir", help="the data files' directory, to write (or compare "
                       "with); without it --check compares with the ones this rocm-fleet reads"),
                option("--check", is_flag=True, help="compare, don't write"),
            ],
        ),
    ],
)  # fmt: skip

# docs/supported-releases.md's tables: python -m rocm_fleet.matrix.command
if __name__ == "__main__":
    print(sources_markdown() if sys.argv[1:] == ["sources"] else release_table())
