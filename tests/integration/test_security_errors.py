"""Malformed input against ``rocm-fleet bundle``: a key file with two keys, armour that
isn't base64, a package index that is truncated or lacks a field, a wheel page that isn't
UTF-8. Each ends in one error line naming the file, never a traceback."""

# ruff: noqa: F811  (the fixtures of test_bundle, imported)

from __future__ import annotations

import gzip
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocm_fleet.bundle.build import Plan, make_bundle
from rocm_fleet.bundle.contents import one_key
from rocm_fleet.upstream.aptrepo import (
    Index,
    RepositoryError,
    check_key,
    install_closure,
    parse_release,
    parse_stanzas,
)
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.manifest import BundleError, parsing
from rocm_fleet.upstream.wheels import parse_page
from unit.bundle.test_bundle import Quiet, needs_of, publish, signer, upstream  # noqa: F401
from unit.gpgkeys import Gpg, run_gpg


def attempt(upstream, signer, tmp_path) -> str:
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {})
    with pytest.raises(BundleError) as caught:
        make_bundle(plan, tmp_path / "bundle", Fetcher(progress=Quiet(), retries=0))
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.fixture(scope="module")
def stranger(tmp_path_factory):
    keys = Gpg(tmp_path_factory.mktemp("stranger") / "home", "stranger <s@invalid>")
    yield keys
    keys.close()


def test_a_key_file_with_a_second_key_is_refused(upstream, signer, tmp_path, stranger):
    key = upstream.root / "rocm" / "rocm.gpg.key"
    other = stranger("--armor", "--export").stdout
    key.write_bytes(signer[1] + other)  # the pinned key, then another armored block
    assert "holds 2 armored keys, not one" in attempt(upstream, signer, tmp_path)
    # The binary-then-armored form (stable.repo.amd.com's), with another key's armour.
    home, _armored, fingerprint = signer
    binary = run_gpg(home, "--export", fingerprint).stdout
    key.write_bytes(binary + other)
    assert "different keys" in attempt(upstream, signer, tmp_path)


def test_armour_that_is_not_base64_is_one_line(upstream, signer, tmp_path):
    key = upstream.root / "rocm" / "rocm.gpg.key"
    key.write_bytes(b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINB!!!not base64\n"
                    b"-----END PGP PUBLIC KEY BLOCK-----\n")  # fmt: skip
    message = attempt(upstream, signer, tmp_path)
    assert message.startswith(f"{upstream.url}/rocm/rocm.gpg.key: not a readable OpenPGP key")


def _resign(dist, signer, listing: dict[str, bytes]) -> None:
    home, _armored, fingerprint = signer
    lines = ["Origin: repo.radeon.com", "Suite: jammy", "Codename: jammy", "SHA256:"]
    lines += [f" {hashlib.sha256(d).hexdigest()} {len(d)} {name}" for name, d in listing.items()]
    (dist / "Release").write_text("\n".join(lines) + "\n")
    run_gpg(home, "--local-user", fingerprint, "--clearsign", "-o", str(dist / "InRelease"),
            str(dist / "Release"))  # fmt: skip


def test_a_truncated_signed_index_is_one_line_naming_it(upstream, signer, tmp_path):
    dist = upstream.root / "rocm/apt/6.4.3/dists/jammy"
    packages = dist / "main/binary-amd64/Packages.gz"
    cut = packages.read_bytes()[:40]
    packages.write_bytes(cut)
    _resign(dist, signer, {"main/binary-amd64/Packages.gz": cut})
    message = attempt(upstream, signer, tmp_path)
    assert "Packages.gz: not a readable package index" in message


def test_an_index_missing_a_field_is_one_line_naming_it(upstream, signer, tmp_path):
    dist = upstream.root / "rocm/apt/6.4.3/dists/jammy"
    text = "Package: rocm-hip-runtime\nArchitecture: amd64\nFilename: pool/r.deb\n\n"
    data = gzip.compress(text.encode(), mtime=0)
    (dist / "main/binary-amd64/Packages.gz").write_bytes(data)
    _resign(dist, signer, {"main/binary-amd64/Packages.gz": data})
    message = attempt(upstream, signer, tmp_path)
    assert "Packages.gz: not a readable package index" in message


def test_a_release_with_an_unreadable_size_is_one_line(upstream, signer, tmp_path):
    dist = upstream.root / "rocm/apt/6.4.3/dists/jammy"
    home, _armored, fingerprint = signer
    (dist / "Release").write_text(
        "Suite: jammy\nCodename: jammy\nSHA256:\n "
        + "a" * 64
        + " twelve main/binary-amd64/Packages\n"
    )
    run_gpg(home, "--local-user", fingerprint, "--clearsign", "-o", str(dist / "InRelease"),
            str(dist / "Release"))  # fmt: skip
    assert "InRelease: not a readable InRelease" in attempt(upstream, signer, tmp_path)


def test_a_wheel_page_that_is_not_utf8_is_one_line(upstream, signer, tmp_path):
    page = upstream.root / "whl/rocm6.4/torch/index.html"
    page.write_bytes(b"<html>\xff\xfe</html>")
    message = attempt(upstream, signer, tmp_path)
    assert "whl/rocm6.4/torch/: not a readable PEP 503 page" in message


# --- properties: whatever a server sends, one error line or a result --------------------------

_FIELDS = st.sampled_from(["Package", "Version", "Filename", "Size", "SHA256", "Depends",
                           "Provides", "Pre-Depends", "Recommends"])  # fmt: skip
_VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["rocm-core", "1.0", "1:2.0-1~x", "a (>= 1)", "b | c (<< 2)", "12", "x y"]),
)
_STANZAS = st.lists(
    st.dictionaries(_FIELDS, _VALUES, max_size=6).map(
        lambda d: "\n".join(f"{k}: {v}" for k, v in d.items())
    ),
    max_size=6,
).map("\n\n".join)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(_STANZAS, st.text(max_size=200)))
def test_property_any_package_index_is_a_closure_or_one_error_line(text):
    try:
        with parsing("https://repo.example/Packages", "package index"):
            closure = install_closure(Index(parse_stanzas(text)), ["rocm-core"], "repo")
            for package in closure:
                (package.filename, package.sha256, package.size)  # noqa: B018
    except (BundleError, RepositoryError) as exc:
        assert "\n" not in str(exc)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(
    st.binary(max_size=200),
    st.binary(max_size=120).map(lambda b: b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + b
                                + b"\n-----END PGP PUBLIC KEY BLOCK-----\n"),
))  # fmt: skip
def test_property_any_key_file_is_refused_in_one_line_or_checked(data):
    try:
        with parsing("https://repo.example/key", "OpenPGP key"):
            check_key(data, "A" * 40, "https://repo.example/key")
            one_key(data, "https://repo.example/key")
    except (BundleError, RepositoryError) as exc:
        assert "\n" not in str(exc)
    else:
        raise AssertionError("a key without the pinned fingerprint was accepted")


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_property_any_release_text_and_page_parse_or_fail_in_one_line(text):
    try:
        with parsing("https://repo.example/InRelease", "InRelease"):
            parse_release(text)
    except BundleError as exc:
        assert "\n" not in str(exc)
    # An index page is any text a server sends: read without an exception, every link a
    # URL without its fragment.
    for link in parse_page(text, "https://download.example/whl/torch/"):
        assert "#" not in link.url
