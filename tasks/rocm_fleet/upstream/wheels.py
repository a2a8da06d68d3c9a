"""A PEP 503 index as pip reads it: a project page's links; whether its hashes can be trusted."""

from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin

from mousebender.simple import from_project_details_html
from packaging.utils import canonicalize_name


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
