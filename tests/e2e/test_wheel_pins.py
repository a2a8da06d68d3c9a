"""End to end: a host that installs torch straight from download.pytorch.org installs only
the wheels the controller locked by hash.

The controller (pyinfra, in the lab's client netns, trusting the lab CA as a real one
trusts the real upstreams') resolves the host's wheel set against the PyTorch double over
TLS and caches the lock; the host's pip installs it with ``--require-hashes``. Then
someone who controls what the host reads (here: the double itself, the strongest case;
the same holds on the wire or at a proxy) swaps torch's wheel and rewrites its
``#sha256`` on the page to match: the host's pip refuses it, the run names the wheel and
both hashes, and nothing is installed. A lock forged in the controller's cache is refused
(it isn't authenticated by the controller's key) and made again from upstream.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from e2e.support import changed, deploy, failed_hosts, running_lab, sh, succeeded
from lab import HostSpec

pytestmark = pytest.mark.e2e

PYTORCH = "download.pytorch.org"
VENV_PIP = "/opt/rocm-fleet/venv/bin/python -m pip"
HOSTS = [
    HostSpec("direct", suite="bookworm", profile="rx7900xtx",
             data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100",
                   "expected_gpu_count": 1}),
]  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3"])


def test_a_wheel_swapped_upstream_after_the_lock_is_refused_by_the_host(lab):
    first = deploy(lab)
    succeeded(first)
    index = lab.workdir / "www" / "pytorch" / "whl" / "rocm6.4"
    (wheel,) = index.glob("torch-2.9.1+rocm6.4-*.whl")
    genuine = hashlib.sha256(wheel.read_bytes()).hexdigest()
    # The controller's lock: cached once, the torch line pinned to the double's own file.
    (cached,) = (lab.home / ".cache" / "rocm-fleet" / "locks").glob("*.json")
    lock = json.loads(cached.read_text())
    assert lock["inputs"]["index_url"] == f"https://{PYTORCH}/whl/rocm6.4"
    assert f"torch==2.9.1+rocm6.4 --hash=sha256:{genuine}" in lock["lines"]
    assert "torch==2.9.1+rocm6.4" in sh(lab, "direct", f"{VENV_PIP} list --format=freeze")

    # Converged: nothing changes, and the controller reads nothing upstream.
    since = len(lab.server.requests())
    second = deploy(lab)
    succeeded(second)
    assert changed(second) == {}
    assert not [r for r in lab.server.requests()[since:] if r["host"] == PYTORCH]

    # A forged lock in the controller's cache (what a user who can write it would plant):
    # torch pinned to a hash of the attacker's, the file "checked" as the cache used to be
    # (a SHA-256 of its own lines) and carrying the genuine file's HMAC. The controller
    # refuses it, locks again from upstream, and the host installs the genuine torch.
    forged_lines = [line.replace(genuine, "f" * 64) for line in lock["lines"]]
    own_digest = hashlib.sha256("".join(f"{x}\n" for x in forged_lines).encode()).hexdigest()
    cached.write_text(json.dumps({**lock, "lines": forged_lines, "sha256": own_digest}))
    sh(lab, "direct", f"{VENV_PIP} uninstall -y -q torch")
    relocked = deploy(lab)
    succeeded(relocked)
    assert json.loads(cached.read_text()) == lock
    assert "torch==2.9.1+rocm6.4" in sh(lab, "direct", f"{VENV_PIP} list --format=freeze")

    # The swap: another valid wheel under torch's name, its hash on the page to match (what
    # an attacker who controls the host's route to the index serves).
    page = index / "torch" / "index.html"
    saved_wheel, saved_page = wheel.read_bytes(), page.read_text()
    vision = sorted(index.glob("torchvision-*.whl"))[0]
    try:
        shutil.copyfile(vision, wheel)
        swapped = hashlib.sha256(wheel.read_bytes()).hexdigest()
        page.write_text(saved_page.replace(genuine, swapped))
        sh(lab, "direct", f"{VENV_PIP} uninstall -y -q torch")
        third = deploy(lab)
    finally:
        wheel.write_bytes(saved_wheel)
        page.write_text(saved_page)
    assert failed_hosts(third) == ["direct"], third.output[-3000:]
    assert "DO NOT MATCH THE HASHES" in third.output, third.output[-3000:]
    assert "torch==2.9.1+rocm6.4" in third.output
    assert genuine in third.output and swapped in third.output
    assert "torch==" not in sh(lab, "direct", f"{VENV_PIP} list --format=freeze").lower()
    # With the genuine wheel back, the host converges again from the same lock.
    succeeded(deploy(lab))
