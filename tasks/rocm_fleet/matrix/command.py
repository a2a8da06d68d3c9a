"""``rocm-fleet matrix``, ``matrix check`` and ``matrix update`` (exit statuses: each epilog);
``update --output FILE`` writes a site's matrix data once every row holds, keeping FILE's rows."""

import hashlib
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
from packaging.version import Version

from rocm_fleet.atomic import write_atomically
from rocm_fleet.cli.exits import Command, epilog, invoke, option
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.cli.tables import grid, screen_for, whole
from rocm_fleet.matrix import tables
from rocm_fleet.matrix.inputs import MatrixDataError
from rocm_fleet.matrix.release_table import (
    matrix_json,
    plain_table,
    release_table,
    sources_markdown,
    sources_text,
)
from rocm_fleet.model import gpu_targets, matrix, site_data, streams, torch_builds, upstream_data
from rocm_fleet.model.versions import major_minor
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.matrix_check import (
    check_matrix,
    failures,
    listed_versions,
    missing_releases,
    release_checks,
)

SITE_OPTIONS = [
    option("--output", type=click.Path(path_type=Path), metavar="FILE",
           help="write a site's data file (rocm_matrix_data names it)"),
    option("--release", multiple=True, metavar="X.Y.Z",
           help="--output: only this release (repeatable)"),
    option("--timeout", type=float, default=20.0, help="--output: seconds per request"),
    option("--retries", type=int, default=3, help="--output: retries per request"),
]  # fmt: skip


def write_site_data(args: Any, fingerprints: dict[str, str]) -> int:
    """``matrix update --output FILE``: exit 0 written, 1 a row doesn't hold, 2 unreachable."""
    from rocm_fleet.upstream.http import Unreachable

    output: Path = args.output
    kept = []
    if output.exists():
        try:
            kept = list(site_data.load(output).added)
        except site_data.SiteDataError as exc:
            raise UsageError(f"--output: {exc}") from None
    upstream = UpstreamClient(None, None, args.timeout, args.retries)
    try:
        found, notes = new_rows(upstream, fingerprints, list(args.release) or None)
    except Unreachable as exc:
        print(f"matrix update: upstream unreachable: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"matrix update: note: {note}", file=sys.stderr)
    new = {rel.version for rel, _ in found}
    rows = [(rel, None) for rel in kept if rel.version not in new] + list(found)
    checks = release_checks([rel for rel, _ in rows], upstream, fingerprints)
    bad = failures(checks)
    if bad:
        print(f"matrix update: {output} not written: upstream does not publish what these "
              "rows say:\n  " + "\n  ".join(bad), file=sys.stderr)  # fmt: skip
        unreachable = all(c.status in ("ok", "unreachable") for c in checks)
        return 2 if unreachable else 1
    text = site_data.render(rows)
    site_data.parse(text.encode(), output)  # what is written reads back (else a bug here)
    write_atomically(output, text)
    for rel, where in rows:
        torch = ", ".join(b.torch for b in rel.torch_builds) or "none"
        origin = f"found at {where}" if where else "kept from the file"
        print(f"{rel.version}: {rel.stream.name}, {rel.repository.name}, torch {torch} "
              f"({origin}; {sum(c.row == rel.version for c in checks)} checks hold)")  # fmt: skip
    digest = hashlib.sha256(text.encode()).hexdigest()
    what = f"{len(rows)} release{'s' if len(rows) != 1 else ''}"
    print(f"wrote {output} ({what} the committed matrix lacks; sha256 {digest})")
    return 0


# The rows of a site's matrix data: releases upstream publishes that the committed matrix
# lacks, read over verified TLS, no amdgpu driver (docs/decisions/site-matrix-data.md).
def _labelled(upstream: UpstreamClient, url: str, project: str, label: str) -> list[str]:
    """The public versions of ``project`` on the index at ``url`` with local label ``label``."""
    versions = [Version(v) for v in listed_versions(upstream, url, project) or ()]
    return sorted((v.public for v in versions if v.local == label), key=Version)


def amd_wheels(upstream: UpstreamClient, release: str) -> torch_builds.AmdWheels | None:
    """What AMD's stable index holds for ``release`` (torchvision paired as ``0.(minor+15)``,
    torchaudio only when one is listed); None when it lists no torch for it."""
    url = torch_builds.AMD_STABLE_WHEEL_INDEX
    label = f"rocm{release}"
    torches = _labelled(upstream, url, "torch", label)
    if not torches:
        return None
    visions = _labelled(upstream, url, "torchvision", label)
    audios = _labelled(upstream, url, "torchaudio", label)
    builds = []
    for torch in torches:
        minor = Version(torch).minor
        paired = [v for v in visions if Version(v).major == 0 and Version(v).minor == minor + 15]
        if not paired:
            continue  # no torchvision: not a build AMD's page offers
        audio = audios[0] if len(audios) == 1 else None
        builds.append(torch_builds.TorchBuild(torch, paired[-1], audio))
    if not builds:
        return None
    targets, limits = [], []
    for target in gpu_targets.GPU_TARGETS:
        offered = set(_labelled(upstream, url, f"amd-torch-device-{target.gfx}", label))
        mine = [b.torch for b in builds if b.torch in offered]
        if not mine:
            continue
        targets.append(target.gfx)
        if len(mine) < len(builds):
            limits.append((target.gfx, tuple(mine)))
    if not targets:
        return None
    return torch_builds.AmdWheels(url, release, tuple(builds), tuple(targets), tuple(limits))


def new_rows(upstream: UpstreamClient, fingerprints: dict[str, str],
             only: list[str] | None = None) -> tuple[list[tuple[matrix.Release, str]],
             list[str]]:  # fmt: skip
    """(the rows upstream has that the matrix lacks, each with where found; notes), ``only``'s."""
    rows: list[tuple[matrix.Release, str]] = []
    notes: list[str] = []
    for found in missing_releases(upstream, fingerprints):
        version, where = found.release, found.where
        if only is not None and version not in only:
            continue
        kinds = [(streams.CORE_SDK, streams.MULTI_ARCH_REPOSITORY),
                 (streams.CORE_SDK, streams.STABLE_REPOSITORY),
                 (streams.CLASSIC, streams.CLASSIC_REPOSITORY)]  # fmt: skip
        kind = next((k for k in kinds if where.startswith(k[1].base_url + "/")), None)
        if kind is None:
            notes.append(f"{version}: found at {where}, in no repository the matrix knows")
            continue
        stream, repository = kind
        torch_index, amd = None, None
        if stream is streams.CLASSIC:
            index = f"rocm{major_minor(version)}"
            torch_index = index if index in torch_builds.TORCH_INDEXES else None
        else:
            amd = amd_wheels(upstream, version)
        no_torch = None if torch_index or amd else "upstream lists no torch built for it"
        rel = matrix.Release(version, stream, repository, torch_index, None, no_torch, amd)
        rows.append((rel, where))
    return rows, notes


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
        return write_site_data(args, _fingerprints(args.key_fingerprint))
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
                *SITE_OPTIONS,
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
