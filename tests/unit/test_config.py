"""Bad inventory data is refused with the key, the value and what would be valid; good data
resolves to the matrix rows of the release's stream."""

import dataclasses

import pytest

from rocm_fleet.model.config import Config, ConfigError, load_config
from rocm_fleet.model.gpu_targets import GPU_TARGETS
from rocm_fleet.model.settings import RENAMED, SETTINGS, VALID, Settings
from rocm_fleet.model.torch_builds import TorchBuild

GOOD = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_users": ["alice"]}


def refusal(data: dict) -> str:
    with pytest.raises(ConfigError) as error:
        load_config(data, "gpu07")
    message = str(error.value)
    assert message.startswith("gpu07: ")
    return message


def test_defaults_and_newest_torch():
    config = load_config(dict(GOOD))
    assert isinstance(config, Config) and isinstance(config, Settings)
    assert config.rocm_packages is None  # the stream's default, chosen with the host's GPUs
    assert config.wanted_packages(["gfx1100"]) == ["rocm-hip-runtime"]
    assert config.torch_build.torch == "2.9.1"
    assert config.torch.index_url == "https://download.pytorch.org/whl/rocm6.4"
    assert config.torch.requirements() == [
        "torch==2.9.1+rocm6.4", "torchaudio==2.9.1+rocm6.4", "torchvision==0.24.1+rocm6.4"
    ]  # fmt: skip
    assert config.expected_gfx_list == ["gfx1100"]
    assert config.release.version == "6.4.3" and config.release.numeric_tag == "60403"
    assert config.venv_python == "/opt/rocm-fleet/venv/bin/python"
    assert (config.rocm_driver, config.rocm_reboot, config.rocm_reboot_parallel) == (
        "inbox", "never", 1
    )  # fmt: skip
    assert config.rocm_kernel_backports == "auto" and config.rocm_kernel_backports_mirror is None
    assert config.apt_base_url == "https://repo.radeon.com/rocm/apt"
    assert config.key_url == "https://repo.radeon.com/rocm/rocm.gpg.key"
    assert config.key_fingerprint == "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"


def test_list_defaults_are_not_shared_between_hosts():
    one, two = load_config(dict(GOOD)), load_config({"rocm_version": "6.4.3"})
    one.rocm_users.append("bob")
    assert two.rocm_users == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.rocm_version = "7.2.1"  # type: ignore[misc]


def test_explicit_torch_and_mirrors():
    config = load_config(
        {**GOOD, "torch_version": "2.8.0", "pytorch_index_base_url": "https://mirror.example/whl/"}
    )
    assert config.torch_build.torchvision == "0.23.0"
    assert config.torch.index_url == "https://mirror.example/whl/rocm6.4"


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


def test_expected_gfx_list_and_venv_python():
    config = load_config(
        {**GOOD, "expected_gfx": ["gfx942", "gfx90a"], "pytorch_venv": "/srv/ml/venv/"}
    )
    assert config.expected_gfx_list == ["gfx942", "gfx90a"]
    assert config.venv_python == "/srv/ml/venv/bin/python"
    assert load_config({"rocm_version": "6.4.3"}).expected_gfx_list == []


@pytest.mark.parametrize(
    "key",
    ["datacenter", "gpu_vendor", "torch_compile", "gpu_count", "rocm_home", "pytorch_venv_path",
     "expected_version", "preflight_checks", "torch_cuda_arch_list", "rocm_extra"],
)  # fmt: skip
def test_connector_and_other_deploys_keys_pass(key):
    """A library claims no prefix: a key of the user's own deploy passes whatever its name,
    unless it is a near-miss of one of ours."""
    # pyinfra's connector keys and the other deploys' keys are not settings: accepted and
    # ignored (no error, the same config as without them).
    config = load_config({**GOOD, "ssh_user": "admin", "_sudo": True, key: "theirs"})
    assert config == load_config(GOOD)


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"rocm_version": "6.2.9"}, ["'rocm_version'", "'6.2.9'", "did you mean '6.2.4'"]),
        ({"rocm_version": "10.2.0"}, ["'10.2.0'", "`rocm-fleet matrix check`"]),
        ({"rocm_version": None}, ["'rocm_version'", "None", "a release string such as '6.4.3'"]),
        ({"torch_version": "2.10.0"}, ["'torch_version'", "'2.10.0'", "rocm6.4", "2.9.1"]),
        ({"rocm_verison": "6.4.3"}, ["'rocm_verison'", "did you mean 'rocm_version'"]),
        ({"rocm_users": "alice"}, ["'rocm_users'", "'alice'", "a list of user names",
                                   "written as a list even for one, e.g. ['alice']"]),
        ({"rocm_users": "alice,bob"}, ["e.g. ['alice', 'bob']"]),
        ({"rocm_no_proxy": "localhost"}, ["'rocm_no_proxy'", "e.g. ['localhost']"]),
        ({"rocm_packages": "rocm"}, ["'rocm_packages'", "e.g. ['rocm']"]),
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
        ({"rocm_version": "10.0.0", "torch_version": "2.14.1"},
         ["'torch_version'", "'2.14.1'",
          "https://stable.repo.amd.com/rocm/whl-next/", "2.11.0, 2.12.0, 2.13.0"]),
        ({"rocm_version": "7.14.1", "torch_version": "2.13.0"},
         ["'torch_version'", "'2.13.0'", "rocm7.14", "2.14.0, 2.14.1"]),
        ({"rocm_driver": "amdgpu-pro"}, ["'rocm_driver'", "'amdgpu-pro'", "'inbox', 'dkms'"]),
        ({"rocm_reboot_parallel": 0}, ["'rocm_reboot_parallel'", "whole number >= 1"]),
        ({"rocm_kernel_backports_mirror": "deb.debian.org"},
         ["'rocm_kernel_backports_mirror'", "http:// or https:// URL; or leave it unset"]),
        ({"rocm_mok_password_env": "MOK PASSWORD"}, ["'rocm_mok_password_env'", "environment"]),
        ({"rocm_distro_override": "mint 22"}, ["'rocm_distro_override'", "'ubuntu 24.04'"]),
        ({"rocm_state": "removed"}, ["'rocm_state'", "'present', 'absent'"]),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_key_value_and_valid_values(change, needles):
    message = refusal({**GOOD, **change})
    for needle in needles:
        assert needle in message, message


@pytest.mark.parametrize(("old", "new"), sorted(RENAMED.items()))
def test_renamed_keys_are_refused_with_their_new_name(old, new):
    value = SETTINGS[new].default
    assert refusal({**GOOD, old: value}) == (f"gpu07: inventory key {old!r} was renamed to {new!r}")
    load_config({**GOOD, new: value})  # the new name takes the same value


def test_the_renames_are_the_ones_of_the_previous_release():
    assert RENAMED == {
        "driver": "rocm_driver",
        "amdgpu_apt_base_url": "rocm_amdgpu_apt_base_url",
        "kernel_backports": "rocm_kernel_backports",
        "kernel_backports_mirror": "rocm_kernel_backports_mirror",
        "mok_password_env": "rocm_mok_password_env",
        "reboot": "rocm_reboot",
        "reboot_parallel": "rocm_reboot_parallel",
        "reboot_timeout": "rocm_reboot_timeout",
        "migrate_from_cuda": "rocm_migrate_from_cuda",
    }


@pytest.mark.parametrize(
    ("key", "meant"),
    [("rocm_reboots", "rocm_reboot"), ("torch_versions", "torch_version"),
     ("rocm_verison", "rocm_version"), ("rocm_user", "rocm_users"),
     ("expected_gpu_cnt", "expected_gpu_count"), ("expected_gfxs", "expected_gfx"),
     ("pytorch_env", "pytorch_venv"), ("rocm_kernel_backport", "rocm_kernel_backports"),
     ("preflight_min_free_gbs", "preflight_min_free_gb"), ("rocm_mirorr", "rocm_mirror")],
)  # fmt: skip
def test_a_near_miss_of_a_setting_names_the_setting(key, meant):
    assert refusal({**GOOD, key: "x"}) == (
        f"gpu07: unknown inventory key {key!r}: did you mean {meant!r}?"
    )


def test_a_missing_rocm_version_is_required_not_empty():
    message = refusal({"expected_gfx": "gfx1100"})
    assert message.startswith("gpu07: inventory key 'rocm_version' is required and not set: ")
    assert "''" not in message and "\n" not in message


@pytest.mark.parametrize(
    ("version", "meant", "series_note"),
    [("7.14", "7.14.1", True), ("6.4", "6.4.4", True), ("7.2", "7.2.4", True),
     ("6.4.9", "6.4.4", False)],
)  # fmt: skip
def test_a_release_the_matrix_lacks_gets_the_newest_of_its_series(version, meant, series_note):
    """X.Y is refused, never read as the newest X.Y.z: AMD's X.Y directories are X.Y.0, and
    a matrix update must not move a host; the message says which release was meant."""
    message = refusal({**GOOD, "rocm_version": version})
    series = ".".join(version.split(".")[:2])
    assert message.startswith(
        f"gpu07: inventory key 'rocm_version' has value {version!r}; did you mean {meant!r} "
        f"(the newest {series}.z the matrix knows"
    )
    assert ("X.Y is not read as the newest X.Y.z" in message) is series_note
    assert "6.0.0" not in message  # no list of every release


def test_a_release_beyond_the_matrix_names_the_range_and_the_check():
    message = refusal({**GOOD, "rocm_version": "8.0.0"})
    assert "(6.0.0 to 10.1.0; `rocm-fleet matrix` lists them)" in message
    assert "did you mean" not in message


@pytest.mark.parametrize(("torch", "hint"), [(2.5, "quote it"), ("2.9", "did you mean '2.9.1'?")])
def test_a_torch_version_as_a_number_or_a_series_gets_a_hint(torch, hint):
    message = refusal({**GOOD, "torch_version": torch})
    assert f"'torch_version' has value {torch!r}" in message and hint in message


def test_an_error_names_the_file_that_set_the_key():
    def origin(key):
        return {"rocm_version": "group_data/radeon.py", "rocm_reboots": "--data"}.get(key)

    with pytest.raises(ConfigError) as refused:
        load_config({"rocm_version": "7.14"}, "gpu07", origin)
    assert str(refused.value).startswith(
        "gpu07: inventory key 'rocm_version' has value '7.14' (set in group_data/radeon.py); "
        "did you mean '7.14.1'"
    )
    with pytest.raises(ConfigError, match=r"'rocm_reboots' \(set in --data\): did you mean"):
        load_config({**GOOD, "rocm_reboots": "allow"}, "gpu07", origin)


@pytest.mark.parametrize("spelling", ["lower", "spaced"])
def test_a_fingerprint_in_any_spelling_is_the_upper_case_one(spelling):
    amd = "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"
    given = (
        amd.lower() if spelling == "lower" else " ".join(amd[i : i + 4] for i in range(0, 40, 4))
    )
    config = load_config(
        {**GOOD, "rocm_key_fingerprint": given, "rocm_amdgpu_key_fingerprint": given}
    )
    assert config.rocm_key_fingerprint == config.key_fingerprint == amd
    assert config.rocm_amdgpu_key_fingerprint == amd


@pytest.mark.parametrize("number", [6.4, 7, 6.41])
def test_a_numeric_rocm_version_is_asked_to_be_quoted(number):
    message = refusal({**GOOD, "rocm_version": number})
    assert f"'rocm_version' has value {number!r}" in message
    assert f"({number!r} arrived as a number: quote it in the inventory" in message
    assert "--data 'rocm_version=\"6.4.3\"'" in message


def test_an_unknown_gfx_target_is_refused_listing_the_known_ones():
    message = refusal({**GOOD, "expected_gfx": ["gfx1100", "gfx9999"]})
    known = ", ".join(target.gfx for target in GPU_TARGETS)
    assert message == (
        f"gpu07: inventory key 'expected_gfx' has value ['gfx1100', 'gfx9999']; expected "
        f"gfx targets the matrix knows ({known}), one or a list; 'gfx9999' is not one; or "
        "leave it unset"
    )
    assert "gfx942" in known and "gfx1201" in known


def test_release_without_torch_index_is_fine_without_pytorch():
    config = load_config({**GOOD, "rocm_version": "10.1.0", "pytorch_install": False})
    assert config.torch is None and config.torch_build is None


def test_every_setting_is_documented_and_checked():
    for key, setting in SETTINGS.items():
        meaning = setting.metadata["meaning"]
        assert meaning[0].isupper() or meaning.startswith("`"), key  # a sentence or a value
        assert VALID[key] and setting.metadata["concern"], key
        assert key not in RENAMED
    assert set(RENAMED.values()) <= set(SETTINGS)


@pytest.mark.parametrize(
    ("rocm", "torch", "build"),
    [
        # newer than the data: asked for, paired as every recorded build pairs them; the lock
        # reads the live index, which is the final word (issue 38)
        ("7.14.1", "2.15.0", ("2.15.0", "0.30.0", None)),
        # AMD's index: paired as another of AMD's releases pairs that torch
        ("10.1.0", "2.11.0", ("2.11.0", "0.26.0", "2.11.0")),
        # PyTorch's build matrix says 2.10.0 was built for rocm7.0 / rocm7.1 only: refused
        ("6.4.3", "2.10.0", None),
        # no AMD release pairs 2.14.1: refused
        ("10.0.0", "2.14.1", None),
    ],
)
def test_a_torch_the_data_lags_on_is_left_to_the_live_index(rocm, torch, build):
    data = {**GOOD, "rocm_version": rocm, "torch_version": torch, "expected_gfx": "gfx942"}
    if build is None:
        assert "expected a torch published on" in refusal(data)
    else:
        assert load_config(data).torch_build == TorchBuild(*build)
