"""A hostile server against the bundle's downloads: more bytes than the signed index's
``Size``, no Content-Length and no end, a huge announced length, a byte a second, a
redirect from https to http. Each is cut off with one clear error and nothing kept."""

from __future__ import annotations

import contextlib
import hashlib
import io
import time
from http.server import BaseHTTPRequestHandler

import pytest
import requests

from rocm_fleet.upstream.http import DownloadError, Fetcher, NoDowngradeSession
from rocm_fleet.upstream.progress import DownloadProgress
from unit.loopback import running, url_of


def quiet() -> DownloadProgress:
    return DownloadProgress(io.StringIO())


class Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sent: dict[str, int] = {}

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path
        self.send_response(200)
        if path == "/endless":  # no Content-Length, no end: close-delimited
            self.send_header("Connection", "close")
            self.end_headers()
            self._send_forever(b"x" * 65536)
        elif path == "/announced":  # a length far beyond any limit
            self.send_header("Content-Length", str(10**12))
            self.end_headers()
            self._send_forever(b"y" * 65536)
        elif path == "/drip":  # a byte every 0.1 s, forever
            self.send_header("Connection", "close")
            self.end_headers()
            self._send_forever(b"z", pause=0.1)
        elif path.startswith("/longer/"):  # more than it should, without saying so up front
            self.send_header("Connection", "close")
            self.end_headers()
            self._send_forever(b"L" * 4096)
        else:
            body = b"ok"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def _send_forever(self, block: bytes, pause: float = 0.0) -> None:
        total = 0
        try:
            for _ in range(100_000):
                self.wfile.write(block)
                self.wfile.flush()
                total += len(block)
                Hostile.sent[self.path] = total
                if pause:
                    time.sleep(pause)
        except OSError:
            pass  # the client cut it off


@contextlib.contextmanager
def hostile():
    with running(Hostile) as server:
        yield url_of(server)


def test_a_file_longer_than_its_signed_size_is_cut_off_at_size_plus_one(tmp_path):
    with hostile() as url:
        fetcher = Fetcher(progress=quiet(), retries=0)
        dest = tmp_path / "pool" / "a.deb"
        with pytest.raises(DownloadError, match=r"more than the 5000 bytes its index says"):
            fetcher.file(f"{url}/longer/a.deb", dest, "00" * 32, size=5000)
    assert fetcher.counts.fetched_bytes <= 5000
    assert not dest.exists() and not dest.with_name("a.deb.part").exists()


def test_an_index_longer_than_its_signed_size_is_cut_off(tmp_path):
    with hostile() as url:
        fetcher = Fetcher(progress=quiet(), retries=0)
        with pytest.raises(DownloadError, match=r"more than the 100 bytes its index says"):
            fetcher.content(f"{url}/longer/Packages", size=100)


def test_a_response_without_length_or_end_stops_at_the_cap(tmp_path):
    with hostile() as url:
        fetcher = Fetcher(progress=quiet(), retries=0, content_cap=1 << 20, file_cap=2 << 20)
        with pytest.raises(DownloadError, match=r"more than the 1048576 bytes the cap"):
            fetcher.content(f"{url}/endless")
        dest = tmp_path / "x.whl"
        with pytest.raises(DownloadError, match=r"more than the 2097152 bytes the cap"):
            fetcher.file(f"{url}/endless", dest, "00" * 32)
        assert not dest.with_name("x.whl.part").exists()


def test_an_announced_length_beyond_the_limit_is_refused_before_reading():
    with hostile() as url:
        fetcher = Fetcher(progress=quiet(), retries=0)
        started = time.monotonic()
        with pytest.raises(DownloadError, match=r"more than the \d+ bytes the cap"):
            fetcher.content(f"{url}/announced")
        assert time.monotonic() - started < 5
        assert fetcher.counts.fetched_bytes == 0


def test_a_server_sending_a_byte_at_a_time_is_cut_off_at_the_deadline(tmp_path):
    with hostile() as url:
        # Each read gets a byte well within the read timeout: only the deadline stops it.
        fetcher = Fetcher(progress=quiet(), retries=0, timeout=(5, 5), deadline=1.0)
        started = time.monotonic()
        with pytest.raises(DownloadError, match=r"not done within 1 s, the deadline"):
            fetcher.file(f"{url}/drip", tmp_path / "slow.deb", "00" * 32, size=10**6)
        assert time.monotonic() - started < 4
        with pytest.raises(DownloadError, match=r"deadline"):
            fetcher.content(f"{url}/drip")


def _redirect(from_url: str, location: str) -> requests.Response:
    response = requests.Response()
    response.url = from_url
    response.status_code = 302
    response.headers["Location"] = location
    return response


def test_a_redirect_from_https_to_http_is_refused():
    session = NoDowngradeSession()
    with pytest.raises(DownloadError, match=r"from https to http; refused"):
        session.get_redirect_target(
            _redirect("https://download.pytorch.org/whl/x", "http://evil.example/x")
        )
    with pytest.raises(DownloadError, match="refused"):
        session.get_redirect_target(_redirect("https://a.example/x", "HTTP://a.example/y"))
    assert (
        session.get_redirect_target(_redirect("https://a.example/x", "https://b.example/y"))
        == "https://b.example/y"
    )
    assert session.get_redirect_target(_redirect("https://a.example/x", "/y")) == "/y"
    assert (
        session.get_redirect_target(_redirect("http://a.example/x", "http://b/y")) == "http://b/y"
    )


def test_a_file_of_the_right_size_still_verifies(tmp_path):
    with hostile() as url:
        fetcher = Fetcher(progress=quiet(), retries=0)
        dest = tmp_path / "ok"
        assert fetcher.file(f"{url}/ok", dest, hashlib.sha256(b"ok").hexdigest(), size=2)
        assert dest.read_bytes() == b"ok"
        assert fetcher.content(f"{url}/ok", size=2) == b"ok"
