"""What an attacker who controls an index page, a signed index's ``Filename:`` or the
manifest.json lying in the output directory tries against ``rocm-fleet bundle``: writing,
reading or deleting outside ``--output``. Each attempt ends in one clear error naming the
entry, before anything of it is written, and nothing outside the bundle changes."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocm_fleet.model.sources import UnsafePath, mirror_path
from rocm_fleet.upstream.manifest import BundleError, confined

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
