"""``rocm-fleet matrix update --output FILE``: a site's own matrix data, written only once every
row holds, keeping FILE's other rows. Exit 0 written, 1 a row doesn't hold, 2 unreachable."""

import hashlib
import sys
from pathlib import Path
from typing import Any

import click
from packaging.version import Version

from rocm_fleet.atomic import write_atomically
from rocm_fleet.cli.exits import option
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.model import gpu_targets, matrix, site_data, streams, torch_builds
from rocm_fleet.model.versions import major_minor
from rocm_fleet.upstream.matrix_check import (
    UpstreamClient,
    failures,
    listed_versions,
    missing_releases,
    release_checks,
)

OPTIONS = [
    option("--output", type=click.Path(path_type=Path), metavar="FILE",
           help="write a site's data file (rocm_matrix_data names it)"),
    option("--release", multiple=True, metavar="X.Y.Z",
           help="--output: only this release (repeatable)"),
    option("--timeout", type=float, default=20.0, help="--output: seconds per request"),
    option("--retries", type=int, default=3, help="--output: retries per request"),
]  # fmt: skip


def run(args: Any, fingerprints: dict[str, str]) -> int:
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
