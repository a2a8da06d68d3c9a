"""Bad inventory data is refused with the key, the value and what would be valid."""

import pytest

from rocm_fleet.config import ConfigError, all_settings, load_config

GOOD = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_users": ["alice"]}


def test_defaults_and_newest_torch():
    config = load_config(dict(GOOD))
    assert config.rocm_packages == ["rocm-hip-runtime"]
    assert config.torch_build.torch == "2.9.1"
    assert config.torch_index_url == "https://download.pytorch.org/whl/rocm6.4"
    assert config.expected_gfx_list == ["gfx1100"]


def test_explicit_torch_and_mirrors():
    config = load_config({**GOOD, "torch_version": "2.8.0", "pytorch_index_base_url":
                          "https://mirror.example/whl/"})  # fmt: skip
    assert config.torch_build.torchvision == "0.23.0"
    assert config.torch_index_url == "https://mirror.example/whl/rocm6.4"


def test_connector_and_foreign_keys_pass():
    load_config({**GOOD, "ssh_user": "admin", "_sudo": True, "datacenter": "fra1"})


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"rocm_version": "6.2.3"}, ["'rocm_version'", "'6.2.3'", "6.0.0", "7.2.4"]),
        ({"rocm_version": "7.14.0"}, ["Core SDK"]),
        ({"rocm_version": None}, ["'rocm_version'", "None", "non-empty string"]),
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
        ({"rocm_version": "7.0.2"}, ["verified PyTorch index", "pytorch_install"]),
        ({"rocm_extra": 1}, ["'rocm_extra'", "not a rocm-fleet setting"]),
    ],
)
def test_bad_input_is_refused_with_key_value_and_valid_values(change, needles):
    with pytest.raises(ConfigError) as error:
        load_config({**GOOD, **change}, "gpu07")
    message = str(error.value)
    assert message.startswith("gpu07: ")
    for needle in needles:
        assert needle in message, message


def test_release_without_torch_index_is_fine_without_pytorch():
    config = load_config({**GOOD, "rocm_version": "7.0.2", "pytorch_install": False})
    assert config.torch_build is None


def test_every_setting_is_documented_and_unique():
    keys = [s.key for s in all_settings()]
    assert len(keys) == len(set(keys))
    for s in all_settings():
        assert s.meaning and s.meaning[0].isupper(), s.key
