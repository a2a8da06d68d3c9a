"""PyTorch's files, read: RELEASE.md's Release Compatibility Matrix and wheel index project
pages (PEP 503), saved or fetched over https."""

import re
from pathlib import Path
from urllib.parse import unquote

from rocm_fleet.matrix.inputs import MatrixDataError, version_key

# The columns of PyTorch's Release Compatibility Matrix the tool reads (torch_stable_rocm).
RECORDED_COLUMNS = ("PyTorch version", "Stable ROCm")


def release_matrix(text: str) -> list[dict[str, str]]:
    """The rows of RELEASE.md's Release Compatibility Matrix, each by its column names."""
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if "Release Compatibility Matrix" in line), None
    )
    if start is None:
        raise MatrixDataError("RELEASE.md: no 'Release Compatibility Matrix' heading")
    header = None
    rows: list[dict[str, str]] = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= {"-", " ", ":"}:
            continue
        rows.append(dict(zip(header, cells, strict=False)))
    if header is None or not set(RECORDED_COLUMNS) <= set(header):
        raise MatrixDataError(
            "RELEASE.md: the matrix table has no 'PyTorch version' or 'Stable ROCm' column"
        )
    return rows


def torch_stable_rocm(text: str) -> dict[str, str]:
    """torch minor -> its stable ROCm, from RELEASE.md's Release Compatibility Matrix."""
    out: dict[str, str] = {}
    for row in release_matrix(text):
        match = re.fullmatch(r"ROCm ([0-9.]+)", row.get("Stable ROCm", ""))
        if match:
            out[row["PyTorch version"]] = match.group(1)
    return dict(sorted(out.items(), key=lambda kv: version_key(kv[0]), reverse=True))


def built_rocm(text: str) -> set[str]:
    """The ROCm versions PyTorch's build matrix record built a stable torch for."""
    import tomllib

    try:
        stable = tomllib.loads(text).get("stable", {})
        return {rocm for entry in stable.values() for rocm in entry["rocm"]}
    except (tomllib.TOMLDecodeError, KeyError, TypeError, AttributeError) as err:
        raise MatrixDataError(f"pytorch-rocm-builds.toml: {err}") from None


def torch_index(version: str, stable: dict[str, str] | set[str]) -> str | None:
    """A ROCm release's download.pytorch.org index where ``stable`` names its exact release
    (6.2.4 -> rocm6.2.4) or its minor (6.4.3 -> rocm6.4)."""
    named = set(stable.values()) if isinstance(stable, dict) else stable
    minor = ".".join(version.split(".")[:2])
    return next((f"rocm{c}" for c in (version, minor) if c in named), None)


LISTING_CAP = 8 * 1024 * 1024  # bytes: whl/rocm7.2/torch/ is ~100 KiB


def listed_versions(html: str, page_url: str) -> dict[str, list[str]]:
    """A PEP 503 project page -> local label ("rocm6.3", "" for none) -> its wheels' versions."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    from rocm_fleet.upstream.wheels import parse_page

    out: dict[str, set[str]] = {}
    for link in parse_page(html, page_url):
        if not link.filename.endswith(".whl"):
            continue
        try:
            _name, version, _build, _tags = parse_wheel_filename(unquote(link.filename))
        except InvalidWheelFilename as err:
            raise MatrixDataError(f"{page_url}: {err}") from None
        out.setdefault(version.local or "", set()).add(version.public)
    return {label: sorted(vs, key=version_key) for label, vs in sorted(out.items())}


def read_listing(where: str) -> tuple[str, str]:
    """(the page, its URL) from a saved page or an https URL (at most LISTING_CAP bytes)."""
    if not where.startswith(("https://", "http://")):
        path = Path(where)
        try:
            return path.read_text(), path.resolve().as_uri()
        except (OSError, UnicodeDecodeError) as err:
            raise MatrixDataError(f"listing {where}: {err}") from None
    if not where.startswith("https://"):
        raise MatrixDataError(f"{where}: a listing is read over https only")
    from rocm_fleet.upstream.http import DownloadError, Fetcher

    fetcher = Fetcher(retries=2, content_cap=LISTING_CAP)
    try:
        return fetcher.content(where).decode(), where
    except (DownloadError, UnicodeDecodeError) as err:
        raise MatrixDataError(f"listing {where}: {err}") from None
    finally:
        fetcher.close()


def listing_versions(listings: dict[str, tuple[str, str]]) -> dict[str, dict[str, dict]]:
    """index -> project (default torch) -> local label -> versions."""
    out: dict[str, dict[str, dict]] = {}
    for key, (page, url) in sorted(listings.items()):
        index, _, project = key.partition("/")
        out.setdefault(index, {})[project or "torch"] = listed_versions(page, url)
    return out
