"""``rocm-fleet matrix [--json]``, ``matrix check`` and ``matrix update``: the compatibility
matrix printed (``release_table()`` is docs/supported-releases.md's table), checked against
upstream or a mirror (``upstream.matrix_check``), and updated.

Exit status of ``check``: 0 every row holds, 1 a row is wrong or upstream has releases the
matrix lacks, 2 upstream could not be reached.
"""

from __future__ import annotations

import json
import re
import sys
import textwrap
from dataclasses import asdict
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import click

from rocm_fleet.cli.exits import Command, epilog, invoke, option
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.cli.tables import FALLBACK_WIDTH, folded, screen_for
from rocm_fleet.matrix import site as matrix_site
from rocm_fleet.matrix.inputs import FROM_PYTORCH_NONE
from rocm_fleet.matrix.sources import sections, sources_markdown, sources_text
from rocm_fleet.model import matrix, site_data, upstream_data
from rocm_fleet.model.site_data import SiteData
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.matrix_check import check_matrix

# --- the table ------------------------------------------------------------------------------

SUPPORT_TEXT = {
    matrix.Support.OFFICIAL: "official",
    matrix.Support.INSTINCT_ONLY: "Instinct only",
    matrix.Support.UNLISTED: "unlisted",
    matrix.Support.REJECTED: "apt rejects (SHA-1 key)",
    None: "—",
}


def repository_text(rel: matrix.Release) -> str:
    repo = rel.repository
    if repo is matrix.CLASSIC_REPOSITORY:
        return f"{urlsplit(repo.base_url).path.strip('/')}/{rel.apt_path}"
    return urlsplit(repo.base_url).netloc


def torch_text(rel: matrix.Release) -> str:
    if not rel.torch_builds:
        return "— (`pytorch_install: false`)"
    return ", ".join(build.torch for build in rel.torch_builds)


# The releases the lab's end-to-end tests deploy (tests/unit/test_docs.py keeps it in step).
LAB_TESTED = ("6.4.3", "7.2.1", "7.14.1", "10.0.0")


def _data_row(rel: matrix.Release) -> dict[str, Any] | None:
    """The release's row of the generated upstream data; None for a site file's release."""
    return next((r for r in upstream_data.RELEASES if r["version"] == rel.version), None)


def _origin(origin: str) -> str:
    """An origin a row's "from" names, as the tables print it (upstream_data.ORIGINS; an
    origin the data doesn't name prints as itself: never a lookup that can fail)."""
    return upstream_data.ORIGINS.get(origin, origin)


def source_text(rel: matrix.Release, site: SiteData | None = None) -> str:
    """Where a release row comes from, e.g. "AMD's table; torch: PyTorch's matrix"; a site
    file's row: "site matrix data FILE (sha256 ...)"."""
    row = _data_row(rel)
    if row is None:
        return f"site matrix data {site.path}" if site is not None else "site matrix data"
    origins = row["from"]
    parts = [_origin(origins["row"])]
    if "distros" in origins:
        parts.append(f"distros: {_origin(origins['distros'])}")
    if rel.amd_wheels:
        # recorded from AMD's install pages (matrix.AMD_WHEELS)
        parts.append("torch: AMD's install page")
    else:
        parts.append(f"torch: {_origin(origins.get('torch_index', FROM_PYTORCH_NONE))}")
    return "; ".join(parts)


def index_text(rel: matrix.Release) -> str:
    if rel.torch_index:
        return f"`{rel.torch_index}`"
    if rel.amd_wheels:
        return f"AMD `{urlsplit(rel.amd_wheels.url).path.strip('/').split('/')[-1]}`"
    return "none"


def table_rows() -> tuple[list[str], list[list[str]]]:
    """(headers, one row per release) of the matrix table."""
    headers = ["ROCm", "Stream", "Repository", "PyTorch index", "torch (default = newest)"]
    headers += ["amdgpu for `dkms`"] + [f"{d.id.capitalize()} {d.version}" for d in matrix.DISTROS]
    headers += ["Source", "Tested"]
    rows = []
    for rel in matrix.RELEASES:
        rows.append(
            [
                rel.version,
                rel.stream.name,
                f"`{repository_text(rel)}`",
                index_text(rel),
                torch_text(rel),
                matrix.amdgpu_repo_version(rel) or "unknown (refused)",
                *(SUPPORT_TEXT[rel.support(row)] for row in matrix.DISTROS),
                source_text(rel),
                "lab only" if rel.version in LAB_TESTED else "—",
            ]
        )
    return headers, rows


def release_table() -> str:
    """The release table of docs/supported-releases.md, in Markdown."""
    headers, rows = table_rows()
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# The terminal's table fits 100 columns: short forms, with a legend under it.
SUPPORT_SHORT = {
    matrix.Support.OFFICIAL: "yes",
    matrix.Support.INSTINCT_ONLY: "MI",
    matrix.Support.UNLISTED: "?",
    matrix.Support.REJECTED: "no",
    None: "-",
}


def _distro_short(row: matrix.Distro) -> str:
    return f"{row.id[0].upper()}{row.version.split('.')[0]}"  # ubuntu 24.04 -> U24


def _releases(site: SiteData | None) -> list[matrix.Release]:
    """The committed releases, then a site file's (``site``)."""
    return [*matrix.RELEASES, *(site.added if site is not None else ())]


def gpu_targets(rel: matrix.Release) -> list[str]:
    """The GPU targets AMD lists for ``rel``, in the matrix's order (``expected_gfx`` values)."""
    return [target.gfx for target in matrix.GPU_TARGETS if rel.lists_gpu(target.gfx)]


def plain_table(site: SiteData | None = None, width: int = FALLBACK_WIDTH) -> str:
    """The matrix for a terminal ``width`` columns wide, with its legend: the columns that
    don't fit folded into tables below, each led by the release, the GPU targets wrapped; a
    site file's rows last, their footnote naming the file."""
    headers = ["ROCm", "Stream", "Repository", "Index", "torch", "dkms"]
    # the footnote naming the row's source (no header), then the GPU targets (wrapped)
    headers += [*(_distro_short(d) for d in matrix.DISTROS), "", "GPU targets"]
    rows: list[list[str]] = []
    notes: list[str] = []  # where the rows come from, one footnote per distinct source
    for rel in _releases(site):
        source = source_text(rel, site)
        if source not in notes:
            notes.append(source)
        builds = [build.torch for build in rel.torch_builds]
        torch = f"{builds[-1]} (+{len(builds) - 1})" if len(builds) > 1 else "".join(builds)
        rows.append(
            [
                rel.version,
                rel.stream.name,
                repository_text(rel),
                rel.torch_index or ("AMD" if rel.amd_wheels else "none"),
                torch or "none",
                matrix.amdgpu_repo_version(rel) or "refused",
                *(SUPPORT_SHORT[rel.support(row)] for row in matrix.DISTROS),
                f"[{notes.index(source) + 1}]",
                " ".join(gpu_targets(rel)) or "none listed",
            ]
        )
    distros = ", ".join(
        f"{_distro_short(d)} {d.id.capitalize()} {d.version}" for d in matrix.DISTROS
    )
    legend = [
        f"{distros}:",
        "  yes listed by AMD, MI listed for Instinct only, ? packages published but not listed,",
        "  no published but refused by the distro's apt (SHA-1 key binding), - not published.",
        "torch: the newest build the deploy installs by default (+ how many older ones it knows);",
        "dkms: the amdgpu driver release for rocm_driver: dkms (refused: not known).",
        "GPU targets: the gfx targets AMD lists for the release (what expected_gfx takes).",
        "[n] where the row comes from (the citations: tools/matrix_overrides.toml):",
        *(f"  [{n}] {note}" for n, note in enumerate(notes, start=1)),
        "Everything, spelled out: rocm-fleet matrix --json, or docs/supported-releases.md;",
        "where GPU targets, distros, kernels, torch builds, repositories come from: --sources.",
    ]
    wrapped = [
        piece
        for said in legend
        for piece in textwrap.wrap(
            said,
            max(20, width),
            subsequent_indent=" " * (len(said) - len(said.lstrip()) + 2),
            break_on_hyphens=False,
            break_long_words=True,
        )
    ]
    return "\n".join([folded(headers, rows, width), "", *wrapped])


def matrix_json(site: SiteData | None = None) -> dict[str, Any]:
    """Everything the matrix says, for tools; a site file's rows after the committed ones,
    their source the file (``"from": "site"``, its path and SHA-256)."""

    def stream_json(stream: matrix.Stream) -> dict[str, Any]:
        return {
            "name": stream.name,
            "title": stream.title,
            "key_fingerprint": stream.key_fingerprint,
            "keyring": stream.keyring,
            "pin": stream.pin,
            "pin_origin": stream.pin_origin,
            "publications": [asdict(p) for p in stream.publications],
        }

    releases = []
    for rel in _releases(site):
        row = _data_row(rel)
        if row is None and site is not None:
            source = {"from": "site", "citation": site.provenance, "site": str(site.path)}
        else:
            source = {"from": row["from"], "citation": row["source"]}
        releases.append(
            {
                "version": rel.version,
                "stream": rel.stream.name,
                "repository": asdict(rel.repository),
                "distros": {
                    row.key: {
                        "support": rel.support(row).value if rel.support(row) else None,
                        "suite": pub.suite if (pub := rel.publication(row)) else None,
                        "directory": pub.directory if pub else None,
                    }
                    for row in matrix.DISTROS
                },
                "torch_index": rel.torch_index,
                "torch_builds": [asdict(b) for b in rel.torch_builds],
                "torch_runtime": rel.torch_runtime,
                "no_torch": None if rel.torch_builds else rel.no_torch_reason,
                "amd_wheels": asdict(rel.amd_wheels) if rel.amd_wheels else None,
                "amdgpu_driver": matrix.amdgpu_repo_version(rel),
                "root": rel.root,
                "rocminfo": rel.rocminfo,
                "gpu_targets": gpu_targets(rel),  # what AMD lists for it (matrix.GPU_TARGETS)
                # the row's origin (and an override's citation), and whether the lab deploys it
                "source": {**source, "text": source_text(rel, site),
                           "tested": "lab only" if rel.version in LAB_TESTED else None},
            }
        )  # fmt: skip
    return {
        "streams": [stream_json(s) for s in matrix.STREAMS],
        "distros": [asdict(d) for d in matrix.DISTROS],
        "releases": releases,
        # the other tables' rows as their data files hold them, each with "from" and "source"
        "tables": sections(),
        "pytorch_index_base_url": matrix.PYTORCH_INDEX_BASE_URL,
        "amdgpu_apt_base_url": matrix.AMDGPU_APT_BASE_URL,
        "site_data": site.provenance if site is not None else None,
    }


# --- the check's report ---------------------------------------------------------------------


def render_report(report: dict[str, Any]) -> str:
    """What is not as the matrix says, one line each, then the summary."""
    from rocm_fleet.cli.tables import grid, whole

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
    # Releases the matrix lacks: only without --release, when the listings were read.
    if report["unreachable"]:
        summary += "; releases upstream publishes: not checked (unreachable)"
    elif report.get("releases_checked", True):
        missing = len(report["missing_releases"])
        summary += f"; {missing} release{'s' if missing != 1 else ''} upstream publishes that "
        summary += "the matrix lacks"
    out.append(summary)
    return "\n".join(out)


# --- command line ---------------------------------------------------------------------------


def _url(value: str | None, option: str) -> str | None:
    if value is not None and not re.match(r"^https?://[^/\s]+", value):
        raise UsageError(f"{option} {value!r}: expected an http:// or https:// URL")
    return value


def _fingerprints(values: list[str]) -> dict[str, str]:
    streams = {s.name for s in matrix.STREAMS}
    found = {}
    for value in values:
        stream, _, fingerprint = value.rpartition("=")
        stream = stream or "*"
        if stream not in streams | {"*"} or not re.fullmatch(r"[0-9A-Fa-f]{40}", fingerprint):
            raise UsageError(
                f"--key-fingerprint {value!r}: expected [STREAM=]FINGERPRINT, STREAM one of "
                f"{', '.join(sorted(streams))}, FINGERPRINT 40 hexadecimal digits"
            )
        found[stream] = fingerprint.upper()
    return found


def run_update(args: Any) -> int:
    """``rocm-fleet matrix update``: matrix.tables.update, as the maintainer tool runs it."""
    from pathlib import Path

    from rocm_fleet.matrix import tables
    from rocm_fleet.matrix.inputs import MatrixDataError

    if not args.data_dir and not args.check:
        # the data files rocm-fleet reads are written only where the user says
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


def show(args: Any) -> int:
    """``rocm-fleet matrix``: the table, ``--json`` or ``--sources``; nothing for a subcommand."""
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
    """``rocm-fleet matrix update``: a site's data (``--output``) or rocm-fleet's tables."""
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
    return run_update(args)


def _fingerprint_option(help: str) -> click.Option:
    return option("--key-fingerprint", multiple=True, metavar="[STREAM=]FINGERPRINT", help=help)


command = click.Group(
    "matrix",
    invoke_without_command=True,
    callback=lambda **options: invoke(
        click.get_current_context(), show, SimpleNamespace(**options)
    ),
    help="Print the releases rocm-fleet can deploy, one row each: the stream, AMD's "
    "repository, the PyTorch index and torch builds, the amdgpu driver for rocm_driver: "
    "dkms, and AMD's support per distro (--json: everything the matrix knows, with the "
    "source of each row). `rocm-fleet matrix check` asks AMD and PyTorch whether every "
    "row still holds.",
    epilog=epilog("Here: 0 the matrix printed."),
    params=[
        option("--json", is_flag=True, help="print the matrix as JSON"),
        option(
            "--sources",
            is_flag=True,
            help="print the GPU targets, distros, kernels, torch builds and repositories, each "
            "row with its source",
        ),
        option(
            "--site-data",
            metavar="FILE",
            help="a site's matrix data (what rocm_matrix_data names): its releases are shown "
            f"after the committed ones, marked as the site's (default: {site_data.ENVIRONMENT})",
        ),
    ],
    commands=[
        Command(
            "check",
            check,
            short_help="check every row against upstream (or a mirror)",
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
                option(
                    "--apt-base",
                    help="mirror of AMD's hosts, one directory per host "
                    "(URL/repo.radeon.com/rocm/apt/...)",
                ),
                option(
                    "--torch-base",
                    help=f"mirror of {matrix.PYTORCH_INDEX_BASE_URL} (URL/rocm7.2/torch/...)",
                ),
                _fingerprint_option(
                    "the key a mirror signs with instead of AMD's, for one stream "
                    f"({', '.join(s.name for s in matrix.STREAMS)}) or all (repeatable)"
                ),
                option(
                    "--timeout", type=float, default=20.0, help="seconds per request (default 20)"
                ),
                option("--retries", type=int, default=3, help="retries per request (default 3)"),
                option("--json", is_flag=True, help="print the report as JSON"),
            ],
        ),
        Command(
            "update",
            update,
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
                option(
                    "--data-dir",
                    help="the data files' directory, to write (or compare with); without it "
                    "--check compares with the ones this rocm-fleet reads",
                ),
                option("--check", is_flag=True, help="compare, don't write"),
            ],
        ),
    ],
)

# docs/supported-releases.md's tables: python -m rocm_fleet.matrix.command
if __name__ == "__main__":
    print(sources_markdown() if sys.argv[1:] == ["sources"] else release_table())
