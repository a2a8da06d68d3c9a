"""A static HTTP server on 127.0.0.1 for the bundle's tests: a directory served with byte
ranges (``Range: bytes=N-``, answered 206 as RFC 9110 says), a log of each request, and a
fault that cuts one file's first transfer short (what a dropped connection does); over TLS
too (``serve_tls``: a CA of the test's own, which the caller's requests must trust)."""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit


class Served:
    def __init__(self, root: Path, port: int, scheme: str = "http"):
        self.root = root
        self.url = f"{scheme}://127.0.0.1:{port}"
        self.ca: Path | None = None  # over TLS: the CA that issued the server's certificate
        self.requests: list[dict[str, str | int]] = []
        self.cut_once: set[str] = set()  # paths whose next transfer stops halfway


def _handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path)
            target = served.root / path.lstrip("/")
            if target.is_dir():
                target = target / "index.html"
            entry: dict[str, str | int] = {"path": path, "range": self.headers.get("Range", "")}
            served.requests.append(entry)
            if not target.is_file():
                entry["status"] = 404
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = target.read_bytes()
            start = 0
            if entry["range"].startswith("bytes=") and entry["range"].endswith("-"):
                start = int(entry["range"][6:-1])
            if start >= len(data) and start:
                entry["status"] = 416
                self.send_response(416)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = data[start:]
            entry["status"] = 206 if start else 200
            self.send_response(entry["status"])
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if path in served.cut_once:
                served.cut_once.discard(path)
                entry["cut"] = len(body) // 2
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(body)

    return Handler


@contextlib.contextmanager
def running(
    handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None
) -> Iterator[ThreadingHTTPServer]:
    """``handler`` served on a free loopback port (over TLS with ``tls``), in a thread, until
    the block ends (the one server every loopback test of the unit suite runs)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def url_of(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


@contextlib.contextmanager
def serve(root: Path) -> Iterator[Served]:
    """Serve ``root`` on a free loopback port until the block ends."""
    with running(BaseHTTPRequestHandler) as server:
        served = Served(root, server.server_address[1])
        server.RequestHandlerClass = _handler(served)
        yield served


@contextlib.contextmanager
def serve_tls(root: Path, tls_dir: Path) -> Iterator[Served]:
    """Serve ``root`` over TLS on a free loopback port until the block ends, with a CA and a
    certificate for 127.0.0.1 and localhost made in ``tls_dir`` (``Served.ca``: what a client
    must trust, e.g. through ``REQUESTS_CA_BUNDLE``)."""
    from rocm_fleet.model.tls import make_mirror_files

    made = make_mirror_files(tls_dir, ["127.0.0.1", "localhost"]).tls
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(made.cert, made.key)
    with running(BaseHTTPRequestHandler, context) as server:
        served = Served(root, server.server_address[1], "https")
        served.ca = Path(made.ca)
        server.RequestHandlerClass = _handler(served)
        yield served


@contextlib.contextmanager
def serve_trusted(root: Path) -> Iterator[Served]:
    """``serve_tls`` (its CA made beside ``root``, in ``tls``), the CA trusted by requests for
    the block (``REQUESTS_CA_BUNDLE``), as a real index's is by the system's CAs: for what
    reads hashes over verified TLS only (the locks, the bundle's wheels)."""
    import pytest

    with pytest.MonkeyPatch.context() as patch, serve_tls(root, root.parent / "tls") as served:
        patch.setenv("REQUESTS_CA_BUNDLE", str(served.ca))
        yield served
