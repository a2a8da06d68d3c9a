"""``rocm-fleet matrix check`` against a small upstream served over real HTTP on loopback, in
apt-mirror's layout (one directory per AMD host) plus a PEP 503 wheel index; and the
OpenPGP reader against keys gpg itself made."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rocm_fleet.cli import main
from rocm_fleet.model import matrix, streams
from rocm_fleet.upstream.aptrepo import primary_fingerprints
from rocm_fleet.upstream.client import UpstreamClient
from rocm_fleet.upstream.http import Unreachable
from rocm_fleet.upstream.matrix_check import (
    MissingRelease,
    check_matrix,
    missing_releases,
    pinned_fingerprint,
)
from rocm_fleet.upstream.progress import DownloadProgress
from unit.gpgkeys import Gpg
from unit.loopback import running, url_of

pytestmark = pytest.mark.skipif(not shutil.which("gpg"), reason="needs gpg to make test keys")


@pytest.fixture(scope="module")
def gpg(tmp_path_factory):
    keys = Gpg(tmp_path_factory.mktemp("gpg") / "home", "matrix check test <test@invalid>")
    yield keys
    keys.close()


def test_fingerprints_of_armored_binary_and_concatenated_keys(gpg):
    binary = gpg("--export", gpg.fingerprint).stdout
    armored = gpg("--armor", "--export", gpg.fingerprint).stdout
    for data in (binary, armored, binary + armored, b"\n" + armored):
        assert primary_fingerprints(data) == [gpg.fingerprint]
    assert primary_fingerprints(b"not a key") == []


def test_keyring_fact_reads_keyrings_gpg_made(tmp_path):
    """The fact that checks a host's keyring (rocm_fleet.facts.apt) reads the file on the
    host as base64 and these same packets: it finds what gpg itself lists, in each form
    apt's signed-by accepts, under dash."""
    from rocm_fleet.facts.apt import KeyringFingerprints

    fact = KeyringFingerprints()
    gpg = Gpg(tmp_path / "home")  # its own key: the module's is shared by the other tests
    # a subkey, as AMD's keys have: its fingerprint is not the key's
    gpg("--quick-add-key", gpg.fingerprint, "cv25519", "encr", "never")
    binary = gpg("--export", gpg.fingerprint).stdout
    armored = gpg("--armor", "--export", gpg.fingerprint).stdout
    for name, data in (("rocm.gpg", binary), ("rocm.asc", armored)):
        keyring = tmp_path / name
        keyring.write_bytes(data)
        shell = shutil.which("dash") or "sh"
        out = subprocess.run([shell, "-c", fact.command(str(keyring))], capture_output=True,
                             text=True, check=True).stdout.splitlines()  # fmt: skip
        assert fact.process(out) == [gpg.fingerprint], name
    listed = gpg("--with-colons", "--list-keys", gpg.fingerprint).stdout.decode()
    gpg.close()
    assert listed.count("\nfpr:") == 2  # gpg lists the subkey's fingerprint too


# --- a small upstream -----------------------------------------------------------------------

REL = matrix.release("7.14.1")
DISTS = [pub.directory for pub in streams.CORE_SDK.publications]


def release_text(suite: str, origin: str) -> str:
    return (
        f"Origin: {origin}\nLabel: ROCm release Packages\nSuite: {suite}\nCodename: {suite}\n"
        "Architectures: amd64\nComponents: main\nDescription: ROCm APT Repository\n"
    )


def project_page(files: list[str]) -> str:
    links = "".join(f'<a href="{name.replace("+", "%2B")}">{name}</a><br/>\n' for name in files)
    return f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n"


def write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def build_upstream(root: Path, gpg: Gpg, origin: str = "AMD ROCm") -> None:
    """What --release 7.14.1 reads: the five dists of repo.amd.com's multi-arch repository,
    its key, the driver folders and the rocm7.14 wheel index."""
    base = root / "amd/repo.amd.com/rocm/packages-multi-arch"
    for directory in DISTS:
        dists = base / directory / "dists/stable"
        packages = "".join(
            f"Package: {name}\nVersion: {version}\nArchitecture: amd64\n\n"
            for name, version in (("amdrocm7.14", "7.14.0-3"), ("amdrocm7.14", "7.14.1-1"),
                                  ("amdrocm7.14-gfx1100", "7.14.1-1"))
        )  # fmt: skip
        index = gzip.compress(packages.encode())
        write(dists / "main/binary-amd64/Packages.gz", index)
        # The check verifies the index against the InRelease's SHA256, as apt does.
        listed = f"SHA256:\n {hashlib.sha256(index).hexdigest()} {len(index)} " + (
            "main/binary-amd64/Packages.gz\n"
        )
        write(dists / "InRelease", gpg.clearsign(release_text("stable", origin) + listed))
    binary = gpg("--export", gpg.fingerprint).stdout
    write(base / "gpg/rocm.gpg", binary + gpg("--armor", "--export", gpg.fingerprint).stdout)
    # The driver repository's key (repo.radeon.com's), which its InRelease is verified with.
    write(root / "amd/repo.radeon.com/rocm/rocm.gpg.key", gpg("--armor", "--export").stdout)
    for suite in ("jammy", "noble", "resolute"):
        write(
            root / f"amd/repo.radeon.com/amdgpu/31.40.1/ubuntu/dists/{suite}/InRelease",
            gpg.clearsign(release_text(suite, "repo.radeon.com")),
        )
    whl = root / "whl/rocm7.14"
    tags = "cp312-cp312-manylinux_2_28_x86_64"
    write(whl / "torch/index.html", project_page(
        [f"torch-{v}+rocm7.14-{tags}.whl" for v in ("2.14.0", "2.14.1")]))  # fmt: skip
    write(whl / "torchvision/index.html", project_page(
        [f"torchvision-{v}+rocm7.14-{tags}.whl" for v in ("0.29.0", "0.29.1")]))  # fmt: skip
    write(whl / "rocm/index.html", project_page(["rocm-7.14.0.post1.tar.gz"]))


class Handler(http.server.SimpleHTTPRequestHandler):
    failing: set[str] = set()  # paths answered with 503

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path in self.failing:
            self.send_error(503)
            return
        super().do_GET()


@pytest.fixture
def upstream(tmp_path, gpg):
    root = tmp_path / "www"
    build_upstream(root, gpg)

    class Served(Handler):
        failing = set()

        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

    with running(Served) as server:
        yield root, url_of(server), Served


def run_check(capsys, url: str, gpg: Gpg, *more: str) -> tuple[int, str, str]:
    status = main(["matrix", "check", "--release", "7.14.1", "--apt-base", f"{url}/amd",
                   "--torch-base", f"{url}/whl", "--key-fingerprint", gpg.fingerprint,
                   "--retries", "1", "--timeout", "5", *more])  # fmt: skip
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_mirror_that_agrees_with_the_matrix_passes(upstream, gpg, capsys):
    _, url, _ = upstream
    status, out, err = run_check(capsys, url, gpg)
    assert status == 0, out
    assert "0 wrong, 0 unreachable" in out
    assert "matrix check [1/" in err  # progress on stderr, not mixed into the report


def test_a_dropped_wheel_and_a_wrong_origin_are_each_named(upstream, gpg, capsys):
    root, url, _ = upstream
    tags = "cp312-cp312-manylinux_2_28_x86_64"
    write(root / "whl/rocm7.14/torchvision/index.html",
          project_page([f"torchvision-0.29.0+rocm7.14-{tags}.whl"]))  # fmt: skip
    write(root / "amd/repo.amd.com/rocm/packages-multi-arch/debian13/dists/stable/InRelease",
          gpg.clearsign(release_text("stable", "repo.amd.com")))  # fmt: skip
    status, out, _ = run_check(capsys, url, gpg)
    assert status == 1, out
    assert "rocm7.14" in out and "no torchvision wheel 0.29.1+rocm7.14" in out
    assert "InRelease debian13: declares Origin 'repo.amd.com'; the matrix pins 'AMD ROCm'" in out
    # The new InRelease lists no index: the one served is not verified, so not read.
    assert (
        "packages in debian13: main/binary-amd64/Packages.gz: SHA-256 is not the one its "
        "InRelease lists" in out
    )
    assert "3 wrong" in out


def test_amd_key_is_required_unless_a_mirror_key_is_named(upstream, gpg, capsys):
    _, url, _ = upstream
    status = main(["matrix", "check", "--release", "7.14.1", "--apt-base", f"{url}/amd",
                   "--torch-base", f"{url}/whl", "--retries", "0"])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1
    assert f"holds {gpg.fingerprint}; the matrix pins {streams.CORE_SDK.key_fingerprint}" in out


def test_an_unreachable_upstream_is_exit_2_after_the_retries(upstream, gpg, capsys):
    _, url, served = upstream
    served.failing = {"/whl/rocm7.14/torch/"}
    status, out, _ = run_check(capsys, url, gpg, "--json")
    assert status == 2
    import json

    report = json.loads(out)
    (bad,) = [c for c in report["checks"] if c["status"] != "ok"]
    assert bad["status"] == "unreachable" and bad["what"] == "torch wheels"
    assert "503" in bad["detail"]


def test_a_missing_index_is_wrong_and_a_missing_suite_is_named(upstream, gpg, capsys):
    root, url, _ = upstream
    shutil.rmtree(root / "amd/repo.amd.com/rocm/packages-multi-arch/ubuntu2604")
    status, out, _ = run_check(capsys, url, gpg)
    assert status == 1
    assert "InRelease ubuntu2604: HTTP 404: no such suite" in out
    assert "packages in ubuntu2604: its InRelease: HTTP 404: no such suite" in out


def test_releases_upstream_publishes_that_the_matrix_lacks(tmp_path, gpg, upstream):
    root, url, _ = upstream
    listing = "".join(f'<a href="{p}/">{p}/</a>\n' for p in ("5.7.1", "6.4.3", "7.2", "7.2.5"))
    write(root / "amd/repo.radeon.com/rocm/apt/index.html", f"<html><body>{listing}</body></html>")
    dists = root / "amd/stable.repo.amd.com/rocm/core/packages/debian13/dists/stable"
    packages = (
        "Package: amdrocm10.1\nVersion: 10.1.0-2\n\nPackage: amdrocm10.2\nVersion: 10.2.0-1\n\n"
    )
    index = gzip.compress(packages.encode())
    write(dists / "main/binary-amd64/Packages.gz", index)
    # Read only once verified: signed, listing the index, with the stream's key.
    digest = hashlib.sha256(index).hexdigest()
    listed = f"SHA256:\n {digest} {len(index)} main/binary-amd64/Packages.gz\n"
    write(dists / "InRelease", gpg.clearsign(release_text("stable", "AMD ROCm") + listed))
    key = urlsplit(streams.STABLE_REPOSITORY.key_url)
    write(root / "amd" / f"{key.netloc}{key.path}".lstrip("/"), gpg("--armor", "--export").stdout)
    unverified = missing_releases(UpstreamClient(f"{url}/amd", None, 5, 0))
    assert [item.release for item in unverified] == ["7.2.5"]  # AMD's key didn't sign it
    found = missing_releases(UpstreamClient(f"{url}/amd", None, 5, 0), {"*": gpg.fingerprint})
    assert [item.release for item in found] == ["7.2.5", "10.2.0"]  # not 5.7.1: older
    assert found[0] == MissingRelease("7.2.5", "https://repo.radeon.com/rocm/apt/7.2.5/")
    assert "amdrocm10.2 10.2.0-1" in found[1].where


def test_the_pinned_fingerprint_a_streams_own_then_every_streams_then_the_matrixs():
    mirror, other = "ab" * 20, "cd" * 20
    core, classic = streams.CORE_SDK, streams.CLASSIC
    assert pinned_fingerprint(core, None) == core.key_fingerprint.upper()
    assert pinned_fingerprint(core, {"*": mirror}) == mirror.upper()
    both = {core.name: other, "*": mirror}
    assert (pinned_fingerprint(core, both), pinned_fingerprint(classic, both)) == (
        other.upper(),
        mirror.upper(),
    )


def test_no_index_where_the_matrix_says_none(upstream, gpg):
    root, url, _ = upstream
    upstream_ = UpstreamClient(f"{url}/amd", f"{url}/whl", 5, 0)
    report = check_matrix(
        upstream_, "10.1.0", {"*": gpg.fingerprint}, progress=DownloadProgress(io.StringIO())
    )
    (no_index,) = [c for c in report["checks"] if c["what"] == "no PyTorch index"]
    assert no_index["status"] == "ok"
    tags = "cp312-cp312-manylinux_2_28_x86_64"
    write(root / "whl/rocm10.1/torch/index.html",
          project_page([f"torch-2.15.0+rocm10.1-{tags}.whl"]))  # fmt: skip
    report = check_matrix(
        UpstreamClient(f"{url}/amd", f"{url}/whl", 5, 0), "10.1.0", {"*": gpg.fingerprint},
        progress=DownloadProgress(io.StringIO()),
    )  # fmt: skip
    (no_index,) = [c for c in report["checks"] if c["what"] == "no PyTorch index"]
    assert no_index["status"] == "wrong" and "torch 2.15.0+rocm10.1" in no_index["detail"]


def test_bad_options_are_one_line_usage_errors(capsys):
    assert main(["matrix", "check", "--release", "7.2.9"]) == 4
    assert "--release 7.2.9: not a release the matrix knows" in capsys.readouterr().err
    assert main(["matrix", "check", "--key-fingerprint", "classic=1234"]) == 4
    assert "[STREAM=]FINGERPRINT" in capsys.readouterr().err
    assert main(["matrix", "check", "--apt-base", "ftp://x"]) == 4


def test_amds_wheel_index_is_checked_for_the_runtime_and_each_pinned_build(upstream, gpg):
    """10.x: AMD's stable index (here the lab's double of it, from the recorded facts, under
    the mirror's stable.repo.amd.com/) lists rocm==10.1.0, every pinned build and each
    target's device wheels."""
    from lab import amd_wheels
    from rocm_fleet.model.matrix import release

    root, url, _ = upstream
    www = root / "amd/stable.repo.amd.com"
    amd_wheels.build(www, [release("10.1.0")])

    def amd_checks():
        report = check_matrix(
            UpstreamClient(f"{url}/amd", f"{url}/whl", 5, 0), "10.1.0", {"*": gpg.fingerprint},
            progress=DownloadProgress(io.StringIO()),
        )  # fmt: skip
        return {c["what"]: c for c in report["checks"] if c["what"].startswith("AMD ")}

    checks = amd_checks()
    assert {"AMD ROCm runtime", "AMD torch wheels", "AMD torchvision wheels",
            "AMD torchaudio wheels", "AMD amd-torch-device-gfx1151"} <= set(checks)  # fmt: skip
    assert "AMD amd-torch-device-gfx908" not in checks  # not on AMD's 10.1.0 page
    assert all(c["status"] == "ok" for c in checks.values()), checks
    index = "https://stable.repo.amd.com/rocm/whl-next"
    assert checks["AMD torch wheels"]["url"] == f"{index}/torch/"
    page = www / "rocm/whl-next/torch/index.html"
    page.write_text("".join(ln for ln in page.read_text().splitlines(True) if "2.12.0" not in ln))
    (www / "rocm/whl-next/rocm/index.html").write_text(project_page([]))
    checks = amd_checks()
    assert checks["AMD torch wheels"]["status"] == "wrong"
    assert checks["AMD torch wheels"]["detail"] == "no torch wheel 2.12.0+rocm10.1.0"
    assert checks["AMD ROCm runtime"]["status"] == "wrong"
    assert "rocm[libraries]==10.1.0" in checks["AMD ROCm runtime"]["detail"]


def test_an_answer_longer_than_the_cap_is_refused_not_read_on(tmp_path, monkeypatch):
    from rocm_fleet.upstream import client as upstream_module
    from unit.loopback import serve

    (tmp_path / "big").write_bytes(b"x" * 5000)
    (tmp_path / "small").write_bytes(b"y" * 100)
    monkeypatch.setattr(upstream_module, "MAX_BODY_BYTES", 1000)
    with serve(tmp_path) as served:
        client = UpstreamClient(None, None, 5, 0)
        base = served.url
        assert client.get(f"{base}/small").body == b"y" * 100
        with pytest.raises(Unreachable, match="more than 1000 bytes: refused"):
            client.get(f"{base}/big")
