"""The matrix encodes the fact sheet's rules; these tests pin the rules, not just rows
(and the version rules of rocm_fleet.model.versions they rely on)."""

import re

import pytest

from rocm_fleet.model import gpu_targets, matrix, streams, torch_builds
from rocm_fleet.model.matrix import Support, distro, release
from rocm_fleet.model.streams import CLASSIC, CORE_SDK
from rocm_fleet.model.versions import (
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
     ("ubuntu", "24.04", "noble"), ("ubuntu", "26.04", "resolute"), ("debian", "12.9", "jammy")],
)  # fmt: skip
def test_repo_radeon_com_suite_per_distro(distro_id, version_id, suite):
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
        ("6.4.3", ("debian", "12"), Support.INSTINCT_ONLY),  # bookworm's gpgv takes SHA-1
        ("7.0.1", ("debian", "13"), Support.REJECTED),  # sqv rejects the SHA-1 key binding
        ("7.0.2", ("debian", "13"), Support.INSTINCT_ONLY),
        ("6.1.0", ("debian", "13"), None),
        ("7.2.4", ("ubuntu", "26.04"), None),  # the classic stream never published resolute
        ("7.14.0", ("ubuntu", "26.04"), Support.OFFICIAL),
        ("10.1.0", ("ubuntu", "22.04"), Support.OFFICIAL),
        ("10.0.0", ("debian", "13"), Support.INSTINCT_ONLY),
        ("7.14.1", ("debian", "12"), Support.INSTINCT_ONLY),
    ],
)
def test_support_levels(version, distro_key, support):
    assert release(version).support(distro(*distro_key)) is support


def test_releases_are_sorted_unique_per_stream():
    for stream in streams.STREAMS:
        keys = [release_key(r.version) for r in matrix.RELEASES if r.stream is stream]
        assert keys == sorted(keys) and len(set(keys)) == len(keys), stream.name
    classic = [r.version for r in matrix.RELEASES if r.stream is CLASSIC]
    core = [r.version for r in matrix.RELEASES if r.stream is CORE_SDK]
    assert classic[0] == "6.0.0" and classic[-1] == "7.2.4"
    assert core == ["7.14.0", "7.14.1", "10.0.0", "10.1.0"]
    # Radeon point releases are in; releases nobody published (or not yet) are not.
    for radeon in ("6.1.3", "6.2.3", "6.3.4"):
        assert release(radeon).stream is CLASSIC
    for missing in ("6.0.1", "7.2.5", "10.2.0"):
        with pytest.raises(KeyError):
            release(missing)


def test_each_release_is_in_the_repository_of_its_stream():
    for rel in matrix.RELEASES:
        if rel.stream is CLASSIC:
            assert rel.repository is streams.CLASSIC_REPOSITORY
        elif rel.parts < (10,):
            assert rel.repository is streams.MULTI_ARCH_REPOSITORY, rel.version  # 7.14.x
        else:
            assert rel.repository is streams.STABLE_REPOSITORY, rel.version


def test_torch_index_follows_the_release():
    for rel in matrix.RELEASES:
        if rel.torch_index is None:
            assert rel.parts >= (10,), rel.version  # only 10.x has no index
            # ... and gets AMD's own torch instead (issue 16 item 3)
            assert rel.amd_wheels is torch_builds.AMD_WHEELS[rel.version], rel.version
            assert rel.torch_builds == rel.amd_wheels.builds
            continue
        assert rel.torch_index in torch_builds.TORCH_INDEXES
        major, minor, _ = rel.parts
        assert rel.torch_index.startswith(f"rocm{major}.{minor}"), rel.version
    assert release("6.2.4").torch_index == "rocm6.2.4"
    assert release("6.4.3").torch_builds[-1].torch == "2.9.1"
    assert release("7.0.2").torch_builds[-1].torch == "2.10.0"
    assert release("7.14.1").torch_builds[-1].torch == "2.14.1"


def test_torch_companions_follow_torch_minor_and_torchaudio_stops_at_2_11():
    # torchvision 0.(minor+15) pairs with torch 2.minor since torch 2.0 (PyPI release lists).
    for builds in torch_builds.TORCH_INDEXES.values():
        for b in builds:
            torch_minor = int(b.torch.split(".")[1])
            assert b.torchvision.startswith(f"0.{torch_minor + 15}."), b
            assert b.torchvision.split(".")[2] == b.torch.split(".")[2], b  # patch follows
            if torch_minor >= 12:
                assert b.torchaudio is None, b
            else:
                assert b.torchaudio.split(".")[:2] == b.torch.split(".")[:2], b


def test_only_the_core_sdk_index_requires_a_pip_runtime():
    assert release("7.14.0").torch_runtime == "rocm[device-all,libraries]==7.14.*"
    assert release("7.2.4").torch_runtime is None
    pattern = torch_builds.TORCH_RUNTIME_WHEELS
    for name in ("rocm", "rocm-sdk-core", "rocm-sdk-libraries", "rocm-sdk-device-gfx1100"):
        assert pattern.fullmatch(name), name
    for name in ("rocm-smi", "torch", "rocmsdk", "pytorch-triton-rocm"):
        assert not pattern.fullmatch(name), name


def test_drivers_of_7x_and_the_core_sdk_have_no_trailing_zero():
    for rel in matrix.RELEASES:
        folder = matrix.amdgpu_repo_version(rel)
        if rel.stream is CLASSIC and rel.parts < (7,):
            assert folder == rel.apt_path
        else:
            assert folder and not folder.endswith(".0"), (rel.version, folder)
    assert [matrix.amdgpu_repo_version(release(v)) for v in ("7.2.1", "7.2.2", "7.2.4")] == [
        "30.30.1", "30.30.2", "30.30.4"
    ]  # fmt: skip
    assert matrix.amdgpu_repo_version(release("10.0.0")) == "31.50"


@pytest.mark.parametrize(
    ("version", "gfx", "packages"),
    [
        ("10.1.0", ["gfx1100"], ["amdrocm10.1-gfx1100"]),
        ("10.1.0", ["gfx942", "gfx90a"], ["amdrocm10.1-gfx90a", "amdrocm10.1-gfx942"]),
        ("7.14.1", ["gfx1100"], ["amdrocm7.14-gfx1100"]),  # major.minor, never the patch
        ("10.0.0", None, ["amdrocm10.0"]),  # the host's GPUs unknown: every target
        ("10.0.0", ["gfx906"], ["amdrocm10.0"]),  # no per-target package for it
        ("6.4.3", ["gfx1100"], ["rocm-hip-runtime"]),
    ],
)
def test_default_packages(version, gfx, packages):
    rel = release(version)
    assert rel.stream.default_packages(rel, gfx) == packages


@pytest.mark.parametrize(
    ("name", "version", "stream"),
    [
        ("rocm-core", "6.4.3.60403-128~22.04", CLASSIC),
        ("rocminfo", "1.0.0.70201-81~24.04", CLASSIC),
        ("amdrocm10.0-gfx1100", "10.0.0-4", CORE_SDK),
        ("amdrocm-runtime7.14", "7.14.0-3", CORE_SDK),
        ("amdgpu-dkms", "1:6.12.12.60403-2194681.22.04", None),  # the driver: neither's
        ("rocminfo", "6.1.2-2", None),  # Debian's own
        ("amdrocm-repo", "10.0.0-1~ubuntu2404", None),  # a repository package, not ROCm
    ],
)
def test_streams_tell_their_packages_apart(name, version, stream):
    owners = [s for s in streams.STREAMS if s.owns(name, version)]
    assert owners == ([stream] if stream else [])


def test_version_regexes_match_only_the_release():
    classic = re.compile(CLASSIC.version_regex(release("6.4.3")))
    assert classic.search("6.4.3.60403-128~22.04") and classic.search("1.0.0.60403-128~24.04")
    assert not classic.search("6.4.2.60402-120~22.04")
    core = re.compile(CORE_SDK.version_regex(release("10.0.0")))
    assert core.search("10.0.0-4") and not core.search("10.1.0-2")
    assert not core.search("110.0.0-4") and not core.search("10.0.01-1")


def test_install_roots_and_rocminfo():
    assert release("6.4.3").rocminfo == "/opt/rocm-6.4.3/bin/rocminfo"
    assert release("10.1.0").rocminfo == "/opt/rocm/core-10.1/bin/rocminfo"
    assert release("7.14.1").root == "/opt/rocm/core-7.14"


def test_each_stream_keeps_its_own_files_and_key():
    assert len({s.keyring for s in streams.STREAMS}) == len(streams.STREAMS)
    assert len({s.pin for s in streams.STREAMS}) == len(streams.STREAMS)
    assert len({s.key_fingerprint for s in streams.STREAMS}) == len(streams.STREAMS)
    for stream in streams.STREAMS:
        assert re.fullmatch(r"[0-9A-F]{40}", stream.key_fingerprint)
        assert stream.pin_text() == (
            f"Package: *\nPin: release o={stream.pin_origin}\nPin-Priority: 600\n"
        )
    # 7.14 writes the file name the classic stream uses; 10.x its own deb822 file.
    assert streams.MULTI_ARCH_REPOSITORY.source == streams.CLASSIC_REPOSITORY.source
    assert streams.STABLE_REPOSITORY.source.endswith("amdrocm-stable.sources")


def test_gfx_names():
    for good in ("gfx1100", "gfx942", "gfx90a", "gfx1201", "gfx906"):
        assert gpu_targets.GFX_NAME.match(good)
    for bad in ("1100", "gfx", "GFX1100", "gfx1100:xnack-", "rx7900"):
        assert not gpu_targets.GFX_NAME.match(bad)
    for gfx in streams.CORE_SDK_GFX_PACKAGES:
        assert gpu_targets.GFX_NAME.match(gfx), gfx


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


def test_distro_rows_by_os_release_and_the_override():
    assert matrix.distro("debian", "12.9").key == "debian 12"  # point release ignored
    assert matrix.distro("ubuntu", "24.04", "debian 13").key == "ubuntu 24.04"  # known wins
    assert matrix.distro("linuxmint", "22") is None
    assert matrix.distro("linuxmint", "22", "ubuntu 24.04").key == "ubuntu 24.04"
    assert matrix.distro("linuxmint", "22", "ubuntu 99.04") is None
