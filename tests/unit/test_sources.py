"""What a host fetches, per stream (``rocm_fleet.model.sources``): the one description the deploy
writes its sources from and ``rocm-fleet bundle``, the live mirror and preflight read."""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

import pytest

from rocm_fleet.bundle.command import plan_for
from rocm_fleet.deploy.verify import installed
from rocm_fleet.model import matrix, paths, streams
from rocm_fleet.model.config import load_config
from rocm_fleet.model.decisions import Mirror
from rocm_fleet.model.fleet import Fleet
from rocm_fleet.model.sources import (
    amdgpu_repository,
    host_needs,
    rocm_repository,
    torch_wheels,
)
from unit.conftest import DRIVERLESS

CLASSIC_KEY = ("https://repo.radeon.com/rocm/rocm.gpg.key", streams.CLASSIC.key_fingerprint)
CORE_KEY = streams.CORE_SDK.key_fingerprint


def row(key: str) -> matrix.Distro:
    return next(d for d in matrix.DISTROS if d.key == key)


@pytest.mark.parametrize(
    ("version", "distro", "url", "suite", "key", "keyring", "source"),
    [
        ("6.4.3", "debian 12", "https://repo.radeon.com/rocm/apt/6.4.3", "jammy", CLASSIC_KEY,
         paths.ROCM_KEYRING, paths.ROCM_SOURCE),
        ("7.14.1", "debian 13", "https://repo.amd.com/rocm/packages-multi-arch/debian13", "stable",
         ("https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg", CORE_KEY),
         paths.AMDROCM_KEYRING, paths.ROCM_SOURCE),
        ("10.0.0", "ubuntu 24.04", "https://stable.repo.amd.com/rocm/core/packages/ubuntu2404",
         "stable", ("https://stable.repo.amd.com/rocm/gpg/packages.gpg", CORE_KEY),
         paths.AMDROCM_KEYRING, paths.AMDROCM_SOURCE),
    ],
)  # fmt: skip
def test_each_release_fetches_from_its_streams_repository(
    version, distro, url, suite, key, keyring, source
):
    config = load_config({"rocm_version": version, "pytorch_install": False})
    repository = rocm_repository(config, row(distro))
    assert (repository.url, repository.suite) == (url, suite)
    assert (repository.key.url, repository.key.fingerprint) == key
    assert (repository.keyring, repository.source) == (keyring, source)


def test_a_deb822_source_points_at_the_mirror_with_the_key_fetched_from_it():
    config = load_config({"rocm_version": "10.0.0", "pytorch_install": False})
    mirror = Mirror("http://10.0.0.5:8080")
    served = rocm_repository(config, row("ubuntu 24.04")).via(mirror)
    assert served.source_text() == (
        "X-Repo-Id: amdrocm-stable\nTypes: deb\n"
        "URIs: http://10.0.0.5:8080/stable.repo.amd.com/rocm/core/packages/ubuntu2404/\n"
        "Suites: stable\nComponents: main\nArchitectures: amd64\n"
        f"Signed-By: {paths.AMDROCM_KEYRING}\nEnabled: yes\n"
    )
    assert served.key.url == "http://10.0.0.5:8080/stable.repo.amd.com/rocm/gpg/packages.gpg"


def test_the_driver_repository_is_signed_by_repo_radeon_coms_key_in_either_stream():
    core = load_config({"rocm_version": "10.0.0", "rocm_driver": "dkms", "pytorch_install": False})
    driver = amdgpu_repository(core, row("debian 13"))
    assert (driver.url, driver.suite) == ("https://repo.radeon.com/amdgpu/31.50/ubuntu", "noble")
    assert (driver.key.url, driver.key.fingerprint) == CLASSIC_KEY
    assert (driver.keyring, driver.source) == (paths.ROCM_KEYRING, paths.AMDGPU_SOURCE)
    # Under the classic stream the ROCm source's key signs both (an override follows).
    classic = load_config({"rocm_version": "7.2.1", "rocm_driver": "dkms",
                           "rocm_key_fingerprint": "ab" * 20})  # fmt: skip
    assert amdgpu_repository(classic, row("debian 12")).key.fingerprint == "AB" * 20
    unknown = load_config({**DRIVERLESS, "pytorch_install": False, "rocm_driver": "dkms"})
    assert amdgpu_repository(unknown, row("debian 13")) is None  # the matrix knows no driver


def test_a_core_sdk_torch_brings_its_pip_runtime_into_the_wheels_and_the_verified_stack():
    config = load_config({"rocm_version": "7.14.1", "expected_gfx": "gfx942"})
    wheels = torch_wheels(config, matrix.HOST_RUNTIMES["debian 13"])
    assert wheels.index_url == "https://download.pytorch.org/whl/rocm7.14"
    assert wheels.requirements() == [
        "torch==2.14.1+rocm7.14", "torchvision==0.29.1+rocm7.14",
        "rocm[device-all,libraries]==7.14.*",
    ]  # fmt: skip
    assert installed(config) == (
        "rocm 7.14.1 (core-sdk, /opt/rocm/core-7.14/bin/rocminfo)\n"
        "torch torch==2.14.1+rocm7.14 torchvision==0.29.1+rocm7.14 "
        "rocm[device-all,libraries]==7.14.*\n"
    )
    classic = load_config({"rocm_version": "6.4.3", "pytorch_install": False})
    assert installed(classic) == "rocm 6.4.3 (classic, /opt/rocm-6.4.3/bin/rocminfo)\n"


def test_a_core_sdk_hosts_packages_follow_its_gpus():
    config = load_config({"rocm_version": "7.14.1", "expected_gfx": "gfx942"})
    packages = lambda gfx: host_needs(config, row("debian 13"), gfx).apt[0].packages  # noqa: E731
    assert packages(None) == ("amdrocm7.14-gfx942",)  # unknown: as expected_gfx says
    assert packages(["gfx942", "gfx942"]) == ("amdrocm7.14-gfx942",)
    assert packages(["gfx942", "gfx1100"]) == ("amdrocm7.14",)  # a GPU it doesn't name


def test_a_live_mirror_proxies_every_server_the_release_fetches_from():
    fleet = Fleet({"n": {"rocm_version": "7.14.1", "rocm_driver": "dkms"}})
    urls = fleet.upstream_urls("n")
    assert {urlsplit(url).netloc for url in urls} == {
        "repo.amd.com", "repo.radeon.com", "download.pytorch.org"
    }  # fmt: skip
    assert "https://repo.amd.com/rocm/packages-multi-arch/ubuntu2604" in urls  # every distro
    assert "https://repo.radeon.com/rocm/rocm.gpg.key" in urls  # the driver's key
    stable = Fleet({"n": {"rocm_version": "10.0.0", "pytorch_install": False}})
    assert {urlsplit(url).netloc for url in stable.upstream_urls("n")} == {"stable.repo.amd.com"}


def test_the_bundle_plans_core_sdk_hosts_from_the_same_description(tmp_path, plain_inventories):
    inventory = tmp_path / "fleet.py"
    inventory.write_text(
        "hosts = [\n"
        "    ('core', {'rocm_version': '7.14.1', 'expected_gfx': 'gfx942'}),\n"
        "    ('stable', {'rocm_version': '10.0.0', 'rocm_driver': 'dkms',\n"
        "                'pytorch_install': False}),\n"
        "    ('classic', {'rocm_version': '6.4.3', 'pytorch_install': False}),\n"
        "]\n"
    )
    args = argparse.Namespace(inventory=str(inventory), limit=[], distro=["debian 13"])
    plan, notes = plan_for(args)
    # Debian 13 takes repo.radeon.com's noble suite for a classic release.
    assert notes == [] and sorted(plan.hosts) == ["classic", "core", "stable"]
    apt = {
        (r.url, r.suite, r.key.url, r.key.fingerprint, r.keyring): (sorted(pkgs), sorted(hosts))
        for r, (pkgs, hosts) in plan.apt.items()
    }
    assert apt == {
        ("https://repo.amd.com/rocm/packages-multi-arch/debian13", "stable",
         "https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg", CORE_KEY,
         paths.AMDROCM_KEYRING): (["amdrocm7.14-gfx942"], ["core"]),
        ("https://stable.repo.amd.com/rocm/core/packages/debian13", "stable",
         "https://stable.repo.amd.com/rocm/gpg/packages.gpg", CORE_KEY,
         paths.AMDROCM_KEYRING): (["amdrocm10.0"], ["stable"]),
        ("https://repo.radeon.com/amdgpu/31.50/ubuntu", "noble", *CLASSIC_KEY,
         paths.ROCM_KEYRING): (["amdgpu-dkms"], ["stable"]),
        ("https://repo.radeon.com/rocm/apt/6.4.3", "noble", *CLASSIC_KEY,
         paths.ROCM_KEYRING): (["rocm-hip-runtime"], ["classic"]),
    }  # fmt: skip
    ((index, runtime), (requirements, hosts)) = next(iter(plan.wheels.items()))
    assert (index, runtime.python, sorted(hosts)) == (
        "https://download.pytorch.org/whl/rocm7.14", "3.13", ["core"]
    )  # fmt: skip
    assert "rocm[device-all,libraries]==7.14.*" in requirements
    assert plan.hosts["core"]["stream"] == "core-sdk"
    assert plan.hosts["core"]["repository"] == (
        "https://repo.amd.com/rocm/packages-multi-arch/debian13 stable main"
    )
