"""Hash-pinned wheels on the hosts: with a bundle, every wheel a host's pip installs is
pinned to the SHA-256 ``rocm-fleet bundle`` verified, and pip runs with
``--require-hashes``. An attacker between the host and the mirror (or at the mirror)
who swaps a wheel and rewrites the page's ``#sha256`` to match gets it refused by the
host's own pip, naming the wheel and both hashes: tried here with the real pip against
a bundle served over HTTP, as the mirror serves it."""

# ruff: noqa: F811  (the fixtures of test_bundle, imported)

from __future__ import annotations

import contextlib
import hashlib
import http.server
import re
import subprocess
import sys

import pytest

from rocm_fleet.bundle.build import Plan, make_bundle
from rocm_fleet.facts.python import VenvDistributions
from rocm_fleet.model import paths
from rocm_fleet.model.sources import HostNeeds, WheelNeed
from rocm_fleet.operations import python
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.manifest import locked_requirements
from unit.bundle.test_bundle import Quiet, needs_of, signer, upstream, wheel  # noqa: F401
from unit.loopback import running, url_of
from unit.opcases import run_op
from unit.surveys import checked, fact_key

VENV = paths.DEFAULT_VENV
#: the safe path rule's check before root runs the venv's python
SAFE = checked(paths.venv_python(VENV))
INDEX = "http://mirror:8080/download.pytorch.org/whl/rocm6.4"
WHEELS = {"torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+rocm6.4"}


def bundle_pins(bundle: str, need: WheelNeed) -> list[str] | None:
    """The bundle's lock of ``need``'s wheel set, as the deploy asks for it."""
    return locked_requirements(bundle, need.index_url, need.runtime.python, need.requirements())


@pytest.fixture
def bundled(upstream, signer, tmp_path):
    """A bundle of the wheel set for Python 3.11 (the one running the tests' pip)."""
    needs = needs_of(upstream, signer, python="3.11")
    plan = Plan()
    plan.add("node1", HostNeeds((), needs.wheels), {})
    out = tmp_path / "bundle"
    manifest = make_bundle(plan, out, Fetcher(progress=Quiet()))
    return out, manifest, needs.wheels[0]


def test_the_lock_pins_every_wheel_of_the_set_to_the_hash_the_bundle_verified(bundled):
    out, manifest, need = bundled
    lines = bundle_pins(str(out), need)
    (wheel_set,) = manifest["wheel_sets"]
    assert len(lines) == len(wheel_set["pins"]) == 7
    for line in lines:
        name, version, digest = re.fullmatch(
            r"(\S+)==(\S+) --hash=sha256:([0-9a-f]{64})", line
        ).groups()
        pin = wheel_set["pins"][name]
        assert pin["version"] == version
        assert hashlib.sha256((out / pin["path"]).read_bytes()).hexdigest() == digest
    assert any(line.startswith("torch==2.9.1+rocm6.4 --hash=sha256:") for line in lines)
    # Another Python, another index, a bundle that isn't there: nothing to pin with.
    from dataclasses import replace

    from rocm_fleet.model.matrix import HostRuntime

    assert bundle_pins(str(out), replace(need, runtime=HostRuntime("3.13", "2.41"))) is None
    assert bundle_pins(str(out), replace(need, index_url="https://x/whl")) is None
    assert bundle_pins(str(out / "nowhere"), need) is None


@contextlib.contextmanager
def mirror_of(root):
    """``root`` served as the mirror serves a bundle (static files, text/html pages)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    with running(Handler) as server:
        yield url_of(server)


def _pip_install(lock: list[str], index: str, target) -> subprocess.CompletedProcess:
    """The host's command, with pip installing into a directory instead of a venv."""
    host = index.split("/")[2]
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-input", "--disable-pip-version-check",
         "--no-cache-dir", "--require-hashes", "--only-binary=:all:", "--index-url", index,
         "--trusted-host", host, "--isolated", "--target", str(target), "-r", "/dev/stdin"],
        input="\n".join(lock) + "\n", capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_a_wheel_swapped_with_its_page_is_refused_by_the_hosts_pip(bundled, upstream, tmp_path):
    out, manifest, need = bundled
    lock = bundle_pins(str(out), need)
    upstream_host = upstream.url.removeprefix("https://")
    with mirror_of(out) as mirror:
        index = f"{mirror}/{upstream_host}/whl/rocm6.4"
        good = _pip_install(lock, index, tmp_path / "good")
        assert good.returncode == 0, good.stderr
        assert (tmp_path / "good" / "torch" / "__init__.py").exists()

        # The attacker's torch: a valid wheel of the same name, and the page rewritten to
        # give its hash, so that pip without pinned hashes would install it.
        (wheel_set,) = manifest["wheel_sets"]
        path = out / wheel_set["pins"]["torch"]["path"]
        genuine = hashlib.sha256(path.read_bytes()).hexdigest()
        evil = wheel(tmp_path / "evil", "torch", "2.9.1+rocm6.4", ("filelock",))
        path.write_bytes(evil.read_bytes())
        swapped = hashlib.sha256(path.read_bytes()).hexdigest()
        page = out / upstream_host / "whl/rocm6.4/torch/index.html"
        page.write_text(page.read_text().replace(genuine, swapped))

        refused = _pip_install(lock, index, tmp_path / "bad")
    assert refused.returncode != 0
    assert "DO NOT MATCH THE HASHES" in refused.stderr
    assert "torch" in refused.stderr and genuine in refused.stderr and swapped in refused.stderr
    assert not (tmp_path / "bad" / "torch").exists()


def test_pinned_wheels_with_a_lock_install_with_require_hashes_from_stdin():
    lock = [
        "torch==2.9.1+rocm6.4 --hash=sha256:" + "a" * 64,
        "torchvision==0.24.1+rocm6.4 --hash=sha256:" + "b" * 64,
    ]
    result = run_op(
        python.pinned_wheels,
        {fact_key(VenvDistributions, venv=VENV): None},
        venv_path=VENV,
        index_url=INDEX,
        wanted=WHEELS,
        locked=lock,
        proxy={"http_proxy": "http://proxy:3128"},
    )
    (text,) = result.texts
    assert text.startswith(f"{SAFE}printf '%s\\n' '{lock[0]}' '{lock[1]}' | env ")
    assert "--require-hashes --only-binary=:all:" in text
    assert text.endswith(f"--index-url {INDEX} --trusted-host mirror:8080 -r /dev/stdin")
    assert "http_proxy=http://proxy:3128" in text


def test_a_lock_with_an_sdist_installs_its_build_backend_first_then_builds_it():
    backend = "setuptools==80.9.0 --hash=sha256:" + "c" * 64
    rocm = "rocm==10.0.0 --hash=sha256:" + "a" * 64
    torch = "torch==2.9.1+rocm6.4 --hash=sha256:" + "b" * 64

    def texts(lock):
        return run_op(
            python.pinned_wheels, {fact_key(VenvDistributions, venv=VENV): None}, venv_path=VENV,
            index_url=INDEX, wanted=WHEELS, locked=lock,
        ).texts  # fmt: skip

    # Needed only to build: hash-checked into a scratch directory the build alone sees
    # (PYTHONPATH), removed after, so the venv keeps only the set; the set names the sdist
    # for pip (a name in --no-binary beats :all:) and builds it without isolation, which
    # would fetch setuptools unchecked.
    (text,) = texts([rocm, torch, f"{backend} # build requirement", "--no-binary=rocm"])
    # the venv's python, run by root, only after the safe path rule's check (before the
    # scratch directory is made, and before each of the two pip runs)
    assert text.startswith(SAFE) and text.count(SAFE) == 3
    text = text.replace(SAFE, "")
    assert text.startswith('scratch="$(mktemp -d)" || exit 1; ( ')
    first, second = text.split(" && ", 1)
    assert f"'{backend} # build requirement' | " in first
    assert '--require-hashes --only-binary=:all: --target "$scratch" --index-url' in first
    assert f"printf '%s\\n' '{rocm}' '{torch}' | env PYTHONPATH=\"$scratch\" " in second
    assert "--only-binary=:all: --no-binary=rocm --no-build-isolation --index-url" in second
    assert text.endswith('); status=$?; rm -rf "$scratch"; exit "$status"')
    # Needed by the set too (torch requires setuptools on Python 3.12): into the venv first.
    first, second = texts(
        [rocm, backend, torch, f"{backend} # build requirement", "--no-binary=rocm"]
    )
    assert first.startswith(f"{SAFE}printf '%s\\n' '{backend} # build requirement' | ")
    assert "--target" not in first and "scratch" not in second
    assert second.startswith(f"{SAFE}printf '%s\\n' '{rocm}' '{backend}' '{torch}' | ")
    assert "--no-binary=rocm --no-build-isolation" in second


def test_a_bundle_lock_pins_the_set_the_bundle_verified_and_never_falls_back(bundled):
    from dataclasses import replace

    from rocm_fleet.upstream.manifest import BundleError, bundle_lock

    out, _manifest, need = bundled
    lock = bundle_lock(str(out), need.index_url, need.runtime.python, need.requirements())
    assert lock == bundle_pins(str(out), need)
    other = replace(need, index_url="https://x/whl")
    with pytest.raises(BundleError, match=r"pins no wheel set for https://x/whl and Python 3\.11"):
        bundle_lock(str(out), other.index_url, other.runtime.python, other.requirements())
