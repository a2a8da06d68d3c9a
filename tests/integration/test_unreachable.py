"""An index the controller can't reach: one line naming the host, saying that the machine
running pyinfra is the one that must reach it and the ways out (a proxy, a bundle, a copied
lock), shortened from the middle so that the cause at its end stays.

The unreachable server is a real closed port on loopback (the connection is refused by this
machine's own kernel), reached with the real Fetcher and Locks (``upstream.http``,
``upstream.lock``).
"""

from __future__ import annotations

import io
import socket

import pytest
import requests

from rocm_fleet.model.matrix import HostRuntime
from rocm_fleet.upstream.http import Fetcher, Unreachable, reason, shorten
from rocm_fleet.upstream.lock import LockError, LockRequest, Locks
from rocm_fleet.upstream.progress import DownloadProgress


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed again)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetcher() -> Fetcher:
    return Fetcher(timeout=(2.0, 2.0), retries=0, progress=DownloadProgress(io.StringIO()))


def test_a_refused_connection_names_the_host_and_its_cause(closed_port):
    url = f"https://127.0.0.1:{closed_port}/whl/rocm6.4/torch/"
    with pytest.raises(Unreachable) as refused:
        fetcher().content(url)
    assert refused.value.host == f"127.0.0.1:{closed_port}"
    assert str(refused.value).startswith(f"{url}: 127.0.0.1:{closed_port} is unreachable from")
    assert refused.value.cause.endswith("Connection refused"), refused.value.cause
    assert "object at 0x" not in str(refused.value) and "\n" not in str(refused.value)


def test_a_file_that_never_starts_is_unreachable_not_a_broken_transfer(closed_port, tmp_path):
    url = f"https://127.0.0.1:{closed_port}/whl/torch-2.9.1-cp311-linux_x86_64.whl"
    with pytest.raises(Unreachable, match="Connection refused"):
        fetcher().file(url, tmp_path / "torch.whl", "0" * 64)
    assert list(tmp_path.iterdir()) == []


def test_the_cause_is_what_urllib3_says_last(closed_port):
    with pytest.raises(requests.ConnectionError) as failed:
        requests.get(f"http://127.0.0.1:{closed_port}/", timeout=2)
    assert "Caused by NewConnectionError" in str(failed.value)  # requests' wording
    said = reason(failed.value)
    assert said == "Failed to establish a new connection: [Errno 111] Connection refused"
    assert "Max retries" not in said and "Caused by" not in said, said


def test_a_long_message_gives_up_its_middle():
    text = "a" * 400 + " the cause"
    short = shorten(text, 100)
    assert len(short) == 100 and short.endswith(" the cause") and "…" in short
    assert short.startswith("a" * 39)
    assert shorten("short", 100) == "short"


def test_the_lock_says_who_must_reach_the_index_and_the_ways_out(closed_port, tmp_path):
    index = f"https://127.0.0.1:{closed_port}/whl/rocm6.4"
    # dozens of requirements: the message keeps its end (the cause), not its first 500 bytes
    requirements = ["torch==2.9.1+rocm6.4", *(f"package-{i:02d}==1.0.{i}" for i in range(40))]
    request = LockRequest.of(index, requirements, HostRuntime("3.11", "2.36"))
    locks = Locks(tmp_path / "locks", fetcher=fetcher)
    with pytest.raises(LockError) as refused:
        locks.lines(request)
    message = str(refused.value)
    assert "\n" not in message and len(message) < 800, message
    assert message.startswith("can't lock package-00==1.0.0, package-01==1.0.1, "), message
    assert "…" in message and "package-20" not in message  # the middle given up
    host = f"127.0.0.1:{closed_port}"
    assert f"(glibc 2.36): {host} is unreachable from this machine (" in message
    assert "Connection refused); the machine running pyinfra locks the wheels and must " \
        f"reach {host}: give it a proxy (HTTPS_PROXY)" in message  # fmt: skip
    assert f"a bundle made where {host} is reachable (rocm-fleet bundle, rocm_mirror_bundle)" \
        in message  # fmt: skip
    assert message.endswith("or serve the wheels from a TLS fleet mirror")
    # asked again (another host of the run): the same failure, not a second attempt
    with pytest.raises(LockError) as again:
        locks.lines(request)
    assert str(again.value) == message
