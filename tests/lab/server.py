"""The lab's one HTTP(S) server, standing in for the Debian mirror, repo.radeon.com and
download.pytorch.org at their real URLs (hosts resolve those names to it via /etc/hosts;
upstreams.py says which names and document roots).

One process, ports 80 and 443, routing by Host header to per-upstream document roots.
Run as a script (`python server.py CONFIG.json`) inside the lab's client netns; only the
standard library is imported at module level so it needs nothing from the lab package.

Why HTTP/1.1: trixie's apt (OpenSSL) fails over TLS against an HTTP/1.0 server
("unexpected eof while reading").  Why byte ranges (``Range: bytes=A-B``, 206): apt and
``rocm-fleet bundle`` resume broken downloads with them, and the fleet mirror's nginx fetches
packages and wheels in slices.  Why several addresses: each upstream has its own, so a
host's route to one can be closed while the others stay reachable.  Why a control file:
tests flip faults (503, dropped connections) per upstream at runtime without restarting
the server; it is re-read on every request.  Every request is logged as a JSON line (with
the body bytes it sent) so tests can assert what a deploy fetched and how much.

`Server` (bottom) is the handle the fleet uses to start, stop and steer the process.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

# How long a killed process may take to be gone (a shuffled lab run under load took > 5 s).
KILLED_EXIT_SECONDS = 60.0

FAULTS = ("503", "drop")

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".deb": "application/vnd.debian.binary-package",
    ".whl": "application/octet-stream",
    ".key": "application/pgp-keys",
    ".gz": "application/gzip",
}


class _Control:
    """Fault and overlay settings, re-read from the control file on every request (it is
    tiny, and mtime-based caching misses two writes within one coarse kernel timestamp
    tick)."""

    def __init__(self, path: Path):
        self.path = path
        self._settings: dict[str, dict] = {}

    def _read(self) -> dict[str, dict]:
        try:
            self._settings = json.loads(self.path.read_text() or "{}")
        except FileNotFoundError:
            self._settings = {}
        except ValueError:
            pass  # cannot happen with atomic replace; keep the previous settings
        return self._settings

    def fault(self, host: str) -> str | None:
        return self._read().get("faults", {}).get(host)

    def overlays(self, host: str) -> list[Path]:
        """Trees served in front of the host's own (read after fault())."""
        return [Path(p) for p in self._settings.get("overlays", {}).get(host, [])]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "rocm-fleet-lab"
    sys_version = ""

    # Set on the class by serve().
    routes: dict[str, list[Path]] = {}
    control: _Control
    log_path: Path
    log_lock = threading.Lock()

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def log_message(self, format: str, *args: object) -> None:
        pass  # requests go to the JSON log instead

    def _log(self, host: str, status: int | str, sent: int = 0) -> None:
        entry = {
            "time": round(time.time(), 3),
            "scheme": "https" if isinstance(self.connection, ssl.SSLSocket) else "http",
            "host": host,
            "method": self.command,
            "path": self.path,
            "status": status,
            "client": self.client_address[0],
            "user_agent": self.headers.get("User-Agent", ""),
            "range": self.headers.get("Range", ""),
            "bytes": sent,
        }
        with self.log_lock, open(self.log_path, "a") as fh:
            fh.write(json.dumps(entry) + "\n")

    def _simple(
        self, host: str, status: int, text: str, extra: dict[str, str] | None = None
    ) -> None:
        body = (text + "\n").encode()
        self.send_response(status)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self._log(host, status, 0 if self.command == "HEAD" else len(body))

    def _serve(self, head: bool) -> None:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower().strip("[]")
        fault = self.control.fault(host)
        if fault == "drop":
            self._log(host, "drop")
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "503":
            self._simple(host, 503, "Service Unavailable (lab fault)", {"Retry-After": "1"})
            return
        path = unquote(urlsplit(self.path).path)
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") for p in parts):
            self._simple(host, 400, "bad path")
            return
        for root in [*self.control.overlays(host), *self.routes.get(host, [])]:
            candidate = root.joinpath(*parts)
            if candidate.is_dir():
                if not path.endswith("/"):
                    self._simple(host, 301, "moved", {"Location": path + "/"})
                    return
                candidate = candidate / "index.html"
            if candidate.is_file():
                self._send_file(host, candidate, head)
                return
        self._simple(host, 404, "Not Found")

    def _send_file(self, host: str, path: Path, head: bool) -> None:
        st = path.stat()
        ims = self.headers.get("If-Modified-Since")
        if ims:
            try:
                since = email.utils.parsedate_to_datetime(ims).timestamp()
            except (TypeError, ValueError):
                since = None
            if since is not None and int(st.st_mtime) <= since:
                self.send_response(304)
                self.send_header("Content-Length", "0")
                self.end_headers()
                self._log(host, 304)
                return
        span = _byte_range(self.headers.get("Range", ""), st.st_size)
        if span == "unsatisfiable":
            self._simple(
                host, 416, "Range Not Satisfiable", {"Content-Range": f"bytes */{st.st_size}"}
            )
            return
        first, last = span or (0, st.st_size - 1)
        status = 206 if span else 200
        self.send_response(status)
        self.send_header("Content-Type", _TYPES.get(path.suffix, "application/octet-stream"))
        self.send_header("Accept-Ranges", "bytes")
        if span:
            self.send_header("Content-Range", f"bytes {first}-{last}/{st.st_size}")
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        self.end_headers()
        sent = 0
        if not head:
            with open(path, "rb") as fh:
                fh.seek(first)
                while sent <= last - first and (
                    chunk := fh.read(min(1 << 20, last - first + 1 - sent))
                ):
                    self.wfile.write(chunk)
                    sent += len(chunk)
        self._log(host, status, sent)


def _byte_range(header: str, size: int) -> tuple[int, int] | str | None:
    """(first, last) of a single ``bytes=A-B`` / ``bytes=A-`` / ``bytes=-N`` range
    (RFC 9110 14.1.2); None for no or an unusable header (the whole file is sent),
    "unsatisfiable" for one that starts past the end."""
    if not header.startswith("bytes=") or "," in header:
        return None
    start, _, end = header[len("bytes=") :].strip().partition("-")
    try:
        if not start:
            return (max(size - int(end), 0), size - 1) if end and size else None
        first = int(start)
        last = min(int(end), size - 1) if end else size - 1
    except ValueError:
        return None
    if first >= size:
        return "unsatisfiable"
    return (first, last) if first <= last else None


class _TLSServer(ThreadingHTTPServer):
    """Wraps each accepted socket in TLS inside its worker thread (a slow handshake must
    not block the accept loop)."""

    daemon_threads = True
    context: ssl.SSLContext

    def finish_request(self, request, client_address):  # type: ignore[override]
        try:
            request = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            super().finish_request(request, client_address)
        finally:
            with contextlib.suppress(OSError):
                request.close()


class _PlainServer(ThreadingHTTPServer):
    daemon_threads = True


def serve(config_path: str) -> None:
    """Entry point of the server process."""
    cfg = json.loads(Path(config_path).read_text())
    _Handler.routes = {h: [Path(r) for r in roots] for h, roots in cfg["routes"].items()}
    _Handler.control = _Control(Path(cfg["control"]))
    _Handler.log_path = Path(cfg["log"])
    servers: list[ThreadingHTTPServer] = []
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cfg["cert"], cfg["key"])
    for address in cfg["addresses"]:
        servers.append(_PlainServer((address, cfg["http_port"]), _Handler))
        tls = _TLSServer((address, cfg["https_port"]), _Handler)
        tls.context = ctx
        servers.append(tls)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    Path(cfg["ready"]).write_text(str(os.getpid()))
    stop.wait()
    for s in servers:
        s.shutdown()
        s.server_close()


# --- handle used by the fleet --------------------------------------------------------------


class Server:
    """Start/stop the server process in a netns and steer its faults.

    Faults: `set_down(host, True)` makes that upstream answer 503; `mode="drop"` closes
    connections without answering.  `requests()` returns the parsed request log.
    """

    def __init__(
        self,
        workdir: Path,
        netns: str,
        addresses: Sequence[str],
        routes: dict[str, list[Path]],
        cert: Path,
        key: Path,
        python: str = sys.executable,
    ):
        self.workdir = workdir
        self.netns = netns
        self.addresses = list(addresses)
        self.control_path = workdir / "control.json"
        self.log_path = workdir / "requests.log"
        self.stderr_path = workdir / "server.stderr"
        self.config_path = workdir / "server.json"
        self._ready = workdir / "ready"
        self._faults: dict[str, str] = {}
        self._overlays: dict[str, list[str]] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.python = python
        self.config = {
            "addresses": list(addresses),
            "http_port": 80,
            "https_port": 443,
            "routes": {h: [str(r) for r in rs] for h, rs in routes.items()},
            "cert": str(cert),
            "key": str(key),
            "control": str(self.control_path),
            "log": str(self.log_path),
            "ready": str(self._ready),
        }

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self, timeout: float = 10.0) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config, indent=2))
        self._write_control()
        self.log_path.touch()
        self._ready.unlink(missing_ok=True)
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        # `ip netns exec` execs (no fork), so Popen.pid is the server's own pid.
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                [
                    "ip",
                    "netns",
                    "exec",
                    self.netns,
                    self.python,
                    str(Path(__file__).resolve()),
                    str(self.config_path),
                ],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while not self._ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"lab server exited ({self.proc.returncode}): "
                    f"{self.stderr_path.read_text()[-2000:]}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("lab server did not become ready")
            time.sleep(0.02)
        os.kill(self.proc.pid, 0)  # still alive (not a stray that lost the port)

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                # SIGKILL can't be refused, but a loaded machine may take its time to reap.
                self.proc.wait(KILLED_EXIT_SECONDS)
        self.proc = None

    def _write_control(self) -> None:
        tmp = self.control_path.with_name(".control.tmp")
        tmp.write_text(json.dumps({"faults": self._faults, "overlays": self._overlays}))
        os.replace(tmp, self.control_path)

    def set_overlay(self, host: str, tree: Path | None) -> None:
        """Serve ``tree`` in front of the upstream's own files (a path found in it wins);
        None takes the overlay away again."""
        if tree is None:
            self._overlays.pop(host, None)
        else:
            self._overlays[host] = [str(tree)]
        self._write_control()

    def set_down(self, host: str, down: bool = True, mode: str = "503") -> None:
        """Make one upstream fail (503 or dropped connections) or recover."""
        if mode not in FAULTS:
            raise ValueError(f"mode must be one of {FAULTS}")
        if down:
            self._faults[host] = mode
        else:
            self._faults.pop(host, None)
        self._write_control()

    def clear_faults(self) -> None:
        self._faults.clear()
        self._write_control()

    def requests(self, host: str | None = None) -> list[dict[str, Any]]:
        entries = [json.loads(line) for line in self.log_path.read_text().splitlines() if line]
        return [e for e in entries if host is None or e["host"] == host]


if __name__ == "__main__":
    serve(sys.argv[1])
