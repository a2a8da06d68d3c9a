"""``rocm-fleet matrix [--json]`` and ``rocm-fleet matrix check``: the compatibility matrix, and
whether upstream still agrees with it.

``matrix`` prints one row per release (stream, repository, PyTorch index and builds, driver,
support per distro), or everything the matrix says as JSON. The README's release table is
this table in Markdown (``release_table()``; a unit test keeps it in sync).

``matrix check [--release R] [--apt-base URL] [--torch-base URL] [--json]`` asks upstream
(or a mirror) about every row: each suite's signed ``InRelease`` exists and declares the
Origin the stream's pin names; a Core SDK release's packages are in its repository; the
amdgpu driver folders exist; the key at each key URL has the matrix's fingerprint; each
PyTorch index lists the pinned wheels (and the pip runtime they require), and no index
exists where the matrix says there is none. Without ``--release`` it also lists releases
upstream publishes that the matrix lacks: the directories of repo.radeon.com/rocm/apt/ and
the ``amdrocm<X.Y>`` packages of the Core SDK repositories.

Requests go through ``requests`` with retries (connection errors, 429 and 5xx) and a timeout
per request; progress goes to stderr. Exit status: 0 every row holds, 1 a row is wrong or
stale (each named) or upstream has releases the matrix lacks, 2 upstream could not be
reached (for some request, after the retries).

Mirrors: ``--apt-base URL`` is a mirror holding each AMD host under a directory of its name
(apt-mirror's layout: URL/repo.radeon.com/rocm/apt/..., URL/stable.repo.amd.com/...);
``--torch-base URL`` replaces https://download.pytorch.org/whl; ``--key-fingerprint``
names the key a mirror re-signs with (as ``rocm_key_fingerprint`` does for the deploy).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from rocm_fleet.cli.exits import Exit, epilog, worst
from rocm_fleet.cli.inventory import UsageError
from rocm_fleet.model import matrix, upstream_data
from rocm_fleet.model.versions import (
    is_core_sdk_meta_package,
    is_full_release,
    linked_releases,
    major_minor,
    release_key,
)
from rocm_fleet.offline.aptrepo import (
    Release,
    RepositoryError,
    decompressed,
    parse_release,
    parse_stanzas,
    signed_text,
)
from rocm_fleet.offline.openpgp import primary_fingerprints
from rocm_fleet.offline.signature import SignatureError, check_release
from rocm_fleet.offline.wheels import parse_page, project_url

if TYPE_CHECKING:
    import requests

    from rocm_fleet.offline.download import Progress

# requests (and download, which imports it) load when a check runs: the ``rocm-fleet``
# command imports every tool, and pyinfra's CLI (the audit) warns when ssl was imported
# before gevent patches it.

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


# The releases the lab's end-to-end tests deploy and verify (tests/e2e: Debian 12 and 13
# hosts, doubled GPUs, doubles of AMD's and PyTorch's servers built from the recorded upstream
# facts); tests/unit/test_readme.py keeps this in step with the tests. No row is verified on a
# real GPU host.
LAB_TESTED = ("6.4.3", "7.2.1", "7.14.1", "10.0.0")

# What the README calls each origin of upstream_data.RELEASES' "from" (tools/matrix_update.py).
ORIGIN_TEXT = {
    "AMD compatibility table": "AMD's table",
    "AMD os-support.yaml": "AMD's os-support.yaml",
    "PyTorch RELEASE.md": "PyTorch's matrix",
    "override": "recorded observation",
}


def _data_row(rel: matrix.Release) -> dict[str, Any]:
    """The release's row of the generated upstream data."""
    return next(r for r in upstream_data.RELEASES if r["version"] == rel.version)


def source_text(rel: matrix.Release) -> str:
    """Where a release row comes from, e.g. "AMD's table; torch: PyTorch's matrix" (the
    generated upstream data's "from"; an override's citation is in
    tools/matrix_overrides.toml)."""
    origins = _data_row(rel)["from"]
    parts = [ORIGIN_TEXT[origins["row"]]]
    if "distros" in origins:
        parts.append(f"distros: {ORIGIN_TEXT[origins['distros']]}")
    if rel.amd_wheels:
        # AMD's own index for the Core SDK 10.x: recorded from AMD's install pages
        # (matrix.AMD_WHEELS, tests/fixtures/upstream/repo.amd.com-whl.toml).
        parts.append("torch: AMD's install page")
    else:
        torch = origins["torch_index"]
        torch_text = ORIGIN_TEXT.get(torch, "PyTorch's matrix (none)")
        parts.append(f"torch: {torch_text}")
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
    """The README's release table, in Markdown."""
    headers, rows = table_rows()
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


# The terminal's table fits 100 columns: distros and support in short forms, the torch builds
# as the newest and how many more, with a legend under it (the README's table and --json
# have everything spelled out).
SUPPORT_SHORT = {
    matrix.Support.OFFICIAL: "yes",
    matrix.Support.INSTINCT_ONLY: "MI",
    matrix.Support.UNLISTED: "?",
    matrix.Support.REJECTED: "no",
    None: "-",
}


def _distro_short(row: matrix.Distro) -> str:
    return f"{row.id[0].upper()}{row.version.split('.')[0]}"  # ubuntu 24.04 -> U24


def plain_table() -> str:
    """The matrix for a terminal, in 100 columns, with its legend."""
    headers = ["ROCm", "Stream", "Repository", "Index", "torch", "dkms"]
    headers += [_distro_short(d) for d in matrix.DISTROS]
    rows = [headers]
    for rel in matrix.RELEASES:
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
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(headers))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    distros = ", ".join(
        f"{_distro_short(d)} {d.id.capitalize()} {d.version}" for d in matrix.DISTROS
    )
    legend = [
        f"{distros}:",
        "  yes listed by AMD, MI listed for Instinct only, ? packages published but not listed,",
        "  no published but refused by the distro's apt (SHA-1 key binding), - not published.",
        "torch: the newest build the deploy installs by default (+ how many older ones it knows);",
        "dkms: the amdgpu driver release for rocm_driver: dkms (refused: not known).",
        "Everything, spelled out: rocm-fleet matrix --json, or the README's release table.",
    ]
    return "\n".join([*lines, "", *legend])


def matrix_json() -> dict[str, Any]:
    """Everything the matrix says, for tools."""

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
    for rel in matrix.RELEASES:
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
                # where the row comes from (the generated data's "from", an override's
                # citation) and whether the lab deploys it
                "source": {"from": _data_row(rel)["from"], "citation": _data_row(rel)["source"],
                           "text": source_text(rel),
                           "tested": "lab only" if rel.version in LAB_TESTED else None},
            }
        )  # fmt: skip
    return {
        "streams": [stream_json(s) for s in matrix.STREAMS],
        "distros": [asdict(d) for d in matrix.DISTROS],
        "releases": releases,
        "pytorch_index_base_url": matrix.PYTORCH_INDEX_BASE_URL,
        "amdgpu_apt_base_url": matrix.AMDGPU_APT_BASE_URL,
    }


# --- fetching -------------------------------------------------------------------------------

GONE = (403, 404, 410)  # what object stores answer for a path that isn't there


class Unreachable(Exception):
    """Upstream didn't answer usefully (connection, timeout, 5xx after the retries)."""


@dataclass
class Response:
    url: str
    status: int
    body: bytes

    @property
    def found(self) -> bool:
        return self.status == 200


class Upstream:
    """GETs through the bundle's HTTP client (``download.retrying_session``: retries with
    backoff and Retry-After, one User-Agent), with a timeout, mirror rewriting and a cache
    (each URL once). Unlike ``download.Fetcher.content``, a 403/404/410 is an answer here
    (the matrix says what isn't there), and each worker thread has its own session."""

    AMD_HOSTS = ("repo.radeon.com", "repo.amd.com", "stable.repo.amd.com")

    def __init__(
        self,
        apt_base: str | None,
        torch_base: str | None,
        timeout: float,
        retries: int,
    ):
        self.apt_base = apt_base.rstrip("/") if apt_base else None
        self.torch_base = torch_base.rstrip("/") if torch_base else None
        self.timeout = timeout
        self.retries = retries
        self._local = threading.local()
        self._lock = threading.Lock()
        self._cache: dict[str, Any] = {}
        self._fetched = 0  # bytes received, for the progress display

    def url(self, url: str) -> str:
        """Where ``url`` is fetched from: a mirror's copy when one is configured."""
        parts = urlsplit(url)
        if self.torch_base and url.startswith(matrix.PYTORCH_INDEX_BASE_URL):
            return self.torch_base + url[len(matrix.PYTORCH_INDEX_BASE_URL) :]
        if self.apt_base and parts.netloc in self.AMD_HOSTS:
            return f"{self.apt_base}/{parts.netloc}{parts.path}"
        return url

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            from rocm_fleet.offline.download import retrying_session

            session = self._local.session = retrying_session(self.retries, "matrix check")
        return session

    def fetched_bytes(self) -> int:
        """Bytes received so far, over every thread."""
        with self._lock:
            return self._fetched

    def get(self, url: str) -> Response:
        """The response for ``url`` (upstream form); raises Unreachable. Fetched once, by the
        first thread that asks; the others wait for it."""
        with self._lock:
            pending = self._cache.get(url)
            first = pending is None
            if first:
                pending = self._cache[url] = Future()
        if first:
            pending.set_result(self._fetch(url))
        result = pending.result()
        if isinstance(result, Unreachable):
            raise result
        return result

    def _fetch(self, url: str) -> Response | Unreachable:
        import requests

        from rocm_fleet.offline.download import reason

        where = self.url(url)
        try:
            reply = self._session().get(where, timeout=self.timeout)
        except requests.RequestException as exc:
            # urllib3's message repeats the pool and URL; keep what went wrong.
            what = re.sub(r"\w+ConnectionPool\([^)]*\): ", "", reason(exc))
            return Unreachable(f"{type(exc).__name__}: {what}")
        with self._lock:
            self._fetched += len(reply.content)
        if reply.status_code == 200 or reply.status_code in GONE:
            return Response(where, reply.status_code, reply.content)
        return Unreachable(f"HTTP {reply.status_code} from {where}")


# --- checks ---------------------------------------------------------------------------------


@dataclass
class Check:
    row: str  # the matrix row it checks: "7.2.1", "rocm7.14", "key repo.amd.com"
    what: str
    url: str
    run: Callable[[Upstream], str | None] = field(repr=False)  # None: holds; else what's wrong
    status: str = "pending"  # ok | wrong | unreachable
    detail: str = ""

    def json(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in ("row", "what", "url", "status", "detail")}


Key = tuple[str, str]  # (URL, fingerprint) of the key a repository is signed with


def verified_release(upstream: Upstream, url: str, suite: str, key: Key) -> Release | str:
    """The InRelease at ``url`` as apt trusts it (``offline.signature``: signed by ``key``,
    whose primary fingerprint is the pinned one, under apt's policy; not stale; of
    ``suite``), or what is wrong with it."""
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
        release = parse_release(signed_text(reply.body, key_reply.body, url))
        check_release(release.fields, url, suite)
    except (RepositoryError, SignatureError) as exc:
        return str(exc).removeprefix(f"{url}: ")
    return release


def inrelease_check(
    url: str, suite: str, origin: str | None, key: Key
) -> Callable[[Upstream], str | None]:
    def run(upstream: Upstream) -> str | None:
        release = verified_release(upstream, url, suite, key)
        if isinstance(release, str):
            return release
        fields = release.fields
        if origin is not None and fields.get("Origin") != origin:
            return f"declares Origin {fields.get('Origin')!r}; the matrix pins {origin!r}"
        return None

    return run


def _packages_index(
    upstream: Upstream, dists_url: str, suite: str, key: Key
) -> dict[str, set[str]] | str:
    """Package name -> versions of a repository's main/binary-amd64 index, once its SHA-256
    is the one its verified InRelease lists; what is wrong otherwise."""
    release = verified_release(upstream, f"{dists_url}/InRelease", suite, key)
    if isinstance(release, str):
        return f"its InRelease: {release}"
    for name in ("Packages.gz", "Packages"):
        listed = release.files.get(f"main/binary-amd64/{name}")
        reply = upstream.get(f"{dists_url}/main/binary-amd64/{name}")
        if reply.found:
            if listed is None or hashlib.sha256(reply.body).hexdigest() != listed.sha256:
                return f"main/binary-amd64/{name}: SHA-256 is not the one its InRelease lists"
            body = decompressed(name, reply.body)
            break
    else:
        return {}
    found: dict[str, set[str]] = {}
    for fields in parse_stanzas(body.decode("utf-8", "replace")):
        if "Package" in fields and "Version" in fields:
            found.setdefault(fields["Package"], set()).add(fields["Version"])
    return found


def core_packages_check(
    dists_url: str, rel: matrix.Release, suite: str, key: Key
) -> Callable[[Upstream], str | None]:
    meta = f"amdrocm{major_minor(rel.version)}"

    def run(upstream: Upstream) -> str | None:
        index = _packages_index(upstream, dists_url, suite, key)
        if isinstance(index, str):
            return index
        versions = index.get(meta, set())
        pattern = re.compile(rel.stream.version_regex(rel))
        if not any(pattern.search(v) for v in versions):
            return f"no {meta} of {rel.version} in the index (has: {', '.join(sorted(versions))})"
        return None

    return run


def key_check(url: str, fingerprint: str) -> Callable[[Upstream], str | None]:
    def run(upstream: Upstream) -> str | None:
        reply = upstream.get(url)
        if not reply.found:
            return f"HTTP {reply.status}: no key there"
        found = primary_fingerprints(reply.body)
        if found != [fingerprint]:
            return f"holds {', '.join(found) or 'no key'}; the matrix pins {fingerprint}"
        return None

    return run


def _index_files(upstream: Upstream, index_url: str, project: str) -> list[str] | None:
    """The file names a PEP 503 project page links to; None when there is no page."""
    url = project_url(index_url, project)
    reply = upstream.get(url)
    if not reply.found:
        return None
    return [link.filename for link in parse_page(reply.body.decode("utf-8", "replace"), url)]


def _file_versions(files: list[str], project: str) -> set[str]:
    """The versions of ``project`` among its wheel and sdist file names."""
    versions = set()
    for name in files:
        try:
            if name.endswith(".whl"):
                dist, version, *_ = parse_wheel_filename(name)
            elif name.endswith(".tar.gz"):
                dist, version = parse_sdist_filename(name)
            else:
                continue
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        if dist == canonicalize_name(project):
            versions.add(str(version))
    return versions


def wheels_check(index_url: str, project: str, versions: list[str]) -> Callable:
    def run(upstream: Upstream) -> str | None:
        files = _index_files(upstream, index_url, project)
        if files is None:
            return f"no {project} project page"
        have = _file_versions(files, project)
        missing = [v for v in versions if v not in have]
        return f"no {project} wheel {', '.join(missing)}" if missing else None

    return run


def runtime_check(index_url: str, requirement: str) -> Callable:
    from packaging.requirements import Requirement

    req = Requirement(requirement)

    def run(upstream: Upstream) -> str | None:
        files = _index_files(upstream, index_url, req.name)
        if files is None:
            return f"no {req.name} project page (torch requires {requirement})"
        have = _file_versions(files, req.name)
        if not any(req.specifier.contains(v, prereleases=True) for v in have):
            return f"no {req.name} matching {requirement} ({', '.join(sorted(have))})"
        return None

    return run


def no_index_check(index_url: str) -> Callable:
    def run(upstream: Upstream) -> str | None:
        files = _index_files(upstream, index_url, "torch")
        if files:
            versions = sorted(_file_versions(files, "torch"), key=Version)
            return f"the index exists now (torch {', '.join(versions[-3:])}): add it to the matrix"
        return None

    return run


def build_checks(
    releases: list[matrix.Release], fingerprints: dict[str, str] | None = None
) -> list[Check]:
    """The checks of the releases' rows. ``fingerprints``: stream name (or "*" for every
    stream) -> the key fingerprint a mirror signs with instead of AMD's."""
    fingerprints = fingerprints or {}

    def pinned(stream: matrix.Stream) -> str:
        found = fingerprints.get(stream.name) or fingerprints.get("*") or stream.key_fingerprint
        return found.upper()

    driver_key = (matrix.AMDGPU_KEY_URL, pinned(matrix.CLASSIC))
    checks: list[Check] = []
    repositories: dict[str, tuple[matrix.Repository, matrix.Stream]] = {}
    indexes: dict[str, list[matrix.Release]] = {}
    for rel in releases:
        stream, repo = rel.stream, rel.repository
        repositories.setdefault(repo.key_url, (repo, stream))
        for row in matrix.DISTROS:
            pub = rel.publication(row)
            if pub is None:
                continue
            base = stream.repository_url(repo.base_url, rel, pub)
            dists = f"{base}/dists/{pub.suite}"
            what = f"InRelease {pub.directory or pub.suite}"
            if not any(c.url == f"{dists}/InRelease" for c in checks):
                checks.append(
                    Check(
                        rel.version,
                        what,
                        f"{dists}/InRelease",
                        inrelease_check(
                            f"{dists}/InRelease",
                            pub.suite,
                            stream.pin_origin,
                            (repo.key_url, pinned(stream)),
                        ),
                    )
                )
            if stream is matrix.CORE_SDK:
                checks.append(
                    Check(
                        rel.version,
                        f"packages in {pub.directory}",
                        f"{dists}/main/binary-amd64/Packages.gz",
                        core_packages_check(dists, rel, pub.suite, (repo.key_url, pinned(stream))),
                    )
                )
        driver = matrix.amdgpu_repo_version(rel)
        origin = matrix.CLASSIC.pin_origin if stream is matrix.CLASSIC else None
        if driver:
            suites = sorted({row.suite for row in matrix.DISTROS if rel.publication(row)})
            for suite in suites:
                url = f"{matrix.AMDGPU_APT_BASE_URL}/{driver}/ubuntu/dists/{suite}/InRelease"
                if not any(c.url == url for c in checks):
                    checks.append(
                        Check(
                            rel.version,
                            f"amdgpu {driver} {suite}",
                            url,
                            # AMD's classic pin covers the driver repository only in the
                            # classic stream; under the Core SDK nothing pins it.
                            inrelease_check(url, suite, origin, driver_key),
                        )
                    )
        if rel.torch_index:
            indexes.setdefault(rel.torch_index, []).append(rel)
        else:
            url = f"{matrix.PYTORCH_INDEX_BASE_URL}/rocm{major_minor(rel.version)}"
            checks.append(Check(rel.version, "no PyTorch index", url, no_index_check(url)))
        if rel.amd_wheels:
            checks += amd_wheel_checks(rel, rel.amd_wheels)
    for key_url, (repo, stream) in repositories.items():
        expected = fingerprints.get(stream.name) or fingerprints.get("*") or stream.key_fingerprint
        run = key_check(key_url, expected.upper())
        checks.append(Check(f"key {repo.name}", "fingerprint", key_url, run))
    for index, rels in indexes.items():
        url = f"{matrix.PYTORCH_INDEX_BASE_URL}/{index}"
        builds = rels[0].torch_builds
        for project in ("torch", "torchvision", "torchaudio"):
            versions = [f"{v}+{index}" for b in builds if (v := getattr(b, project))]
            if versions:
                run = wheels_check(url, project, versions)
                checks.append(Check(index, f"{project} wheels", f"{url}/{project}/", run))
        if rels[0].torch_runtime:
            checks.append(
                Check(index, "ROCm runtime", f"{url}/", runtime_check(url, rels[0].torch_runtime))
            )
    return checks


def amd_wheel_checks(rel: matrix.Release, amd: matrix.AmdWheels) -> list[Check]:
    """AMD's index for a release: the ``rocm`` runtime torch requires, every pinned torch /
    torchvision / torchaudio build with the release's label, and each target's
    ``amd-torch-device-<gfx>`` of every build offered to it."""
    url = amd.url.rstrip("/")
    checks = [
        Check(rel.version, "AMD ROCm runtime", f"{url}/rocm/", runtime_check(url, amd.runtime))
    ]
    for project in ("torch", "torchvision", "torchaudio"):
        versions = [f"{v}+{amd.label}" for b in amd.builds if (v := getattr(b, project))]
        run = wheels_check(url, project, sorted(set(versions), key=Version))
        checks.append(Check(rel.version, f"AMD {project} wheels", f"{url}/{project}/", run))
    for gfx in amd.targets:
        project = f"amd-torch-device-{gfx}"
        versions = [f"{b.torch}+{amd.label}" for b in amd.builds_for([gfx])]
        run = wheels_check(url, project, versions)
        checks.append(Check(rel.version, f"AMD {project}", f"{url}/{project}/", run))
    return checks


# --- releases the matrix lacks -------------------------------------------------------------


def missing_releases(
    upstream: Upstream, fingerprints: dict[str, str] | None = None
) -> list[dict[str, str]]:
    """Releases upstream publishes that the matrix lacks (from the oldest the matrix has);
    a Core SDK index is read only once verified (``fingerprints`` as for ``build_checks``)."""
    fingerprints = fingerprints or {}
    core_key = (
        fingerprints.get(matrix.CORE_SDK.name)
        or fingerprints.get("*")
        or matrix.CORE_SDK.key_fingerprint
    )
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
            index = _packages_index(upstream, dists, pub.suite, (repo.key_url, core_key))
            if isinstance(index, str):
                continue  # not verified: not read (its InRelease check says why)
            for name, versions in index.items():
                if not is_core_sdk_meta_package(name):
                    continue
                for version in versions:
                    release = version.split("-", 1)[0]
                    if release not in known and is_full_release(release):
                        missing.setdefault(release, f"{dists} ({name} {version})")
    return [
        {"release": v, "where": where}
        for v, where in sorted(missing.items(), key=lambda item: release_key(item[0]))
    ]


# --- running --------------------------------------------------------------------------------


def check_matrix(
    upstream: Upstream,
    release: str | None = None,
    fingerprints: dict[str, str] | None = None,
    workers: int = 8,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Run every check (of one release, with ``release``); the report ``--json`` prints.
    ``progress`` (the bundle's display, on stderr by default) gets a line per check, and on
    a terminal a live count of the bytes fetched."""
    if release is not None:
        try:
            releases = [matrix.release(release)]
        except KeyError:
            raise UsageError(
                f"--release {release}: not a release the matrix knows "
                f"({', '.join(matrix.release_versions())})"
            ) from None
    else:
        releases = list(matrix.RELEASES)
    from rocm_fleet.offline.download import Progress

    checks = build_checks(releases, fingerprints)
    progress = progress or Progress()
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

    def run(check: Check) -> Check:
        try:
            problem = check.run(upstream)
        except Unreachable as exc:
            check.status, check.detail = "unreachable", str(exc)
        else:
            check.status, check.detail = ("wrong", problem) if problem else ("ok", "")
        return check

    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(run, check) for check in checks]
        for future in as_completed(futures):
            checked = future.result()
            step(f"{checked.row} {checked.what}: {checked.status}")
    missing: list[dict[str, str]] = []
    if release is None:
        try:
            missing = missing_releases(upstream, fingerprints)
        except Unreachable as exc:
            unreachable.append(str(exc))
        step(f"releases upstream: {len(missing)} the matrix lacks")
    progress.finish(f"for {total} checks")
    statuses = [c.status for c in checks]
    status = worst([
        *([Exit.NOT_CHECKED] if "unreachable" in statuses or unreachable else []),
        *([Exit.FINDINGS] if "wrong" in statuses or missing else []),
    ])  # fmt: skip
    return {
        "exit_status": status,
        "checks": [c.json() for c in checks],
        "missing_releases": missing,
        "releases_checked": release is None and not unreachable,
        "unreachable": unreachable,
    }


def render_report(report: dict[str, Any]) -> str:
    checks = report["checks"]
    out = []
    for check in checks:
        if check["status"] != "ok":
            out.append(
                f"{check['status'].upper():<11} {check['row']:<22} {check['what']}: "
                f"{check['detail']}  <{check['url']}>"
            )
    for item in report["missing_releases"]:
        out.append(f"{'MISSING':<11} {item['release']:<22} upstream publishes it: {item['where']}")
    for error in report["unreachable"]:
        out.append(f"{'UNREACHABLE':<11} {'releases upstream':<22} {error}")
    counts = {s: sum(c["status"] == s for c in checks) for s in ("ok", "wrong", "unreachable")}
    checked = f"{len(checks)} checks" if len(checks) != 1 else "1 check"
    if checks and counts["unreachable"] == len(checks):
        summary = f"checked nothing: upstream unreachable for all {checked}"
    else:
        summary = (
            f"{checked}: {counts['ok']} ok, {counts['wrong']} wrong, "
            f"{counts['unreachable']} unreachable (not checked)"
        )
    # Releases upstream has that the matrix lacks: asked only without --release, and known
    # only when the listings could be read.
    if report["unreachable"]:
        summary += "; releases upstream publishes: not checked (unreachable)"
    elif report.get("releases_checked", True):
        missing = len(report["missing_releases"])
        summary += f"; {missing} release{'s' if missing != 1 else ''} upstream publishes that "
        summary += "the matrix lacks"
    out.append(summary)
    return "\n".join(out)


# --- command line ---------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    import argparse

    parser = commands.add_parser(
        "matrix",
        help="the compatibility matrix; `matrix check` compares it with upstream",
        description="The compatibility matrix rocm-fleet installs from: each ROCm release, "
        "its distros, stream, driver and PyTorch builds (`matrix check`: does upstream agree).",
        epilog=epilog("Here: 0 the matrix printed."),
    )
    parser.add_argument("--json", action="store_true", help="print the matrix as JSON")
    parser.set_defaults(run=run)
    sub = parser.add_subparsers(dest="matrix_command")
    check = sub.add_parser(
        "check",
        help="check every row against upstream (or a mirror)",
        description="Ask upstream (or a mirror) about every row of the matrix: signed "
        "suites, packages, driver folders, key fingerprints, the wheels of each PyTorch index; "
        "and list releases upstream publishes that the matrix lacks.",
        epilog=epilog(
            "Here: 0 every row holds; 1 a row is wrong or a release is missing (each named); "
            "2 upstream did not answer for a row (not checked) and nothing was found wrong"
        ),
    )
    check.add_argument("--release", help="check only this release's row")
    check.add_argument(
        "--apt-base",
        help="mirror of AMD's hosts, one directory per host (URL/repo.radeon.com/rocm/apt/...)",
    )
    check.add_argument(
        "--torch-base", help=f"mirror of {matrix.PYTORCH_INDEX_BASE_URL} (URL/rocm7.2/torch/...)"
    )
    check.add_argument(
        "--key-fingerprint",
        action="append",
        default=[],
        metavar="[STREAM=]FINGERPRINT",
        help="the key a mirror signs with instead of AMD's, for one stream "
        f"({', '.join(s.name for s in matrix.STREAMS)}) or all (repeatable)",
    )
    check.add_argument(
        "--timeout", type=float, default=20.0, help="seconds per request (default 20)"
    )
    check.add_argument("--retries", type=int, default=3, help="retries per request (default 3)")
    check.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the report as JSON"
    )


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


def run(args: Any) -> int:
    if getattr(args, "matrix_command", None) != "check":
        print(json.dumps(matrix_json(), indent=2) if args.json else plain_table())
        return 0
    fingerprints = _fingerprints(args.key_fingerprint)
    upstream = Upstream(
        _url(args.apt_base, "--apt-base"), _url(args.torch_base, "--torch-base"),
        args.timeout, args.retries,
    )  # fmt: skip
    report = check_matrix(upstream, args.release, fingerprints)
    print(json.dumps(report, indent=2) if args.json else render_report(report))
    return report["exit_status"]


if __name__ == "__main__":  # the README's release table: python -m rocm_fleet.cli.matrix
    print(release_table())
