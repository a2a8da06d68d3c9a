"""Whether upstream publishes what a site's matrix data adds (the matrix check's checks)."""

from concurrent.futures import ThreadPoolExecutor

from rocm_fleet.model import matrix
from rocm_fleet.model.site_data import SiteData
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.matrix_check import MatrixCheck, build_checks, run_check


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
