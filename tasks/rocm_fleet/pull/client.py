"""The node's side of pull mode: its own target, fetched and verified by TUF's client from the
root a push installed (docs/decisions/pull-mode-trust.md)."""

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import requests
from tuf.api import exceptions
from tuf.api.metadata import Metadata, Root
from tuf.ngclient import FetcherInterface, Updater, UpdaterConfig

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model import pulled
from rocm_fleet.model.pulled import PulledState, PullRefused
from rocm_fleet.pull import sealed
from rocm_fleet.upstream.http import client, reason

#: Seconds a connection or a pause in a download may take.
SOCKET_TIMEOUT = 30
#: The record of what the node applied, beside the metadata TUF keeps.
APPLIED = "applied.json"


class NoRedirectFetcher(FetcherInterface):
    """TUF's downloads through the one HTTP client: no redirect, no proxy from the
    environment, TLS against ``ca`` alone when given (else the system's CAs)."""

    def __init__(self, ca: str | None = None):
        self._session = client("pull", 2, ca=ca, system_cas=True, redirects=0,
                               proxies_from_environment=False, timeout=SOCKET_TIMEOUT)  # fmt: skip

    def _fetch(self, url: str) -> Iterator[bytes]:
        try:
            response = self._session.get(url, stream=True)
        except requests.Timeout as exc:
            raise exceptions.SlowRetrievalError from exc
        except requests.RequestException as exc:
            raise exceptions.DownloadError(f"{url}: {reason(exc)}") from exc
        if response.status_code >= 300:
            response.close()
            status = response.status_code
            what = "a redirect, which the pull never follows" if status < 400 else ""
            raise exceptions.DownloadHTTPError(
                f"{url} answered HTTP {status}{' (' + what + ')' if what else ''}", status
            )
        return self._chunks(response)

    @staticmethod
    def _chunks(response: requests.Response) -> Iterator[bytes]:
        try:
            yield from response.iter_content(64 * 1024)
        except (requests.Timeout, requests.ConnectionError) as exc:
            raise exceptions.SlowRetrievalError from exc
        finally:
            response.close()


def _root_version(data: bytes) -> int:
    return Metadata[Root].from_bytes(data).signed.version


def _bootstrap(metadata_dir: Path, trusted_root: Path) -> bytes | None:
    """The root TUF starts from: the pushed one, or None when ``metadata_dir`` holds a verified
    root at least as new."""
    pushed = trusted_root.read_bytes()
    cached = metadata_dir / "root.json"
    try:
        if _root_version(cached.read_bytes()) >= _root_version(pushed):
            return None
    except (OSError, ValueError, exceptions.RepositoryError):
        pass  # none verified yet, or unreadable: the pushed root
    return pushed


def read_applied(metadata_dir: Path) -> int | None:
    try:
        return int(json.loads((metadata_dir / APPLIED).read_text())["serial"])
    except FileNotFoundError:
        return None


def record_applied(metadata_dir: Path, serial: int) -> None:
    write_atomically(metadata_dir / APPLIED, json.dumps({"serial": serial}) + "\n", mode=0o600)


def fetch(
    repository: str,
    metadata_dir: Path,
    trusted_root: Path,
    node: str,
    ca: str | None = None,
    seal_key: Path | None = None,
    fetcher: FetcherInterface | None = None,
) -> PulledState:
    """``node``'s verified state from the TUF repository at ``repository`` (its own delegated
    role's target, opened with ``seal_key`` when sealed), downloaded by ``fetcher`` (default
    ``NoRedirectFetcher(ca)``); PullRefused, with the metric's result, when it can't be
    fetched, verified, opened or used."""
    metadata_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    base = repository.rstrip("/")
    try:
        bootstrap = _bootstrap(metadata_dir, trusted_root)
    except (OSError, ValueError, exceptions.RepositoryError) as exc:
        raise PullRefused("no-trusted-root", f"the trusted root {trusted_root} (installed "
                          f"by a push) can't be read: {exc}") from None  # fmt: skip
    with tempfile.TemporaryDirectory(dir=metadata_dir, prefix=".download.") as download:
        try:
            updater = Updater(
                metadata_dir=str(metadata_dir), metadata_base_url=f"{base}/metadata/",
                target_dir=download, target_base_url=f"{base}/targets/",
                fetcher=fetcher or NoRedirectFetcher(ca), bootstrap=bootstrap,
                config=UpdaterConfig(targets_max_length=pulled.MAX_TARGET_BYTES * 4),
            )  # fmt: skip
            updater.refresh()
            info = updater.get_targetinfo(pulled.target_path(node))
            if info is None:
                raise PullRefused("no-target", f"the repository has no target for this node "
                                  f"({pulled.target_path(node)})")  # fmt: skip
            if info.length > pulled.MAX_TARGET_BYTES:
                raise PullRefused("invalid-data", f"the target is {info.length} bytes, over "
                                  f"{pulled.MAX_TARGET_BYTES}")  # fmt: skip
            path = updater.download_target(info, str(Path(download) / "target.json"))
            content = Path(path).read_bytes()
        except exceptions.ExpiredMetadataError as exc:
            # The node's role or the targets expire past a freeze by the online key alone.
            signed = "targets" in str(exc) or "node-" in str(exc)
            refresh = "rocm-fleet publish" if signed else "rocm-fleet publish --timestamp"
            raise PullRefused(
                "expired",
                f"the repository's metadata has expired ({exc}): an old repository served "
                f"again (a freeze), or one nobody refreshed ({refresh})",
            ) from None
        except exceptions.BadVersionNumberError as exc:
            raise PullRefused("rollback", f"the repository's metadata goes back to an older "
                              f"version ({exc})") from None  # fmt: skip
        except exceptions.UnsignedMetadataError as exc:
            raise PullRefused("bad-signature", f"the repository's metadata is not signed by "
                              f"the keys this node trusts ({exc})") from None  # fmt: skip
        except (exceptions.RepositoryError, exceptions.DownloadLengthMismatchError) as exc:
            raise PullRefused("unverified", f"the repository's data fails verification "
                              f"({type(exc).__name__}: {exc})") from None  # fmt: skip
        except exceptions.DownloadError as exc:
            raise PullRefused("fetch-failed", f"could not fetch from {base} "
                              f"({type(exc).__name__}: {exc})") from None  # fmt: skip
        except requests.RequestException as exc:
            raise PullRefused("fetch-failed", f"could not fetch from {base} ({exc})") from None
    try:
        key = sealed.load_key(seal_key) if seal_key else None
    except (OSError, ValueError) as exc:
        raise PullRefused("sealed", f"this node's seal key can't be read: {exc}") from None
    return pulled.parse(sealed.open_sealed(content, node, key), node, read_applied(metadata_dir))
