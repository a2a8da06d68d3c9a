"""Wheels in a bundle, hash-checked, and PEP 503 pages listing only the bundled files."""

import functools
import html
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rocm_fleet.bundle.apt import Files, sha256_hex, write_file
from rocm_fleet.model import matrix
from rocm_fleet.upstream.http import DownloadError, Fetcher
from rocm_fleet.upstream.manifest import BundleError, bundle_path, confined, parsing
from rocm_fleet.upstream.resolution import Target, resolve
from rocm_fleet.upstream.wheels import (
    Link,
    dist_metadata,
    parse_page,
    project_url,
    sdist_build_requires,
    untrusted_index,
)


def add_wheel_set(
    index_url: str,
    runtime: matrix.HostRuntime,
    requirements: list[str],
    hosts: list[str],
    fetcher: Fetcher,
    out: Path,
    files: Files,
    pages: dict[str, dict[str, list[tuple[str, Link]]]],
) -> dict[str, Any]:
    """Resolve, fetch and verify ``requirements`` for one Python on one https index."""
    problem = untrusted_index(index_url)
    if problem:
        raise BundleError(f"can't bundle the wheels of {', '.join(hosts)}: {problem}")
    target = Target(runtime)
    where = index_url

    @functools.cache
    def page(name: str) -> list[Link]:
        url = project_url(index_url, name)
        try:
            data = fetcher.content(url)
            with parsing(url, "PEP 503 page"):
                return parse_page(data.decode("utf-8"), url)
        except DownloadError as exc:
            if "HTTP 404" in str(exc):
                return []
            raise

    @functools.cache
    def metadata(link: Link) -> str:
        """A wheel's core metadata: the index's PEP 658 copy when published, else the wheel's."""
        if link.metadata_sha256:
            data = fetcher.content(link.url + ".metadata")
            if sha256_hex(data) == link.metadata_sha256:
                with parsing(link.url + ".metadata", "core metadata file"):
                    return data.decode("utf-8")
        path = _wheel(link, fetcher, out)
        with parsing(link.url, "wheel"):
            return dist_metadata(str(path))

    @functools.cache
    def build_requires(link: Link) -> list[str]:
        """An sdist's build requirements (``upstream.wheels``): bundled beside it."""
        return sdist_build_requires(str(_wheel(link, fetcher, out)))

    with parsing(where, "wheel index (a requirement or version)"):
        pins = resolve(requirements, page, metadata, target, where, build_requires)
    pinned = {}
    for name, pin in sorted(pins.items()):
        link = pin.candidate.link
        path = bundle_path(link.url)
        size = _wheel(link, fetcher, out).stat().st_size
        for reason in pin.why:
            files.add(path, link.url, link.sha256 or "", size,
                      "#sha256 published by the index",
                      f"{name} {pin.candidate.version}: {reason} ({target.describe()}, "
                      f"{index_url})")  # fmt: skip
        pages.setdefault(index_url, {}).setdefault(name, [])
        if (path, link) not in pages[index_url][name]:
            pages[index_url][name].append((path, link))
        pinned[name] = {"version": str(pin.candidate.version), "path": path, "why": pin.why}
        if pin.build:
            pinned[name]["build"] = True
        if not pin.runtime:
            pinned[name]["runtime"] = False
    return {
        "index_url": index_url,
        "python": runtime.python,
        "glibc": runtime.glibc,
        "requirements": requirements,
        "hosts": hosts,
        "pins": pinned,
    }


def _wheel(link: Link, fetcher: Fetcher, out: Path) -> Path:
    if not link.sha256:
        raise BundleError(f"{link.url}: the index publishes no #sha256 for it; not bundled")
    path = confined(out, bundle_path(link.url), link.url)
    fetcher.file(link.url, path, link.sha256)
    return path


def write_pages(
    index_url: str, projects: dict[str, list[tuple[str, Link]]], out: Path, files: Files
) -> None:
    """PEP 503 pages listing the bundled files only, with relative links."""

    def write(url: str, page: str, why: str) -> None:
        data = page.encode()
        path = bundle_path(url) + "index.html"
        write_file(out, path, data)
        files.add(path, url, sha256_hex(data), len(data), "written by rocm-fleet bundle", why)

    root = index_url.rstrip("/") + "/"
    rows = "".join(f'<a href="{quote(name)}/">{html.escape(name)}</a><br/>\n' for name in projects)
    write(root, _page(f"Links for {index_url}", rows), "the index's project list")
    for name, entries in projects.items():
        page_dir = bundle_path(project_url(index_url, name))
        lines = []
        for path, link in sorted(entries, key=lambda e: e[0]):
            href = quote(os.path.relpath(path, page_dir)) + f"#sha256={link.sha256}"
            requires = (
                f' data-requires-python="{html.escape(link.requires_python)}"'
                if link.requires_python
                else ""
            )
            lines.append(
                f'<a href="{html.escape(href)}"{requires}>{html.escape(link.filename)}</a><br/>\n'
            )
        write(
            project_url(index_url, name),
            _page(f"Links for {name}", "".join(lines)),
            f"the page listing the bundled wheels of {name}",
        )


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html>\n<head><meta name="pypi:repository-version" content="1.0">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
        f"{body}</body>\n</html>\n"
    )
