"""The matrix check: whether upstream (or a mirror's copy, fetched once per URL) still agrees with
every row (a site file's too) and what releases it lacks. A check takes an ``UpstreamClient``
last: None when the row holds, else why."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from packaging import utils
from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from rocm_fleet.model import matrix, streams, torch_builds, versions
from rocm_fleet.model.site_data import SiteData
from rocm_fleet.model.versions import major_minor, release_key
from rocm_fleet.upstream import aptrepo
from rocm_fleet.upstream.aptrepo import check_release, primary_fingerprints
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.progress import DownloadProgress
from rocm_fleet.upstream.wheels import parse_page, project_url

if TYPE_CHECKING:
    pass


Key = tuple[str, str]  # (URL, fingerprint) of the key a repository is signed with


def verified_release(
    upstream: UpstreamClient, url: str, suite: str, key: Key
) -> aptrepo.ReleaseFile | str:
    """The InRelease at ``url`` as apt trusts it with ``key``, of ``suite``; else what's wrong."""
    reply = upstream.get(url)
    if not reply.found:
        return f"HTTP {reply.status}: no such suite"
    text = reply.body.decode("utf-8", "replace")
    if not text.startswith("-----BEGIN PGP SIGNED MESSAGE-----") or (
        "-----BEGIN PGP SIGNATURE-----" not in text
    ):
        return "not a signed (clearsigned) InRelease"
    key_url, fingerprint = key
    key_reply = upstream.get(key_url)
    if not key_reply.found or primary_fingerprints(key_reply.body) != [fingerprint.upper()]:
        return f"can't verify it: the key at {key_url} is not {fingerprint.upper()}"
    try:
        release = aptrepo.parse_release(aptrepo.signed_text(reply.body, key_reply.body, url))
        check_release(release.fields, url, suite)
    except aptrepo.RepositoryError as exc:
        return str(exc).removeprefix(f"{url}: ")
    return release


def inrelease_check(url: str, suite: str, origin: str | None, key: Key,
                    upstream: UpstreamClient) -> str | None:  # fmt: skip
    release = verified_release(upstream, url, suite, key)
    if isinstance(release, str):
        return release
    if origin is not None and release.fields.get("Origin") != origin:
        return f"declares Origin {release.fields.get('Origin')!r}; the matrix pins {origin!r}"
    return None


def packages_index(upstream: UpstreamClient, dists_url: str, suite: str,
                   key: Key) -> dict[str, set[str]] | str:  # fmt: skip
    """Package name -> versions of a verified main/binary-amd64 index; else what's wrong."""
    release = verified_release(upstream, f"{dists_url}/InRelease", suite, key)
    if isinstance(release, str):
        return f"its InRelease: {release}"
    for name in ("Packages.gz", "Packages"):
        listed = release.files.get(f"main/binary-amd64/{name}")
        reply = upstream.get(f"{dists_url}/main/binary-amd64/{name}")
        if reply.found:
            if listed is None or hashlib.sha256(reply.body).hexdigest() != listed.sha256:
                return f"main/binary-amd64/{name}: SHA-256 is not the one its InRelease lists"
            body = aptrepo.decompressed(name, reply.body)
            break
    else:
        return {}
    found: dict[str, set[str]] = {}
    for fields in aptrepo.parse_stanzas(body.decode("utf-8", "replace")):
        if "Package" in fields and "Version" in fields:
            found.setdefault(fields["Package"], set()).add(fields["Version"])
    return found


def core_packages_check(dists_url: str, rel: matrix.Release, suite: str, key: Key,
                        upstream: UpstreamClient) -> str | None:  # fmt: skip
    meta = f"amdrocm{major_minor(rel.version)}"
    index = packages_index(upstream, dists_url, suite, key)
    if isinstance(index, str):
        return index
    versions = index.get(meta, set())
    pattern = re.compile(rel.stream.version_regex(rel))
    if not any(pattern.search(v) for v in versions):
        return f"no {meta} of {rel.version} in the index (has: {', '.join(sorted(versions))})"
    return None


def key_check(url: str, fingerprint: str, upstream: UpstreamClient) -> str | None:
    reply = upstream.get(url)
    if not reply.found:
        return f"HTTP {reply.status}: no key there"
    found = primary_fingerprints(reply.body)
    if found != [fingerprint]:
        return f"holds {', '.join(found) or 'no key'}; the matrix pins {fingerprint}"
    return None


def listed_versions(upstream: UpstreamClient, index_url: str, project: str) -> set[str] | None:
    """The versions of ``project`` its PEP 503 page's wheels and sdists name; None: no page."""
    url = project_url(index_url, project)
    reply = upstream.get(url)
    if not reply.found:
        return None
    found = set()
    for link in parse_page(reply.body.decode("utf-8", "replace"), url):
        name, wheel = link.filename, link.filename.endswith(".whl")
        try:
            if wheel or name.endswith(".tar.gz"):
                parse = utils.parse_wheel_filename if wheel else utils.parse_sdist_filename
                dist, version = parse(name)[:2]
                if dist == utils.canonicalize_name(project):
                    found.add(str(version))
        except (utils.InvalidWheelFilename, utils.InvalidSdistFilename, InvalidVersion):
            continue
    return found


def wheels_check(index_url: str, project: str, versions: list[str],
                 upstream: UpstreamClient) -> str | None:  # fmt: skip
    have = listed_versions(upstream, index_url, project)
    if have is None:
        return f"no {project} project page"
    missing = [v for v in versions if v not in have]
    return f"no {project} wheel {', '.join(missing)}" if missing else None


def runtime_check(index_url: str, requirement: str, upstream: UpstreamClient) -> str | None:
    req = Requirement(requirement)
    have = listed_versions(upstream, index_url, req.name)
    if have is None:
        return f"no {req.name} project page (torch requires {requirement})"
    if not any(req.specifier.contains(v, prereleases=True) for v in have):
        return f"no {req.name} matching {requirement} ({', '.join(sorted(have))})"
    return None


def no_index_check(index_url: str, upstream: UpstreamClient) -> str | None:
    if have := listed_versions(upstream, index_url, "torch"):
        torches = sorted(have, key=Version)
        return f"the index exists now (torch {', '.join(torches[-3:])}): add it to the matrix"
    return None


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


def pinned_fingerprint(stream: streams.Stream, fingerprints: dict[str, str] | None) -> str:
    """The fingerprint ``stream`` is signed with: ``fingerprints``' (its, "*"), else its own."""
    fingerprints = fingerprints or {}
    found = fingerprints.get(stream.name) or fingerprints.get("*") or stream.key_fingerprint
    return found.upper()


def build_checks(releases: list[matrix.Release],
                 fingerprints: dict[str, str] | None = None) -> list[MatrixCheck]:  # fmt: skip
    """The checks of the releases' rows (``fingerprints``: as for ``pinned_fingerprint``)."""
    checks: list[MatrixCheck] = []

    def add(row: str, what: str, url: str, check: Callable, *args: Any, once: bool = False) -> None:
        if not (once and any(c.url == url for c in checks)):
            checks.append(MatrixCheck(row, what, url, partial(check, *args)))

    pinned = partial(pinned_fingerprint, fingerprints=fingerprints)
    driver_key = (matrix.AMDGPU_KEY_URL, pinned(streams.CLASSIC))
    repositories: dict[str, tuple[streams.Repository, streams.Stream]] = {}
    indexes: dict[str, list[matrix.Release]] = {}
    for rel in releases:
        stream, repo, row = rel.stream, rel.repository, rel.version
        repositories.setdefault(repo.key_url, (repo, stream))
        key = (repo.key_url, pinned(stream))
        for distro in matrix.DISTROS:
            if (pub := rel.publication(distro)) is None:
                continue
            dists = f"{stream.repository_url(repo.base_url, rel, pub)}/dists/{pub.suite}"
            url, what = f"{dists}/InRelease", f"InRelease {pub.directory or pub.suite}"
            add(row, what, url, inrelease_check, url, pub.suite, stream.pin_origin, key, once=True)
            if stream is streams.CORE_SDK:
                url = f"{dists}/main/binary-amd64/Packages.gz"
                add(row, f"packages in {pub.directory}", url, core_packages_check, dists, rel,
                    pub.suite, key)  # fmt: skip
        driver = matrix.amdgpu_repo_version(rel)
        # AMD's classic pin covers the driver repository in classic only.
        origin = streams.CLASSIC.pin_origin if stream is streams.CLASSIC else None
        suites = sorted({d.suite for d in matrix.DISTROS if rel.publication(d)})
        for suite in suites if driver else ():
            url = f"{matrix.AMDGPU_APT_BASE_URL}/{driver}/ubuntu/dists/{suite}/InRelease"
            add(row, f"amdgpu {driver} {suite}", url, inrelease_check, url, suite, origin,
                driver_key, once=True)  # fmt: skip
        if rel.torch_index:
            indexes.setdefault(rel.torch_index, []).append(rel)
        else:
            url = f"{torch_builds.PYTORCH_INDEX_BASE_URL}/rocm{major_minor(rel.version)}"
            add(row, "no PyTorch index", url, no_index_check, url)
        if amd := rel.amd_wheels:  # AMD's index: runtime, builds, each amd-torch-device-<gfx>
            url = amd.url.rstrip("/")
            add(row, "AMD ROCm runtime", f"{url}/rocm/", runtime_check, url, amd.runtime)
            for project in ("torch", "torchvision", "torchaudio"):
                versions = {f"{v}+{amd.label}" for b in amd.builds if (v := getattr(b, project))}
                add(row, f"AMD {project} wheels", f"{url}/{project}/", wheels_check, url,
                    project, sorted(versions, key=Version))  # fmt: skip
            for gfx in amd.targets:
                project = f"amd-torch-device-{gfx}"
                versions = [f"{b.torch}+{amd.label}" for b in amd.builds_for([gfx])]
                add(row, f"AMD {project}", f"{url}/{project}/", wheels_check, url, project,
                    versions)  # fmt: skip
    for key_url, (repo, stream) in repositories.items():
        add(f"key {repo.name}", "fingerprint", key_url, key_check, key_url, pinned(stream))
    for index, rels in indexes.items():
        url = f"{torch_builds.PYTORCH_INDEX_BASE_URL}/{index}"
        for project in ("torch", "torchvision", "torchaudio"):
            versions = [f"{v}+{index}" for b in rels[0].torch_builds if (v := getattr(b, project))]
            if versions:
                add(index, f"{project} wheels", f"{url}/{project}/", wheels_check, url, project,
                    versions)  # fmt: skip
        if runtime := rels[0].torch_runtime:
            add(index, "ROCm runtime", f"{url}/", runtime_check, url, runtime)
    return checks


@dataclass(frozen=True)
class MissingRelease:
    """A release upstream publishes that the matrix lacks."""

    release: str  # "7.2.5"
    where: str  # the listing or index it was found in (with the package that names it)


def missing_releases(
    upstream: UpstreamClient, fingerprints: dict[str, str] | None = None
) -> list[MissingRelease]:
    """Releases upstream publishes that the matrix lacks, oldest first."""
    core_key = pinned_fingerprint(streams.CORE_SDK, fingerprints)
    known = set(matrix.release_versions())
    oldest = min(release_key(v) for v in known)
    missing: dict[str, str] = {}
    listing = f"{streams.CLASSIC_REPOSITORY.base_url}/"
    reply = upstream.get(listing)
    if reply.found:
        text = reply.body.decode("utf-8", "replace")
        for path in versions.linked_releases(text):
            version = path if path.count(".") == 2 else f"{path}.0"
            if version not in known and release_key(version) >= oldest:
                missing[version] = f"{listing}{path}/"
    for repo in (streams.MULTI_ARCH_REPOSITORY, streams.STABLE_REPOSITORY):
        for pub in streams.CORE_SDK.publications:
            dists = f"{repo.base_url}/{pub.directory}/dists/{pub.suite}"
            index = packages_index(upstream, dists, pub.suite, (repo.key_url, core_key))
            if isinstance(index, str):
                continue  # not verified (its InRelease check says why)
            for name, listed in index.items():
                if not versions.is_core_sdk_meta_package(name):
                    continue
                for version in listed:
                    release = version.split("-", 1)[0]
                    if release not in known and versions.is_full_release(release):
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
                 fingerprints: dict[str, str] | None = None,
                 progress: DownloadProgress | None = None) -> dict[str, Any]:  # fmt: skip
    """Run every check (``release``'s alone; KeyError if unknown): ``--json``'s report."""
    releases = [matrix.release(release)] if release is not None else list(matrix.RELEASES)
    from rocm_fleet.upstream.http import Unreachable

    checks = build_checks(releases, fingerprints)
    progress = progress or DownloadProgress()
    total, done, received = len(checks) + (0 if release else 1), 0, 0

    def step(label: str) -> None:
        nonlocal done, received
        done, now = done + 1, upstream.fetched_bytes()
        progress.advance(now - received)
        received = now
        progress.note(f"matrix check [{done}/{total}] {label}")

    progress.start("matrix check", None)
    unreachable: list[str] = []
    with ThreadPoolExecutor(8) as pool:
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
        "missing_releases": [asdict(found) for found in missing],
        "releases_checked": release is None and not unreachable,
        "unreachable": unreachable,
    }


class SiteDataUnverified(ValueError):
    """Upstream doesn't publish (or couldn't be asked about) what a site file's rows say."""


def release_checks(releases: list[matrix.Release], upstream: UpstreamClient,
                   fingerprints: dict[str, str]) -> list[MatrixCheck]:  # fmt: skip
    """The matrix check's checks of ``releases``, run."""
    checks = build_checks(releases, fingerprints)
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(run_check, checks, [upstream] * len(checks)))


def failures(checks: list[MatrixCheck]) -> list[str]:
    """One line per check that didn't hold: row, what, why, where."""
    return [
        f"{c.row} {c.what}: {c.status} ({c.detail}) <{c.url}>" for c in checks if c.status != "ok"
    ]


_VERIFIED: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}


def verify(site: SiteData, fingerprints: dict[str, str]) -> None:
    """SiteDataUnverified unless every check of the file's added rows holds (asked once)."""
    key = (site.sha256, tuple(sorted(fingerprints.items())))
    if key not in _VERIFIED:
        upstream = UpstreamClient(None, None, 20.0, 3)
        _VERIFIED[key] = failures(release_checks(list(site.added), upstream, fingerprints))
    bad = _VERIFIED[key]
    if bad:
        lines = "\n  ".join(bad)
        raise SiteDataUnverified(
            f"site matrix data {site.provenance}: upstream does not publish what it says "
            f"(the checks of `rocm-fleet matrix check`):\n  {lines}"
        )
