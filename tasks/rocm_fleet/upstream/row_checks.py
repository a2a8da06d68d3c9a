"""A matrix row's checks: each takes an ``UpstreamClient``, returns None when the row holds,
else what is wrong; and the readers they share."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from rocm_fleet.model import matrix
from rocm_fleet.model.versions import major_minor
from rocm_fleet.upstream.aptrepo import (
    ReleaseFile,
    RepositoryError,
    decompressed,
    parse_release,
    parse_stanzas,
    signed_text,
)
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.openpgp import primary_fingerprints
from rocm_fleet.upstream.signature import SignatureError, check_release
from rocm_fleet.upstream.wheels import parse_page, project_url

Key = tuple[str, str]  # (URL, fingerprint) of the key a repository is signed with


def verified_release(upstream: UpstreamClient, url: str, suite: str, key: Key) -> ReleaseFile | str:
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
        release = parse_release(signed_text(reply.body, key_reply.body, url))
        check_release(release.fields, url, suite)
    except (RepositoryError, SignatureError) as exc:
        return str(exc).removeprefix(f"{url}: ")
    return release


def inrelease_check(url: str, suite: str, origin: str | None,
                    key: Key) -> Callable[[UpstreamClient], str | None]:  # fmt: skip
    def run(upstream: UpstreamClient) -> str | None:
        release = verified_release(upstream, url, suite, key)
        if isinstance(release, str):
            return release
        fields = release.fields
        if origin is not None and fields.get("Origin") != origin:
            return f"declares Origin {fields.get('Origin')!r}; the matrix pins {origin!r}"
        return None

    return run


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
            body = decompressed(name, reply.body)
            break
    else:
        return {}
    found: dict[str, set[str]] = {}
    for fields in parse_stanzas(body.decode("utf-8", "replace")):
        if "Package" in fields and "Version" in fields:
            found.setdefault(fields["Package"], set()).add(fields["Version"])
    return found


def core_packages_check(dists_url: str, rel: matrix.Release, suite: str,
                        key: Key) -> Callable[[UpstreamClient], str | None]:  # fmt: skip
    meta = f"amdrocm{major_minor(rel.version)}"

    def run(upstream: UpstreamClient) -> str | None:
        index = packages_index(upstream, dists_url, suite, key)
        if isinstance(index, str):
            return index
        versions = index.get(meta, set())
        pattern = re.compile(rel.stream.version_regex(rel))
        if not any(pattern.search(v) for v in versions):
            return f"no {meta} of {rel.version} in the index (has: {', '.join(sorted(versions))})"
        return None

    return run


def key_check(url: str, fingerprint: str) -> Callable[[UpstreamClient], str | None]:
    def run(upstream: UpstreamClient) -> str | None:
        reply = upstream.get(url)
        if not reply.found:
            return f"HTTP {reply.status}: no key there"
        found = primary_fingerprints(reply.body)
        if found != [fingerprint]:
            return f"holds {', '.join(found) or 'no key'}; the matrix pins {fingerprint}"
        return None

    return run


def index_files(upstream: UpstreamClient, index_url: str, project: str) -> list[str] | None:
    """The file names a PEP 503 project page links to; None when there is no page."""
    url = project_url(index_url, project)
    reply = upstream.get(url)
    if not reply.found:
        return None
    return [link.filename for link in parse_page(reply.body.decode("utf-8", "replace"), url)]


def file_versions(files: list[str], project: str) -> set[str]:
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


def _listed(upstream: UpstreamClient, index_url: str, project: str) -> set[str] | None:
    files = index_files(upstream, index_url, project)
    return None if files is None else file_versions(files, project)


def wheels_check(index_url: str, project: str, versions: list[str]) -> Callable:
    def run(upstream: UpstreamClient) -> str | None:
        have = _listed(upstream, index_url, project)
        if have is None:
            return f"no {project} project page"
        missing = [v for v in versions if v not in have]
        return f"no {project} wheel {', '.join(missing)}" if missing else None

    return run


def runtime_check(index_url: str, requirement: str) -> Callable:
    from packaging.requirements import Requirement

    req = Requirement(requirement)

    def run(upstream: UpstreamClient) -> str | None:
        have = _listed(upstream, index_url, req.name)
        if have is None:
            return f"no {req.name} project page (torch requires {requirement})"
        if not any(req.specifier.contains(v, prereleases=True) for v in have):
            return f"no {req.name} matching {requirement} ({', '.join(sorted(have))})"
        return None

    return run


def no_index_check(index_url: str) -> Callable:
    def run(upstream: UpstreamClient) -> str | None:
        files = index_files(upstream, index_url, "torch")
        if files:
            versions = sorted(file_versions(files, "torch"), key=Version)
            return f"the index exists now (torch {', '.join(versions[-3:])}): add it to the matrix"
        return None

    return run
