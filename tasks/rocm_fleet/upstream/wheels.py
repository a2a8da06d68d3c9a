"""A PEP 503 index as pip reads it (a project page's links; whether its hashes can be trusted)
and distribution files, read without installing or running anything."""

import email.parser
import re
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin

from mousebender.simple import from_project_details_html
from packaging.utils import InvalidSdistFilename, canonicalize_name, parse_sdist_filename


class ResolutionError(Exception):
    """Requirements the index can't meet for a Python; names the requirement."""


def is_sdist(filename: str) -> bool:
    """Whether a file of an index is a source distribution (PEP 625: ``.tar.gz``)."""
    try:
        parse_sdist_filename(filename)
    except InvalidSdistFilename:
        return False
    return True


_SDIST_MEMBER_LIMIT = 1 << 20  # the most of an sdist's PKG-INFO or pyproject.toml read
_PIP_DEFAULT = ("setuptools>=40.8.0",)  # build requirements without [build-system] requires


def _sdist_member(path: str, member: str) -> str:
    """One top-level file ``<name>-<version>/<member>`` of an sdist, read without extracting."""
    try:
        with tarfile.open(path, "r:gz") as archive:
            top = {name.split("/", 1)[0] for name in archive.getnames()}
            if len(top) != 1:
                raise ResolutionError(f"{path}: not one top-level directory in the sdist")
            try:
                info = archive.getmember(f"{top.pop()}/{member}")
            except KeyError:
                raise ResolutionError(f"{path}: no {member} in the sdist") from None
            if not info.isfile() or info.size > _SDIST_MEMBER_LIMIT:
                raise ResolutionError(f"{path}: its {member} is not a file of at most 1 MiB")
            handle = archive.extractfile(info)
            assert handle is not None
            return handle.read().decode("utf-8")
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise ResolutionError(f"{path}: not a readable sdist ({type(exc).__name__})") from None


def sdist_metadata(path: str) -> str:
    """An sdist's ``PKG-INFO``; ResolutionError when its Requires-Dist is dynamic (PEP 643)."""
    text = _sdist_member(path, "PKG-INFO")
    message = email.parser.Parser().parsestr(text, headersonly=True)
    dynamic = {value.strip().lower() for value in message.get_all("Dynamic") or []}
    if "requires-dist" in dynamic:
        raise ResolutionError(f"{path}: its Requires-Dist is dynamic (known only once built)")
    return text


def sdist_build_requires(path: str) -> list[str]:
    """An sdist's ``[build-system] requires`` (pip's default when none); refuses backend-path."""
    try:
        text = _sdist_member(path, "pyproject.toml")
    except ResolutionError:
        return [*_PIP_DEFAULT]
    try:
        build_system = tomllib.loads(text).get("build-system", {})
    except tomllib.TOMLDecodeError as exc:
        raise ResolutionError(f"{path}: unreadable pyproject.toml ({exc})") from None
    if not isinstance(build_system, dict):
        raise ResolutionError(f"{path}: [build-system] of its pyproject.toml is not a table")
    if "backend-path" in build_system:
        raise ResolutionError(
            f"{path}: its pyproject.toml names a backend-path {build_system['backend-path']!r} "
            "(a build backend inside the sdist, run as root on every host); refused"
        )
    requires = build_system.get("requires", [*_PIP_DEFAULT])
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise ResolutionError(f"{path}: [build-system] requires is not a list of strings")
    return requires


def dist_metadata(path: str) -> str:
    """The core metadata of an sdist or a wheel (``*.dist-info/METADATA``) file."""
    if is_sdist(path.rsplit("/", 1)[-1]):
        return sdist_metadata(path)
    with zipfile.ZipFile(path) as wheel:
        names = [n for n in wheel.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
        if len(names) != 1:
            raise ResolutionError(f"{path}: not one .dist-info/METADATA in the wheel")
        return wheel.read(names[0]).decode("utf-8")


@dataclass(frozen=True)
class Link:
    url: str  # absolute, without the fragment
    filename: str
    sha256: str | None
    requires_python: str | None
    metadata_sha256: str | None  # PEP 658/714: the .metadata file's hash, when published


def parse_page(text: str, page_url: str) -> list[Link]:
    """A PEP 503 project page's file links, resolved against ``page_url``, yanked left out."""
    links = []
    for file in from_project_details_html(text, "")["files"]:
        if file.get("yanked"):
            continue
        metadata = file.get("core-metadata", file.get("dist-info-metadata"))
        metadata_hashes = metadata if isinstance(metadata, dict) else {}  # or True: no hash
        url = urldefrag(urljoin(page_url, file["url"]))[0]
        sha256 = _lower(file["hashes"].get("sha256"))
        metadata_sha256 = _lower(metadata_hashes.get("sha256"))
        links.append(
            Link(url, file["filename"], sha256, file.get("requires-python"), metadata_sha256)
        )
    return links


def _lower(digest: str | None) -> str | None:
    return digest.lower() if digest else None


def untrusted_index(index_url: str) -> str | None:
    """Why ``index_url``'s hashes can't pin anything (not https), with the ways out; or None."""
    if index_url.lower().startswith("https://"):
        return None
    return (
        f"{index_url} is not https, and the hashes that pin every host's wheels are read only "
        "over verified TLS; set pytorch_index_base_url to an https:// index (a TLS mirror of "
        "it), or serve the wheels from a bundle on the fleet mirror (`rocm-fleet bundle`, made "
        "where the index is reachable over TLS)"
    )


def project_url(index_url: str, name: str) -> str:
    return f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"
