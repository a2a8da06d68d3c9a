"""Bad inventory data is refused with the key, the value and what would be valid; good data
resolves to the matrix rows of the release's stream."""

import pytest

from rocm_fleet.config import ConfigError, load_config
from rocm_fleet.settings import SETTINGS

GOOD = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_users": ["alice"]}


def test_defaults_and_newest_torch():
    config = load_config(dict(GOOD))
    assert config.wanted_packages(["gfx1100"]) == ["rocm-hip-runtime"]
    assert config.torch_build.torch == "2.9.1"
    assert config.torch_index_url == "https://download.pytorch.org/whl/rocm6.4"
    assert config.expected_gfx_list == ["gfx1100"]
    assert config.apt_base_url == "https://repo.radeon.com/rocm/apt"
    assert config.key_url == "https://repo.radeon.com/rocm/rocm.gpg.key"
    assert config.key_fingerprint == "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"


@pytest.mark.parametrize(
    ("version", "base", "key"),
    [
        ("7.14.0", "https://repo.amd.com/rocm/packages-multi-arch",
         "https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg"),
        ("10.1.0", "https://stable.repo.amd.com/rocm/core/packages",
         "https://stable.repo.amd.com/rocm/gpg/packages.gpg"),
    ],
)  # fmt: skip
def test_a_core_sdk_release_takes_its_stream_defaults(version, base, key):
    config = load_config({**GOOD, "rocm_version": version, "pytorch_install": False})
    assert (config.apt_base_url, config.key_url) == (base, key)
    assert config.key_fingerprint == "D0F004A0025A1145C7807FCD0701EAC4D5E02107"
    assert config.release.rocminfo.startswith("/opt/rocm/core-")


def test_explicit_torch_and_mirrors():
    config = load_config(
        {**GOOD, "torch_version": "2.8.0",
         "pytorch_index_base_url": "https://mirror.example/whl/",
         "rocm_apt_base_url": "https://mirror.example/radeon/rocm/apt",
         "rocm_key_fingerprint": "0123456789abcdef0123456789abcdef01234567"}
    )  # fmt: skip
    assert config.torch_build.torchvision == "0.23.0"
    assert config.torch_index_url == "https://mirror.example/whl/rocm6.4"
    assert config.apt_base_url == "https://mirror.example/radeon/rocm/apt"
    assert config.key_fingerprint == "0123456789ABCDEF0123456789ABCDEF01234567"


@pytest.mark.parametrize(
    ("expected", "host", "packages"),
    [
        ("gfx1100", ["gfx1100"], ["amdrocm10.0-gfx1100"]),
        (["gfx942"], ["gfx942"] * 8, ["amdrocm10.0-gfx942"]),
        ("gfx1100", ["gfx1036", "gfx1100"], ["amdrocm10.0"]),  # an iGPU expected_gfx omits
        ("gfx1100", ["gfx1100", None], ["amdrocm10.0"]),  # a device the matrix can't name
        ("gfx1100", [], ["amdrocm10.0-gfx1100"]),  # GPU-less image builder for gfx1100
        (None, ["gfx1100"], ["amdrocm10.0"]),
        ("gfx1100", None, ["amdrocm10.0"]),  # GPUs unknown
    ],
)
def test_the_per_target_package_needs_expected_gfx_to_name_every_gpu(expected, host, packages):
    data = {"rocm_version": "10.0.0", "pytorch_install": False, "expected_gfx": expected}
    assert load_config(data).wanted_packages(host) == packages


def test_rocm_packages_win_over_the_stream_default():
    data = {"rocm_version": "10.0.0", "pytorch_install": False, "expected_gfx": "gfx1100",
            "rocm_packages": ["amdrocm-core-sdk10.0-gfx1100"]}  # fmt: skip
    assert load_config(data).wanted_packages(["gfx1100"]) == ["amdrocm-core-sdk10.0-gfx1100"]


def test_connector_and_foreign_keys_pass():
    load_config({**GOOD, "ssh_user": "admin", "_sudo": True, "datacenter": "fra1"})


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"rocm_version": "6.2.9"}, ["'rocm_version'", "'6.2.9'", "6.0.0", "7.2.4", "10.1.0"]),
        ({"rocm_version": "10.2.0"}, ["'10.2.0'", "`rocm-fleet matrix check`"]),
        ({"rocm_version": None}, ["'rocm_version'", "None", "release string"]),
        ({"torch_version": "2.10.0"}, ["'torch_version'", "'2.10.0'", "rocm6.4", "2.9.1"]),
        ({"rocm_verison": "6.4.3"}, ["'rocm_verison'", "did you mean 'rocm_version'"]),
        ({"rocm_users": "alice"}, ["'rocm_users'", "'alice'", "a list of user names"]),
        ({"rocm_users": ["Alice Smith"]}, ["'rocm_users'", "'Alice Smith' is not one"]),
        ({"expected_gfx": "rx7900"}, ["'expected_gfx'", "'rx7900'", "gfx target"]),
        ({"expected_gfx": []}, ["'expected_gfx'"]),
        ({"rocm_apt_base_url": "ftp://mirror/rocm"}, ["'rocm_apt_base_url'", "http://"]),
        ({"rocm_key_fingerprint": "9386B48A1A693C5C"}, ["'rocm_key_fingerprint'", "40 hex"]),
        ({"expected_gpu_count": -1}, ["'expected_gpu_count'", "-1", "whole number"]),
        ({"expected_gpu_count": True}, ["'expected_gpu_count'"]),
        ({"pytorch_install": "yes"}, ["'pytorch_install'", "true or false"]),
        ({"pytorch_venv": "opt/venv"}, ["'pytorch_venv'", "absolute path"]),
        ({"rocm_packages": ["rocm hip"]}, ["'rocm_packages'", "Debian package name"]),
        ({"rocm_version": "10.0.0"},
         ["'rocm_version'", "'10.0.0'", "download.pytorch.org publishes no index for ROCm 10.x",
          "pytorch_install: False"]),
        ({"rocm_version": "7.14.1", "torch_version": "2.13.0"},
         ["'torch_version'", "'2.13.0'", "rocm7.14", "2.14.0, 2.14.1"]),
        ({"rocm_extra": 1}, ["'rocm_extra'", "not a rocm-fleet setting"]),
        ({"driver": "dkms"}, ["'driver'", "renamed to 'rocm_driver'"]),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_key_value_and_valid_values(change, needles):
    with pytest.raises(ConfigError) as error:
        load_config({**GOOD, **change}, "gpu07")
    message = str(error.value)
    assert message.startswith("gpu07: ")
    for needle in needles:
        assert needle in message, message


def test_a_release_without_torch_index_is_fine_without_pytorch():
    config = load_config({**GOOD, "rocm_version": "10.1.0", "pytorch_install": False})
    assert config.torch_build is None


def test_every_setting_is_documented_and_prefixed():
    from rocm_fleet.settings import PREFIXES

    for key, field in SETTINGS.items():
        assert key.startswith(PREFIXES), key
        meaning = field.metadata["meaning"]
        assert meaning and (meaning[0].isupper() or meaning[0] == "`"), key
