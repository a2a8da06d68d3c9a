"""The controller's wheel locks (``upstream.lock``): a live host's wheel set resolved against
the index once for the whole fleet, every wheel pinned to the hash the index publishes,
cached on the controller and refused from the cache when it isn't the lock of these inputs;
and the deploy: a host that is to install gets the lock, a converged one reads nothing
upstream, one whose set can't be locked is refused before anything changes."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from rocm_fleet.model.matrix import HostRuntime
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.lock import LINE, LockError, LockRequest, Locks, read_cached
from unit.bundle.test_bundle import Quiet, index, wheel
from unit.loopback import serve_trusted as serve
from unit.surveys import SurveyHost, converged_survey, plan
from unit.test_plan import fresh

WANTED = ["torch==2.9.1+rocm6.4", "torchvision==0.24.1+rocm6.4"]
PY311 = HostRuntime("3.11", "2.36")
PY312 = HostRuntime("3.12", "2.39")


@pytest.fixture
def pytorch_index(tmp_path):
    """A PyTorch-like index (test_bundle.index) on a loopback server, over TLS."""
    www = tmp_path / "www"
    with serve(www) as served:
        index(www, served.url, served.url.replace("127.0.0.1", "localhost"))
        yield served


def locks_for(tmp_path: Path, notes: list[str] | None = None) -> Locks:
    return Locks(
        tmp_path / "cache",
        fetcher=lambda: Fetcher(timeout=(2.0, 5.0), retries=0, progress=Quiet()),
        note=(notes if notes is not None else []).append,
        key=tmp_path / "config" / "lock-key",
    )


def key_of(tmp_path: Path) -> bytes:
    return (tmp_path / "config" / "lock-key").read_bytes()


def published(served, name: str) -> dict[str, str]:
    """filename -> #sha256 of a project's page on the index."""
    page = (served.root / "whl/rocm6.4" / name / "index.html").read_text()
    return dict((f, h) for h, f in re.findall(r'#sha256=([0-9a-f]{64})"[^>]*>([^<]+)<', page))


def test_a_lock_pins_every_wheel_for_the_hosts_python_to_the_published_hash(
    pytorch_index, tmp_path
):
    url = f"{pytorch_index.url}/whl/rocm6.4"
    locks = locks_for(tmp_path)
    lines = locks.lines(LockRequest.of(url, WANTED, PY311))
    assert all(LINE.fullmatch(line) for line in lines)
    pins = {line.split("==")[0]: line.split("==")[1].split(" ")[0] for line in lines}
    assert pins == {"filelock": "3.20.0", "mpmath": "1.3.0", "networkx": "3.4.2",
                    "sympy": "1.13.3",  # ==1.13.3 on Python < 3.12
                    "torch": "2.9.1+rocm6.4", "torchvision": "0.24.1+rocm6.4",
                    "typing-extensions": "4.12.2"}  # fmt: skip
    for line in lines:
        name, version = line.split(" ")[0].split("==")
        digest = line.rsplit(":", 1)[1]
        files = {**published(pytorch_index, name)}
        (filename,) = [f for f in files if f.startswith(f"{name.replace('-', '_')}-{version}-")]
        assert files[filename] == digest
    # Another Python is another lock (sympy's marker); the same one from a new run and a
    # second host: read from the cache, nothing fetched.
    newer = locks.lines(LockRequest.of(url, WANTED, PY312))
    assert "sympy==1.14.0" in " ".join(newer)
    asked = len(pytorch_index.requests)
    again = locks_for(tmp_path)
    for _host in range(3):
        assert again.lines(LockRequest.of(url, list(reversed(WANTED)), PY311)) == lines
    assert len(pytorch_index.requests) == asked
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2


def test_a_tampered_or_misplaced_cached_lock_is_made_again_from_the_index(pytorch_index, tmp_path):
    url = f"{pytorch_index.url}/whl/rocm6.4"
    request = LockRequest.of(url, WANTED, PY311)
    genuine = locks_for(tmp_path).lines(request)
    path = tmp_path / "cache" / f"{request.key()}.json"
    stored = json.loads(path.read_text())
    assert stored["inputs"]["requirements"] == sorted(WANTED)

    # A hash edited in place: the file's HMAC no longer verifies.
    evil = [re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "e" * 64, line) for line in genuine]
    path.write_text(json.dumps({**stored, "lines": evil}))
    assert read_cached(tmp_path / "cache", request, key_of(tmp_path))[0] is None
    notes: list[str] = []
    assert locks_for(tmp_path, notes).lines(request) == genuine
    assert "not authenticated by this controller's lock key" in notes[0]
    assert notes[0].endswith("locking again from the index")
    assert json.loads(path.read_text()) == stored  # written again, whole

    # Consistent in itself but stored under another key (another Python's lock copied in).
    other = LockRequest.of(url, WANTED, PY312)
    other_path = tmp_path / "cache" / f"{other.key()}.json"
    other_path.write_text(path.read_text())
    lines, why = read_cached(tmp_path / "cache", other, key_of(tmp_path))
    assert lines is None and why.endswith(f"not the lock of {other.describe()}")
    # Truncated (a crash mid-write of an older version): unreadable, made again.
    path.write_text(path.read_text()[:40])
    why = read_cached(tmp_path / "cache", request, key_of(tmp_path))[1]
    assert why.endswith("unreadable (JSONDecodeError)")
    assert locks_for(tmp_path).lines(request) == genuine


def test_an_unreachable_index_or_a_missing_wheel_is_one_line_naming_index_and_requirement(
    pytorch_index, tmp_path
):
    locks = locks_for(tmp_path)
    missing = LockRequest.of(f"{pytorch_index.url}/whl/rocm6.4", ["torch==2.10.0+rocm6.4"], PY311)
    with pytest.raises(LockError) as refused:
        locks.lines(missing)
    text = str(refused.value)
    assert "\n" not in text and "torch==2.10.0+rocm6.4" in text
    # the live index is the final word (issue 38): a pin it doesn't serve is named as such
    assert f"{pytorch_index.url}/whl/rocm6.4/torch/ does not serve torch 2.10.0+rocm6.4" in text
    assert "the index lists 2.9.1+rocm6.4; set torch_version to a build it serves" in text

    closed = "https://127.0.0.1:9/whl/rocm6.4"  # the discard port: connection refused
    request = LockRequest.of(closed, WANTED, PY311)
    with pytest.raises(
        LockError,
        match=r"can't lock torch==2\.9\.1\+rocm6\.4, .* from "
        r"https://127\.0\.0\.1:9/whl/rocm6\.4 for Python 3\.11",
    ):
        locks.lines(request)
    # Every other host asking for the same set gets the same answer, without trying again.
    calls = []
    locks._fetcher = lambda: calls.append(1)  # type: ignore[method-assign]
    with pytest.raises(LockError):
        locks.lines(request)
    assert calls == [] and not list((tmp_path / "cache").glob("*.json"))


def test_a_page_without_hashes_is_never_locked(tmp_path):
    www = tmp_path / "www"
    path = wheel(www / "whl/rocm6.4", "torch", "2.9.1+rocm6.4")
    (www / "whl/rocm6.4/torch").mkdir()
    (www / "whl/rocm6.4/torch/index.html").write_text(
        f'<html><body><a href="/whl/rocm6.4/{path.name.replace("+", "%2B")}">{path.name}</a>'
        "</body></html>"
    )
    with serve(www) as served:
        request = LockRequest.of(f"{served.url}/whl/rocm6.4", ["torch==2.9.1+rocm6.4"], PY311)
        with pytest.raises(LockError, match=r"publishes no #sha256"):
            locks_for(tmp_path).lines(request)


def test_pep_658_metadata_spares_the_wheel_download(tmp_path):
    www = tmp_path / "www"
    path = wheel(www / "whl/rocm6.4", "torch", "2.9.1+rocm6.4")
    meta = b"Metadata-Version: 2.1\nName: torch\nVersion: 2.9.1+rocm6.4\n"
    (www / "whl/rocm6.4" / (path.name + ".metadata")).write_bytes(meta)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    href = f"/whl/rocm6.4/{path.name.replace('+', '%2B')}#sha256={digest}"
    (www / "whl/rocm6.4/torch").mkdir()
    (www / "whl/rocm6.4/torch/index.html").write_text(
        f'<html><body><a href="{href}" data-core-metadata="sha256='
        f'{hashlib.sha256(meta).hexdigest()}">{path.name}</a></body></html>'
    )
    with serve(www) as served:
        request = LockRequest.of(f"{served.url}/whl/rocm6.4", ["torch==2.9.1+rocm6.4"], PY311)
        assert locks_for(tmp_path).lines(request) == [
            f"torch==2.9.1+rocm6.4 --hash=sha256:{digest}"
        ]
        assert not [r for r in served.requests if str(r["path"]).endswith(".whl")]


def test_an_sdist_only_runtime_is_locked_by_its_hash_with_the_wheels_that_build_it(tmp_path):
    """AMD's ``rocm`` is published only as an sdist (repo.amd.com-whl.toml ``rocm_dist``):
    the lock pins the sdist's published hash, its build backend as a wheel, marked, and
    names it for pip's --no-binary; the cached lock reads back the same."""
    from integration.bundle.test_bundle import core_sdk_index

    www = tmp_path / "www"
    core_sdk_index(www)
    with serve(www) as served:
        url = f"{served.url}/whl/rocm7.14"
        wanted = ["torch==2.14.1+rocm7.14", "rocm[device-all,libraries]==7.14.*"]
        lines = locks_for(tmp_path).lines(LockRequest.of(url, wanted, PY311))
        assert all(LINE.fullmatch(line) for line in lines)
        digest = hashlib.sha256((www / "whl/rocm7.14/rocm-7.14.0.post1.tar.gz").read_bytes())
        backend = hashlib.sha256((www / "whl/setuptools-80.9.0-py3-none-any.whl").read_bytes())
        assert f"rocm==7.14.0.post1 --hash=sha256:{digest.hexdigest()}" in lines
        assert f"setuptools==80.9.0 --hash=sha256:{backend.hexdigest()} # build requirement" in (
            lines
        )
        assert lines[-1] == "--no-binary=rocm"
        # Only to build rocm: no plain line, so the host keeps it out of the venv.
        assert not [line for line in lines if re.fullmatch(r"setuptools==\S+ --hash=\S+", line)]
        names = sorted(line.split("==")[0] for line in lines[:-1])
        assert names == sorted(["filelock", "rocm", "rocm-sdk-core", "rocm-sdk-device-gfx1100",
                                "rocm-sdk-device-gfx942", "rocm-sdk-libraries", "setuptools",
                                "torch"])  # fmt: skip
        asked = len(served.requests)
        assert locks_for(tmp_path).lines(LockRequest.of(url, wanted, PY311)) == lines
        assert len(served.requests) == asked


def test_a_version_with_wheels_is_never_taken_from_its_sdist(tmp_path):
    """Only a version published as an sdist alone is built on the host: one with a wheel
    for another Python stays refused for this one, naming it."""
    from unit.bundle.test_bundle import sdist, write_pages

    www = tmp_path / "www"
    source = sdist(www / "whl/x", "numpy", "2.3.0")
    other = wheel(www / "whl/x", "numpy", "2.3.0", python=">=3.12")
    (other.parent / other.name.replace("py3-none-any", "cp312-cp312-linux_x86_64")).write_bytes(
        other.read_bytes()
    )
    other.unlink()
    write_pages(www, "whl/x", {"numpy": [source, *other.parent.glob("numpy-*.whl")]})
    with serve(www) as served:
        request = LockRequest.of(f"{served.url}/whl/x", ["numpy==2.3.0"], PY311)
        with pytest.raises(LockError, match=r"no wheel of numpy \(==2\.3\.0"):
            locks_for(tmp_path).lines(request)


def test_an_sdist_whose_requirements_are_dynamic_is_not_locked(tmp_path):
    from unit.bundle.test_bundle import sdist, write_pages

    www = tmp_path / "www"
    path = sdist(www / "whl/x", "rocm", "7.14.0", ("rocm-sdk-core==7.14.0",))
    import io
    import tarfile

    with tarfile.open(path, "r:gz") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers()}
    members["rocm-7.14.0/PKG-INFO"] += b"Dynamic: Requires-Dist\n"
    with tarfile.open(path, "w:gz") as archive:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    write_pages(www, "whl/x", {"rocm": [path]})
    with serve(www) as served:
        request = LockRequest.of(f"{served.url}/whl/x", ["rocm==7.14.0"], PY311)
        with pytest.raises(
            LockError, match=r"rocm-7\.14\.0\.tar\.gz: its Requires-Dist is dynamic"
        ):
            locks_for(tmp_path).lines(request)


# --- in the deploy ---------------------------------------------------------------------------


def test_a_host_to_install_gets_the_lock_and_a_converged_one_reads_nothing_upstream(
    upstream_locks,
):
    data = {"rocm_version": "6.4.3"}
    planned = fresh("debian-12", data)
    (request,) = upstream_locks.requests
    assert request.index_url == "https://download.pytorch.org/whl/rocm6.4"
    assert request.python == "3.11" and "torch==2.9.1+rocm6.4" in request.requirements
    (pip,) = planned.find("Install the torch wheels").commands
    assert "--require-hashes" in str(pip)
    survey = converged_survey({**data, "rocm_users": ["alice"]}, "debian-12")
    upstream_locks.requests.clear()
    converged = plan({**data, "rocm_users": ["alice"]}, SurveyHost(survey))
    assert not converged.changes and upstream_locks.requests == []


def test_a_set_that_cannot_be_locked_refuses_the_host_before_any_change(monkeypatch):
    from rocm_fleet.deploy import pytorch

    class Unreachable:
        def lines(self, request, refresh=False):
            raise LockError(f"can't lock {request.describe()}: connection refused")

    monkeypatch.setattr(pytorch, "controller_locks", Unreachable)
    planned = fresh("debian-12", {"rocm_version": "6.4.3"})
    assert planned.refused
    assert not [n for n in planned.names if "torch wheels" in n]
    # Refused while planning: none of its operations is planned (--dry's change table),
    # neither the ROCm ones planned before the lock nor the checks after it.
    assert planned.names == []
    # The audit reads the reason where it reads preflight's.
    assert planned.reason.startswith("can't lock torch==2.9.1+rocm6.4, ")
    assert planned.reason.endswith("for Python 3.11 (glibc 2.36): connection refused")
