"""``rocm-fleet matrix update --output FILE``: a site's own matrix data, written only once every
row holds, keeping FILE's other rows. Exit 0 written, 1 a row doesn't hold, 2 unreachable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rocm_fleet.cli.exits import option
from rocm_fleet.cli.inventory import UsageError

OPTIONS = [
    option("--output", type=click.Path(path_type=Path), metavar="FILE",
           help="write a site's data file (rocm_matrix_data names it)"),
    option("--release", multiple=True, metavar="X.Y.Z",
           help="--output: only this release (repeatable)"),
    option("--timeout", type=float, default=20.0, help="--output: seconds per request"),
    option("--retries", type=int, default=3, help="--output: retries per request"),
]  # fmt: skip


def run(args: Any, fingerprints: dict[str, str]) -> int:
    import hashlib
    import sys

    from rocm_fleet.atomic import write_atomically
    from rocm_fleet.matrix.site_update import new_rows
    from rocm_fleet.model import site_data
    from rocm_fleet.upstream.client import Unreachable, UpstreamClient
    from rocm_fleet.upstream.site_check import failures, release_checks

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
