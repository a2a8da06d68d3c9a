"""What an attacker who controls an index page, a signed index's ``Filename:`` or the
manifest.json lying in the output directory tries against ``rocm-fleet bundle``: writing,
reading or deleting outside ``--output``. Each attempt ends in one clear error naming the
entry, before anything of it is written, and nothing outside the bundle changes."""

# ruff: noqa: F811  (the fixtures of test_bundle, imported)

from __future__ import annotations

import hashlib
import json
import posixpath
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocm_fleet.bundle.build import Plan, make_bundle
from rocm_fleet.model.sources import UnsafePath, mirror_path
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.manifest import BundleError, confined, missing
from unit.bundle.test_bundle import (  # noqa: F401  (fixtures)
    PACKAGES,
    Quiet,
    index,
    needs_of,
    publish,
    signer,
    upstream,
)

TRAVERSALS = [
    "https://h/a/../../etc/passwd",
    "https://h/a/%2e%2e/%2E%2E/etc/passwd",
    "https://h/a/..%2F..%2Fetc/passwd",
    "https://h/a/.%2e/x",
    "https://h/a/./x",
    "https://h//etc/passwd",
    "https://h/a%00.deb",
    "https://h/a%5C..%5Cx",
    "https://user:secret@h/a",
    "https://h:99999999/a",
    "file:///etc/passwd",
    "https://../a",
]


@pytest.mark.parametrize("url", TRAVERSALS)
def test_mirror_path_refuses_every_way_out(url):
    with pytest.raises(UnsafePath) as caught:
        mirror_path(url)
    assert "secret" not in str(caught.value)  # credentials are never echoed


def test_mirror_path_keeps_the_real_layouts():
    assert mirror_path(
        "https://download.pytorch.org/whl/rocm6.4/torch-2.9.1%2Brocm6.4-cp311-cp311-"
        "manylinux_2_28_x86_64.whl"
    ) == (
        "download.pytorch.org/whl/rocm6.4/torch-2.9.1+rocm6.4-cp311-cp311-manylinux_2_28_x86_64.whl"
    )
    assert mirror_path("https://repo.radeon.com/rocm/apt/6.4.3/dists/jammy/InRelease") == (
        "repo.radeon.com/rocm/apt/6.4.3/dists/jammy/InRelease"
    )
    assert mirror_path("http://127.0.0.1:8080/whl/rocm6.4/") == "127.0.0.1:8080/whl/rocm6.4/"
    assert mirror_path("http://[::1]:8080/x") == "[::1]:8080/x"


# Path text as an attacker writes it: segments of dots, slashes, percent escapes of any byte.
_PIECES = st.sampled_from(
    ["..", ".", "/", "%2e", "%2E", "%2f", "%2F", "%5c", "%00", "a", "b.deb", "~", ":", "%25", " "]
)
_PATHS = st.lists(st.one_of(_PIECES, st.text(min_size=1, max_size=4)), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(path=_PATHS)
def test_property_a_mirror_path_is_refused_or_stays_under_its_host(path):
    url = f"https://repo.example/base/{path}"
    try:
        found = mirror_path(url)
    except (UnsafePath, ValueError):
        return
    assert found.startswith("repo.example/")
    normal = posixpath.normpath("/bundle/" + found)
    assert normal.startswith("/bundle/repo.example"), (url, found)
    assert "\x00" not in found and "\\" not in found


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.one_of(_PATHS, st.text(max_size=20)))
def test_property_confined_paths_stay_inside_the_bundle(tmp_path, path):
    out = tmp_path / "bundle"
    out.mkdir(exist_ok=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir(exist_ok=True)
    link = out / "link"
    if not link.is_symlink():
        link.symlink_to(outside)  # a symbolic link already in the bundle pointing out of it
    try:
        target = confined(out, path, "entry")
    except BundleError as exc:
        assert "entry" in str(exc) and "outside the bundle" in str(exc)
        return
    root = out.resolve()
    assert target != root and target.is_relative_to(root)
    assert target.resolve().is_relative_to(root)


# --- crafted inputs against a whole bundle -----------------------------------------------------


def attempt(plan: Plan, out: Path, **fetcher):
    return make_bundle(plan, out, Fetcher(progress=Quiet(), retries=1, **fetcher))


def test_a_signed_filename_leaving_the_bundle_is_refused_before_any_deb_is_written(
    signer, tmp_path
):
    from unit.loopback import serve_trusted as serve

    www = tmp_path / "www"
    crafted = PACKAGES.replace(
        "Filename: pool/main/r/rocminfo/", "Filename: pool/main/r/rocminfo/../../../../../../../"
    )
    assert crafted != PACKAGES
    publish(www / "rocm/apt/6.4.3", "jammy", {}, signer, packages=crafted)
    (www / "rocm" / "rocm.gpg.key").write_bytes(signer[1])
    with serve(www) as served:
        index(www, served.url, served.url)
        plan = Plan()
        plan.add("node1", needs_of(served, signer), {})
        out = tmp_path / "out" / "bundle"
        with pytest.raises(BundleError, match=r"refusing .*rocminfo_.*leaves its place"):
            attempt(plan, out)
        assert not [r for r in served.requests if str(r["path"]).endswith(".deb")]
    assert not list(tmp_path.rglob("rocminfo_*.deb")) or all(
        p.is_relative_to(www) for p in tmp_path.rglob("rocminfo_*.deb")
    )
    assert not list(out.rglob("*.deb"))


def test_a_wheel_link_with_encoded_dots_is_refused(upstream, signer, tmp_path):
    page = upstream.root / "whl/rocm6.4/torchvision/index.html"
    text = page.read_text()
    # An index page is unsigned: whoever controls it can write any href.
    page.write_text(text.replace('href="/whl/rocm6.4/', 'href="/whl/rocm6.4/%2e%2e/%2e%2e/%2e%2e/'))
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {})
    out = tmp_path / "bundle"
    with pytest.raises(BundleError, match=r"refusing .*torchvision.*leaves its place"):
        attempt(plan, out)
    assert not list(tmp_path.rglob("torchvision-*.whl")) or all(
        p.is_relative_to(upstream.root) for p in tmp_path.rglob("torchvision-*.whl")
    )


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim" / "precious.txt"
    victim.parent.mkdir(parents=True)
    victim.write_text("keep me")
    return victim


@pytest.mark.parametrize("kind", ["absolute", "dotdot", "symlink"])
def test_a_manifest_listing_paths_outside_is_refused_before_anything_is_fetched(
    upstream, signer, tmp_path, kind
):
    victim = _victim(tmp_path)
    out = tmp_path / "bundle"
    out.mkdir()
    listed = {
        "absolute": str(victim),
        "dotdot": "../victim/precious.txt",
        "symlink": "door/precious.txt",
    }[kind]
    if kind == "symlink":
        (out / "door").symlink_to(victim.parent)
    digest = hashlib.sha256(b"keep me").hexdigest()
    (out / "manifest.json").write_text(
        json.dumps({"files": {listed: {"size": 7, "sha256": digest}}})
    )
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {})
    with pytest.raises(
        BundleError, match=r"manifest\.json lists a file that: .* outside the bundle"
    ):
        attempt(plan, out)
    assert upstream.requests == []  # refused before the first request
    assert victim.read_text() == "keep me" and victim.parent.is_dir()
    # Preflight reads the same manifest: one line naming it, no traceback.
    (problem,) = missing(str(out), needs_of(upstream, signer))
    assert "outside the bundle" in problem


def test_pruning_removes_only_what_the_tool_wrote_and_never_climbs_above_the_output(
    upstream, signer, tmp_path
):
    out = tmp_path / "parent" / "bundle"
    out.mkdir(parents=True)
    ours = out / "old" / "deep" / "gone.deb"
    ours.parent.mkdir(parents=True)
    ours.write_bytes(b"ours")
    changed = out / "old" / "changed.deb"
    changed.write_bytes(b"someone else's now")
    record = {
        "files": {
            "old/deep/gone.deb": {"size": 4, "sha256": hashlib.sha256(b"ours").hexdigest()},
            "old/changed.deb": {"size": 4, "sha256": hashlib.sha256(b"ours").hexdigest()},
        }
    }
    (out / "manifest.json").write_text(json.dumps(record))
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {})
    manifest = attempt(plan, out)
    assert manifest["removed"] == ["old/deep/gone.deb"]
    assert not ours.parent.exists()  # the directory it emptied
    assert changed.read_bytes() == b"someone else's now"  # not what it wrote: kept
    # A bundle whose whole content goes: its directory and parent stay.
    (out / "manifest.json").write_text(
        json.dumps({"files": {"only.deb": {"size": 1, "sha256": hashlib.sha256(b"x").hexdigest()}}})
    )
    for child in list(out.iterdir()):
        if child.name != "manifest.json":
            shutil.rmtree(child)
    (out / "only.deb").write_bytes(b"x")
    empty = Plan()
    manifest = attempt(empty, out)
    assert manifest["removed"] == ["only.deb"]
    assert out.is_dir() and out.parent.is_dir()


@pytest.mark.parametrize(
    "text", ["{not json", "[1, 2]", '{"files": []}', '{"files": {"a": {"size": "x"}}}', "\xff"]
)
def test_a_malformed_manifest_is_one_line_naming_the_file(upstream, signer, tmp_path, text):
    out = tmp_path / "bundle"
    out.mkdir()
    (out / "manifest.json").write_bytes(text.encode("latin-1"))
    plan = Plan()
    plan.add("node1", needs_of(upstream, signer), {})
    with pytest.raises(BundleError) as caught:
        attempt(plan, out)
    message = str(caught.value)
    assert str(out / "manifest.json") in message and "\n" not in message
