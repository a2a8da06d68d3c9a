"""The rows of a site's matrix data: releases upstream publishes that the committed matrix
lacks, read over verified TLS, no amdgpu driver (docs/decisions/site-matrix-data.md)."""

from __future__ import annotations

from packaging.version import Version

from rocm_fleet.model import matrix
from rocm_fleet.model.versions import major_minor
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.matrix_check import file_versions, index_files, missing_releases


def _stream_and_repository(where: str) -> tuple[matrix.Stream, matrix.Repository] | None:
    for repo in (matrix.MULTI_ARCH_REPOSITORY, matrix.STABLE_REPOSITORY):
        if where.startswith(repo.base_url + "/"):
            return matrix.CORE_SDK, repo
    if where.startswith(matrix.CLASSIC_REPOSITORY.base_url + "/"):
        return matrix.CLASSIC, matrix.CLASSIC_REPOSITORY
    return None


def _labelled(upstream: UpstreamClient, url: str, project: str, label: str) -> list[str]:
    """The public versions of ``project`` on the index at ``url`` with local label ``label``."""
    files = index_files(upstream, url, project) or []
    versions = [Version(v) for v in file_versions(files, project)]
    return sorted((v.public for v in versions if v.local == label), key=Version)


def amd_wheels(upstream: UpstreamClient, release: str) -> matrix.AmdWheels | None:
    """What AMD's stable index holds for ``release`` (torchvision paired as ``0.(minor+15)``,
    torchaudio only when one is listed); None when it lists no torch for it."""
    url = matrix.AMD_STABLE_WHEEL_INDEX
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
        builds.append(matrix.TorchBuild(torch, paired[-1], audio))
    if not builds:
        return None
    targets, limits = [], []
    for target in matrix.GPU_TARGETS:
        offered = set(_labelled(upstream, url, f"amd-torch-device-{target.gfx}", label))
        mine = [b.torch for b in builds if b.torch in offered]
        if not mine:
            continue
        targets.append(target.gfx)
        if len(mine) < len(builds):
            limits.append((target.gfx, tuple(mine)))
    if not targets:
        return None
    return matrix.AmdWheels(url, release, tuple(builds), tuple(targets), tuple(limits))


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
        kind = _stream_and_repository(where)
        if kind is None:
            notes.append(f"{version}: found at {where}, in no repository the matrix knows")
            continue
        stream, repository = kind
        torch_index, amd = None, None
        if stream is matrix.CLASSIC:
            index = f"rocm{major_minor(version)}"
            torch_index = index if index in matrix.TORCH_INDEXES else None
        else:
            amd = amd_wheels(upstream, version)
        no_torch = None if torch_index or amd else "upstream lists no torch built for it"
        rel = matrix.Release(version, stream, repository, torch_index, None, no_torch, amd)
        rows.append((rel, where))
    return rows, notes
