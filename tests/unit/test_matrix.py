"""The matrix encodes the fact sheet's rules; these tests pin the rules, not just rows
(and the version rules of rocm_fleet.versions they rely on)."""

import pytest

from rocm_fleet import matrix
from rocm_fleet.matrix import Support, distro, release
from rocm_fleet.versions import (
    amd_release_tag,
    is_amd_driver_version,
    kernel_key,
    newer_kernels,
    release_key,
    release_tag,
)


@pytest.mark.parametrize(
    ("version", "apt_path", "tag"),
    [("6.2.0", "6.2", "60200"), ("6.2.4", "6.2.4", "60204"), ("7.2.0", "7.2", "70200"),
     ("7.2.1", "7.2.1", "70201"), ("6.4.3", "6.4.3", "60403")],
)  # fmt: skip
def test_apt_path_has_no_trailing_zero_and_tag_is_numeric(version, apt_path, tag):
    assert release(version).apt_path == apt_path
    assert release(version).numeric_tag == tag


@pytest.mark.parametrize(
    ("distro_id", "version_id", "suite"),
    [("debian", "12", "jammy"), ("debian", "13", "noble"), ("ubuntu", "22.04", "jammy"),
     ("ubuntu", "24.04", "noble"), ("debian", "12.9", "jammy")],
)  # fmt: skip
def test_suite_per_distro(distro_id, version_id, suite):
    assert distro(distro_id, version_id).suite == suite


@pytest.mark.parametrize(
    ("distro_id", "version_id"), [("debian", "11"), ("ubuntu", "20.04"), ("rhel", "9.6")]
)
def test_unknown_distros(distro_id, version_id):
    assert distro(distro_id, version_id) is None


@pytest.mark.parametrize(
    ("version", "distro_key", "support"),
    [
        ("6.0.0", ("ubuntu", "22.04"), Support.OFFICIAL),
        ("6.1.2", ("ubuntu", "24.04"), None),  # noble first published in 6.2.0
        ("6.2.0", ("ubuntu", "24.04"), Support.OFFICIAL),
        ("6.3.0", ("debian", "12"), Support.UNLISTED),  # Debian 12 listed from 6.3.1
        ("6.3.1", ("debian", "12"), Support.INSTINCT_ONLY),
        ("7.0.1", ("debian", "13"), Support.UNLISTED),  # Debian 13 listed from 7.0.2
        ("7.0.2", ("debian", "13"), Support.INSTINCT_ONLY),
        ("6.1.0", ("debian", "13"), None),
    ],
)
def test_support_levels(version, distro_key, support):
    assert release(version).support(distro(*distro_key)) is support


def test_releases_are_sorted_unique_and_classic_only():
    keys = [release_key(r.version) for r in matrix.RELEASES]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert keys[0] == (6, 0, 0) and keys[-1] == (7, 2, 4)
    for missing in ("6.0.1", "6.2.3", "7.14.0", "10.0.0"):
        with pytest.raises(KeyError):
            release(missing)


def test_torch_index_follows_the_release_minor():
    for rel in matrix.RELEASES:
        if rel.torch_index is None:
            assert rel.version.startswith("7.0."), rel.version
            continue
        assert rel.torch_index in matrix.TORCH_INDEXES
        major, minor, _ = rel.parts
        assert rel.torch_index.startswith(f"rocm{major}.{minor}")
    assert release("6.2.4").torch_index == "rocm6.2.4"
    assert release("6.4.3").torch_builds[-1].torch == "2.9.1"


def test_torch_companions_follow_torch_minor():
    # torchvision 0.(minor+15) pairs with torch 2.minor since torch 2.0 (PyPI release lists).
    for builds in matrix.TORCH_INDEXES.values():
        for b in builds:
            torch_minor = int(b.torch.split(".")[1])
            assert b.torchvision.startswith(f"0.{torch_minor + 15}."), b
            assert b.torchaudio is None or b.torchaudio.split(".")[:2] == b.torch.split(".")[:2]


def test_gfx_names():
    for good in ("gfx1100", "gfx942", "gfx90a", "gfx1201", "gfx906"):
        assert matrix.GFX_NAME.match(good)
    for bad in ("1100", "gfx", "GFX1100", "gfx1100:xnack-", "rx7900"):
        assert not matrix.GFX_NAME.match(bad)


@pytest.mark.parametrize(
    ("version", "tag"), [("6.4.3", "60403"), ("7.2", "70200"), ("6.10.1", "61001")]
)
def test_release_tag_pads_minor_and_patch(version, tag):
    assert release_tag(version) == tag


@pytest.mark.parametrize(
    ("version", "tag", "driver"),
    [
        ("6.4.3.60403-128~22.04", "60403", False),  # rocm-core
        ("1.0.0.60403-128~22.04", "60403", False),  # rocminfo: its own version, the tag
        ("1:6.12.12.60403-2194681.22.04", "60403", True),  # amdgpu-dkms: an epoch
        ("5.2.3-2", None, False),  # Debian's rocminfo
        ("6.1.2-1", None, False),  # Debian's librocm-smi64-1
        ("7.88.1-10+deb12u14", None, False),
    ],
)
def test_amd_package_versions_carry_the_release_tag(version, tag, driver):
    assert amd_release_tag(version) == tag
    assert is_amd_driver_version(version) is driver


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("6.1.0-28-amd64", "6.1.0-31-amd64"),  # Debian 12's ABI bump
        ("6.1.0-31-amd64", "6.12.38+deb12-amd64"),  # backports
        ("6.8.0-50-generic", "6.8.0-51-generic"),
        ("6.8.0-51-generic", "6.11.0-29-generic"),  # Ubuntu HWE
        ("6.12", "6.12.12+bpo-amd64"),
        ("", "5.10.0-30-amd64"),
    ],
)
def test_kernel_releases_order_by_upstream_then_abi(older, newer):
    assert kernel_key(older) < kernel_key(newer)


def test_newer_kernels_are_sorted_and_exclude_the_running_one():
    installed = ["6.12.38+deb12-amd64", "6.1.0-31-amd64", "6.1.0-28-amd64", "5.10.0-30-amd64"]
    assert newer_kernels("6.1.0-28-amd64", installed) == ["6.1.0-31-amd64", "6.12.38+deb12-amd64"]
    assert newer_kernels("6.12.38+deb12-amd64", installed) == []
