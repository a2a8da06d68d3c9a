"""The matrix check: whether upstream (or a mirror) still agrees with every row of the matrix,
and what releases it lacks, as ``--json``'s report."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from rocm_fleet.model import matrix
from rocm_fleet.model.versions import (
    is_core_sdk_meta_package,
    is_full_release,
    linked_releases,
    major_minor,
    release_key,
)
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.progress import DownloadProgress
from rocm_fleet.upstream.row_checks import (
    core_packages_check,
    inrelease_check,
    key_check,
    no_index_check,
    packages_index,
    runtime_check,
    wheels_check,
)


@dataclass
class MatrixCheck:
    row: str  # the matrix row it checks: "7.2.1", "rocm7.14", "key repo.amd.com"
    what: str
    url: str
    run: Callable[[UpstreamClient], str | None] = field(repr=False)  # None: holds, else why
    status: str = "pending"  # ok | wrong | unreachable
    detail: str = ""

    def json(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in ("row", "what", "url", "status", "detail")}


def pinned_fingerprint(stream: matrix.Stream, fingerprints: dict[str, str] | None) -> str:
    """The fingerprint ``stream`` must be signed with: ``fingerprints``' (stream or "*"), else
    the matrix's; upper-case."""
    fingerprints = fingerprints or {}
    found = fingerprints.get(stream.name) or fingerprints.get("*") or stream.key_fingerprint
    return found.upper()


def build_checks(releases: list[matrix.Release],
                 fingerprints: dict[str, str] | None = None) -> list[MatrixCheck]:  # fmt: skip
    """The checks of the releases' rows (``fingerprints``: as for ``pinned_fingerprint``)."""

    def pinned(stream: matrix.Stream) -> str:
        return pinned_fingerprint(stream, fingerprints)

    driver_key = (matrix.AMDGPU_KEY_URL, pinned(matrix.CLASSIC))
    checks: list[MatrixCheck] = []
    repositories: dict[str, tuple[matrix.Repository, matrix.Stream]] = {}
    indexes: dict[str, list[matrix.Release]] = {}
    for rel in releases:
        stream, repo = rel.stream, rel.repository
        repositories.setdefault(repo.key_url, (repo, stream))
        key = (repo.key_url, pinned(stream))
        for row in matrix.DISTROS:
            pub = rel.publication(row)
            if pub is None:
                continue
            dists = f"{stream.repository_url(repo.base_url, rel, pub)}/dists/{pub.suite}"
            url, what = f"{dists}/InRelease", f"InRelease {pub.directory or pub.suite}"
            if not any(c.url == url for c in checks):
                run = inrelease_check(url, pub.suite, stream.pin_origin, key)
                checks.append(MatrixCheck(rel.version, what, url, run))
            if stream is matrix.CORE_SDK:
                run = core_packages_check(dists, rel, pub.suite, key)
                url = f"{dists}/main/binary-amd64/Packages.gz"
                checks.append(MatrixCheck(rel.version, f"packages in {pub.directory}", url, run))
        driver = matrix.amdgpu_repo_version(rel)
        # AMD's classic pin covers the driver repository in classic only.
        origin = matrix.CLASSIC.pin_origin if stream is matrix.CLASSIC else None
        suites = sorted({row.suite for row in matrix.DISTROS if rel.publication(row)})
        for suite in suites if driver else ():
            url = f"{matrix.AMDGPU_APT_BASE_URL}/{driver}/ubuntu/dists/{suite}/InRelease"
            if not any(c.url == url for c in checks):
                run = inrelease_check(url, suite, origin, driver_key)
                checks.append(MatrixCheck(rel.version, f"amdgpu {driver} {suite}", url, run))
        if rel.torch_index:
            indexes.setdefault(rel.torch_index, []).append(rel)
        else:
            url = f"{matrix.PYTORCH_INDEX_BASE_URL}/rocm{major_minor(rel.version)}"
            checks.append(MatrixCheck(rel.version, "no PyTorch index", url, no_index_check(url)))
        if rel.amd_wheels:
            checks += amd_wheel_checks(rel, rel.amd_wheels)
    for key_url, (repo, stream) in repositories.items():
        run = key_check(key_url, pinned(stream))
        checks.append(MatrixCheck(f"key {repo.name}", "fingerprint", key_url, run))
    for index, rels in indexes.items():
        url = f"{matrix.PYTORCH_INDEX_BASE_URL}/{index}"
        builds = rels[0].torch_builds
        for project in ("torch", "torchvision", "torchaudio"):
            versions = [f"{v}+{index}" for b in builds if (v := getattr(b, project))]
            if versions:
                run = wheels_check(url, project, versions)
                checks.append(MatrixCheck(index, f"{project} wheels", f"{url}/{project}/", run))
        if runtime := rels[0].torch_runtime:
            run = runtime_check(url, runtime)
            checks.append(MatrixCheck(index, "ROCm runtime", f"{url}/", run))
    return checks


def amd_wheel_checks(rel: matrix.Release, amd: matrix.AmdWheels) -> list[MatrixCheck]:
    """AMD's index for a release: runtime, pinned builds, each ``amd-torch-device-<gfx>``."""
    url = amd.url.rstrip("/")
    run = runtime_check(url, amd.runtime)
    checks = [MatrixCheck(rel.version, "AMD ROCm runtime", f"{url}/rocm/", run)]
    for project in ("torch", "torchvision", "torchaudio"):
        versions = [f"{v}+{amd.label}" for b in amd.builds if (v := getattr(b, project))]
        run = wheels_check(url, project, sorted(set(versions), key=Version))
        checks.append(MatrixCheck(rel.version, f"AMD {project} wheels", f"{url}/{project}/", run))
    for gfx in amd.targets:
        project = f"amd-torch-device-{gfx}"
        versions = [f"{b.torch}+{amd.label}" for b in amd.builds_for([gfx])]
        run = wheels_check(url, project, versions)
        checks.append(MatrixCheck(rel.version, f"AMD {project}", f"{url}/{project}/", run))
    return checks


@dataclass(frozen=True)
class MissingRelease:
    """A release upstream publishes that the matrix lacks."""

    release: str  # "7.2.5"
    where: str  # the listing or index it was found in (with the package that names it)

    def json(self) -> dict[str, str]:
        return {"release": self.release, "where": self.where}


def missing_releases(
    upstream: UpstreamClient, fingerprints: dict[str, str] | None = None
) -> list[MissingRelease]:
    """Releases upstream publishes that the matrix lacks, oldest first."""
    core_key = pinned_fingerprint(matrix.CORE_SDK, fingerprints)
    known = set(matrix.release_versions())
    oldest = min(release_key(v) for v in known)
    missing: dict[str, str] = {}
    listing = f"{matrix.CLASSIC_REPOSITORY.base_url}/"
    reply = upstream.get(listing)
    if reply.found:
        text = reply.body.decode("utf-8", "replace")
        for path in linked_releases(text):
            version = path if path.count(".") == 2 else f"{path}.0"
            if version not in known and release_key(version) >= oldest:
                missing[version] = f"{listing}{path}/"
    for repo in (matrix.MULTI_ARCH_REPOSITORY, matrix.STABLE_REPOSITORY):
        for pub in matrix.CORE_SDK.publications:
            dists = f"{repo.base_url}/{pub.directory}/dists/{pub.suite}"
            index = packages_index(upstream, dists, pub.suite, (repo.key_url, core_key))
            if isinstance(index, str):
                continue  # not verified (its InRelease check says why)
            for name, versions in index.items():
                if not is_core_sdk_meta_package(name):
                    continue
                for version in versions:
                    release = version.split("-", 1)[0]
                    if release not in known and is_full_release(release):
                        missing.setdefault(release, f"{dists} ({name} {version})")
    return [
        MissingRelease(version, where)
        for version, where in sorted(missing.items(), key=lambda item: release_key(item[0]))
    ]


def run_check(check: MatrixCheck, upstream: UpstreamClient) -> MatrixCheck:
    """``check`` run against ``upstream``, its status and detail set."""
    from rocm_fleet.upstream.http import Unreachable

    try:
        problem = check.run(upstream)
    except Unreachable as exc:
        check.status, check.detail = "unreachable", str(exc)
    else:
        check.status, check.detail = ("wrong", problem) if problem else ("ok", "")
    return check


def check_matrix(upstream: UpstreamClient, release: str | None = None,
                 fingerprints: dict[str, str] | None = None, workers: int = 8,
                 progress: DownloadProgress | None = None) -> dict[str, Any]:  # fmt: skip
    """Run every check (``release``'s alone; KeyError if unknown): ``--json``'s report."""
    releases = [matrix.release(release)] if release is not None else list(matrix.RELEASES)
    from rocm_fleet.upstream.http import Unreachable

    checks = build_checks(releases, fingerprints)
    progress = progress or DownloadProgress()
    total, done, received = len(checks) + (0 if release else 1), 0, 0

    def step(label: str) -> None:
        nonlocal done, received
        done += 1
        now = upstream.fetched_bytes()
        progress.advance(now - received)
        received = now
        progress.note(f"matrix check [{done}/{total}] {label}")

    progress.start("matrix check", None)
    unreachable: list[str] = []

    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(run_check, check, upstream) for check in checks]
        for future in as_completed(futures):
            checked = future.result()
            step(f"{checked.row} {checked.what}: {checked.status}")
    missing: list[MissingRelease] = []
    if release is None:
        try:
            missing = missing_releases(upstream, fingerprints)
        except Unreachable as exc:
            unreachable.append(str(exc))
        step(f"releases upstream: {len(missing)} the matrix lacks")
    progress.finish(f"for {total} checks")
    statuses = [c.status for c in checks]
    # cli.exits: a finding (1) outranks what could not be checked (2).
    found = "wrong" in statuses or bool(missing)
    status = 1 if found else 2 if "unreachable" in statuses or unreachable else 0
    return {
        "exit_status": status,
        "checks": [c.json() for c in checks],
        "missing_releases": [found.json() for found in missing],
        "releases_checked": release is None and not unreachable,
        "unreachable": unreachable,
    }
