"""The tests of tests/unit/test_security_paths.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

# ruff: noqa: F811  (fixtures, imported)

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from rocm_fleet.bundle.build import Plan, make_bundle
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.manifest import BundleError, missing
from unit.bundle.test_bundle import (  # noqa: F401  (fixtures)
    PACKAGES,
    Quiet,
    index,
    needs_of,
    publish,
    signer,
    upstream,
)


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
