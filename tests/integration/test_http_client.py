"""The one HTTP client (``upstream.http.client`` and ``read_limited``) against loopback
servers: redirects (limited, never https to http, none where the caller follows none), the
size limit, TLS (a certificate nobody trusts, a pinned CA over ``REQUESTS_CA_BUNDLE``), the
environment's proxies and the User-Agent."""

import ssl
from http.server import BaseHTTPRequestHandler

import pytest
import requests

from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.http import (
    MAX_REDIRECTS,
    DownloadError,
    DownloadProgress,
    Fetcher,
    TooLong,
    Unreachable,
    client,
    read_limited,
)
from rocm_fleet.upstream.http import Unreachable as UpstreamUnreachable
from rocm_fleet.version import __version__
from unit.loopback import running, serve, serve_tls, url_of

BODY = b"the file\n"


class Answers(BaseHTTPRequestHandler):
    """``/hop/N`` redirects to ``/hop/N-1``, ``/hop/0`` to ``/file``; ``/to?URL`` redirects
    to URL; ``/endless`` sends without a Content-Length until the connection closes;
    ``/announces`` says its body is larger than it is; every path and User-Agent is kept."""

    protocol_version = "HTTP/1.1"
    agents: list[str] = []
    paths: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        Answers.agents.append(self.headers.get("User-Agent", ""))
        Answers.paths.append(self.path)
        if self.path.startswith("/hop/"):
            left = int(self.path.rsplit("/", 1)[1])
            self._redirect(f"/hop/{left - 1}" if left else "/file")
        elif self.path.startswith("/to?"):
            self._redirect(self.path[4:])
        elif self.path == "/endless":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            for _ in range(64):
                self.wfile.write(b"x" * 1024)
        elif self.path == "/announces":
            self.send_response(200)
            self.send_header("Content-Length", str(10**9))
            self.end_headers()
            self.wfile.write(b"x" * 10)
        else:
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture
def answers():
    with running(Answers) as server:
        yield url_of(server)


@pytest.fixture
def answers_tls(tmp_path):
    from rocm_fleet.model.tls import make_mirror_files

    made = make_mirror_files(tmp_path / "tls", ["127.0.0.1"]).tls
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(made.cert, made.key)
    with running(Answers, context) as server:
        yield f"https://127.0.0.1:{server.server_address[1]}", made.ca


def _fetcher() -> Fetcher:
    return Fetcher(timeout=(5, 5), retries=0, progress=DownloadProgress(open("/dev/null", "w")))


def test_redirects_are_followed_up_to_the_limit_and_no_further(answers):
    fetcher = _fetcher()
    assert fetcher.content(f"{answers}/hop/{MAX_REDIRECTS - 1}") == BODY
    with pytest.raises(DownloadError, match=f"Exceeded {MAX_REDIRECTS} redirects"):
        fetcher.content(f"{answers}/hop/{MAX_REDIRECTS}")


def test_a_client_that_follows_no_redirect_gets_the_redirect_as_its_answer(answers):
    session = client("pull", redirects=0, timeout=5)
    with session.get(f"{answers}/hop/0") as reply:
        assert reply.status_code == 302 and reply.headers["Location"] == "/file"
        assert not reply.history


def test_a_redirect_from_https_to_http_is_refused_on_the_wire(answers, answers_tls, monkeypatch):
    url, ca = answers_tls
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca)
    fetcher = _fetcher()
    assert fetcher.content(f"{url}/hop/1") == BODY  # https to https: followed
    with pytest.raises(DownloadError, match=r"from https to http; refused"):
        fetcher.content(f"{url}/to?{answers}/file")


def test_more_than_the_limit_is_cut_off_announced_or_not(answers):
    session = client("test", timeout=5)
    with session.get(f"{answers}/file", stream=True) as reply:
        assert b"".join(read_limited(reply.url, reply, len(BODY))) == BODY  # exactly: taken
    with session.get(f"{answers}/file", stream=True) as reply, pytest.raises(TooLong):
        list(read_limited(reply.url, reply, len(BODY) - 1))
    with session.get(f"{answers}/endless", stream=True) as reply:
        taken = []
        with pytest.raises(TooLong):
            for chunk in read_limited(reply.url, reply, 5000):
                taken.append(chunk)
        assert sum(map(len, taken)) <= 5000  # never more than the room handed on
    with session.get(f"{answers}/announces", stream=True) as reply, pytest.raises(TooLong):
        next(read_limited(reply.url, reply, 1000))  # refused before a byte is read


def test_the_matrix_checks_limit_is_the_same_read(answers, monkeypatch):
    from rocm_fleet.upstream import client as upstream

    monkeypatch.setattr(upstream, "MAX_BODY_BYTES", 5000)
    with pytest.raises(UpstreamUnreachable, match="more than 5000 bytes: refused"):
        UpstreamClient(None, None, 5, 0).get(f"{answers}/endless")
    assert UpstreamUnreachable is Unreachable  # one Unreachable


def test_a_certificate_nobody_trusts_is_refused_and_is_not_unreachable(tmp_path, monkeypatch):
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "file").write_bytes(BODY)
    with serve_tls(tmp_path / "www", tmp_path / "tls") as served:
        with pytest.raises(DownloadError, match="CERTIFICATE_VERIFY_FAILED") as refused:
            _fetcher().content(f"{served.url}/file")
        assert not isinstance(refused.value, Unreachable)  # it was reached: TLS failed


def test_a_pinned_ca_alone_is_trusted_whatever_requests_ca_bundle_says(tmp_path, monkeypatch):
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "file").write_bytes(BODY)
    with (
        serve_tls(tmp_path / "www", tmp_path / "tls") as served,
        serve_tls(tmp_path / "www", tmp_path / "other") as other,
    ):
        # The environment trusts the other server's CA: the pinned one still decides.
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(other.ca))
        pinned = client("pull", ca=str(served.ca), timeout=5)
        assert pinned.get(f"{served.url}/file").content == BODY
        with pytest.raises(requests.exceptions.SSLError):
            pinned.get(f"{other.url}/file")
        assert client("bundle", timeout=5).get(f"{other.url}/file").content == BODY


def test_proxies_come_from_the_environment_unless_turned_off(tmp_path, answers, monkeypatch):
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", answers)  # a proxy that answers every URL itself
    (tmp_path / "file").write_bytes(b"from the server itself\n")
    with serve(tmp_path) as served:
        Answers.paths.clear()
        assert client("bundle", timeout=5).get(f"{served.url}/file").content == BODY
        assert Answers.paths == [f"{served.url}/file"]  # asked of the proxy, by full URL
        direct = client("pull", proxies_from_environment=False, timeout=5)
        assert direct.get(f"{served.url}/file").content == b"from the server itself\n"
        assert Answers.paths == [f"{served.url}/file"]


def test_every_request_names_rocm_fleet_and_its_purpose(answers):
    Answers.agents.clear()
    client("matrix check", timeout=5).get(f"{answers}/file")
    assert Answers.agents == [f"rocm-fleet/{__version__} (matrix check)"]


def test_the_pull_trusts_the_systems_cas_where_it_has_them_unless_a_ca_is_pinned(
    tmp_path, monkeypatch
):
    from rocm_fleet.upstream import http as download

    system = tmp_path / "ca-certificates.crt"
    monkeypatch.setattr(download, "SYSTEM_CA_BUNDLE", str(system))
    assert client("pull", system_cas=True).ca is None  # none on this system: requests' own
    system.write_text("")
    assert client("pull", system_cas=True).ca == str(system)
    assert client("pull", ca="/mirror-ca.crt", system_cas=True).ca == "/mirror-ca.crt"
    assert client("bundle").ca is None
