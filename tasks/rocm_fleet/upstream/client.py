"""Cached GETs of AMD's and PyTorch's servers, or a mirror's copy, for the matrix check."""

from __future__ import annotations

import re
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rocm_fleet.model import torch_builds

if TYPE_CHECKING:
    import requests

    from rocm_fleet.upstream.http import Unreachable

GONE = (403, 404, 410)  # what object stores answer for a path that isn't there
#: The most one answer may hold: more is refused, not read into memory.
MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass
class Response:
    url: str
    status: int
    body: bytes

    @property
    def found(self) -> bool:
        return self.status == 200


class UpstreamClient:
    """Cached GETs with mirror rewriting; a 403/404/410 is an answer, not an error."""

    AMD_HOSTS = ("repo.radeon.com", "repo.amd.com", "stable.repo.amd.com")

    def __init__(self, apt_base: str | None, torch_base: str | None, timeout: float, retries: int):
        self.apt_base = apt_base.rstrip("/") if apt_base else None
        self.torch_base = torch_base.rstrip("/") if torch_base else None
        self.timeout, self.retries = timeout, retries
        self._local = threading.local()
        self._lock = threading.Lock()
        self._cache: dict[str, Any] = {}
        self._fetched = 0  # bytes received, for the progress display

    def url(self, url: str) -> str:
        """Where ``url`` is fetched from: a mirror's copy when one is configured."""
        parts = urlsplit(url)
        if self.torch_base and url.startswith(torch_builds.PYTORCH_INDEX_BASE_URL):
            return self.torch_base + url[len(torch_builds.PYTORCH_INDEX_BASE_URL) :]
        if self.apt_base and parts.netloc in self.AMD_HOSTS:
            return f"{self.apt_base}/{parts.netloc}{parts.path}"
        return url

    def _session(self) -> requests.Session:
        if not hasattr(self._local, "session"):
            from rocm_fleet.upstream.http import client

            self._local.session = client("matrix check", self.retries, timeout=self.timeout)
        return self._local.session

    def fetched_bytes(self) -> int:
        """Bytes received so far, over every thread."""
        with self._lock:
            return self._fetched

    def get(self, url: str) -> Response:
        """The response for ``url`` (upstream form), fetched once; raises Unreachable."""
        with self._lock:
            first = url not in self._cache
            pending = self._cache.setdefault(url, Future())
        if first:
            pending.set_result(self._fetch(url))
        result = pending.result()
        if not isinstance(result, Response):  # an Unreachable
            raise result
        return result

    def _fetch(self, url: str) -> Response | Unreachable:
        import requests
        from urllib3.exceptions import HTTPError as Urllib3Error

        from rocm_fleet.upstream import http

        where = self.url(url)
        host = urlsplit(where).netloc or where
        try:
            with self._session().get(where, stream=True) as reply:
                body = b"".join(http.read_limited(where, reply, MAX_BODY_BYTES))
        except http.TooLong:
            cause = f"more than {MAX_BODY_BYTES} bytes: refused, not read on"
            return http.Unreachable(where, host, cause, f"{where}: {cause}")
        except (requests.RequestException, Urllib3Error, http.DownloadError) as exc:
            # urllib3's message repeats the pool and URL; keep what went wrong.
            what = re.sub(r"\w+ConnectionPool\([^)]*\): ", "", http.reason(exc))
            return http.Unreachable(where, host, what, f"{type(exc).__name__}: {what}")
        with self._lock:
            self._fetched += len(body)
        if reply.status_code == 200 or reply.status_code in GONE:
            return Response(where, reply.status_code, body)
        cause = f"HTTP {reply.status_code}"
        return http.Unreachable(where, host, cause, f"{cause} from {where}")
