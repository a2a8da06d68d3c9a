"""The rocm_containers_* settings: defaults, and bad values refused at load with the key, the
value and what is valid (attack-shaped values included)."""

from __future__ import annotations

import pytest

from rocm_fleet.model.config import ConfigError, load_config

GOOD = {"rocm_version": "6.4.3"}


def refusal(data: dict) -> str:
    with pytest.raises(ConfigError) as error:
        load_config({**GOOD, **data}, "gpu07")
    return str(error.value)


def test_the_feature_is_off_by_default():
    config = load_config(dict(GOOD), "gpu07")
    assert config.rocm_containers_engines == []
    assert config.rocm_containers_install_engine is True
    assert config.rocm_containers_rootless_users == []
    assert config.rocm_containers_restart_running is False
    assert config.rocm_containers_toolkit_version is None
    assert config.rocm_containers_images == []


def test_good_values_pass():
    config = load_config(
        {
            **GOOD,
            "rocm_containers_engines": ["podman", "docker"],
            "rocm_containers_rootless_users": ["alice", "_svc-ml"],
            "rocm_containers_toolkit_version": "1.2.0",
            "rocm_containers_images": [
                "registry.example.org/ml/pytorch:2.9",
                "localhost:5000/rocm/dev",
                "10.0.0.5:5000/a/b_c.d--e@sha256:" + "a" * 64,
                "mirror:443/library/alpine:3.20",
                "docker.io/rocm/pytorch:latest",  # a public registry, named on purpose
            ],
        },
        "gpu07",
    )
    assert config.rocm_containers_engines == ["podman", "docker"]


@pytest.mark.parametrize(
    ("key", "value", "needles"),
    [
        ("rocm_containers_engines", "docker", ["written as a list", "['docker']"]),
        ("rocm_containers_engines", ["docker", "docker"], ["each once"]),
        ("rocm_containers_engines", ["containerd"], ["'docker' and/or 'podman'"]),
        ("rocm_containers_install_engine", "yes", ["true or false"]),
        ("rocm_containers_restart_running", 1, ["true or false"]),
        ("rocm_containers_toolkit_version", "1.4.0", ["'1.3.0'"]),
        ("rocm_containers_toolkit_version", 1.3, ["'1.3.0'"]),
        ("rocm_containers_rootless_users", ["alice;reboot"], ["'alice;reboot' is not one"]),
        ("rocm_containers_rootless_users", ["alice\nroot:0:1"], ["is not one"]),
        ("rocm_containers_rootless_users", ["../root"], ["'../root' is not one"]),
        ("rocm_containers_rootless_users", ["$(id)"], ["is not one"]),
        ("rocm_containers_rootless_users", ["machine$"], ["'machine$' is not one"]),
        ("rocm_containers_rootless_users", ["Alice"], ["is not one"]),
        ("rocm_containers_rootless_users", ["-o"], ["is not one"]),
        ("rocm_containers_images", ["rocm/pytorch:latest"], ["naming their registry"]),
        ("rocm_containers_images", ["pytorch"], ["naming their registry"]),
        ("rocm_containers_images", ["registry.example.org/../etc/passwd"], ["is not one"]),
        ("rocm_containers_images", ["registry.example.org/ml/x;rm -rf /"], ["is not one"]),
        ("rocm_containers_images", ["registry.example.org/ml/x\n--privileged"], ["is not one"]),
        ("rocm_containers_images", ["registry.example.org/ml/x $(id)"], ["is not one"]),
        ("rocm_containers_images", ["-registry.example.org/ml/x"], ["is not one"]),
        ("rocm_containers_images", ["--privileged"], ["is not one"]),
        ("rocm_containers_images", ["https://registry.example.org/ml/x"], ["is not one"]),
        ("rocm_containers_images", ["user:pw@registry.example.org/ml/x"], ["is not one"]),
        ("rocm_containers_images", ["registry.example.org/ML/x"], ["is not one"]),
        ("rocm_containers_images", ["registry.example.org/ml/x@sha256:abc"], ["is not one"]),
        ("rocm_containers_images", ["registry.example.org/ml/x:" + "t" * 129], ["is not one"]),
        ("rocm_containers_images", "registry.example.org/ml/x", ["written as a list"]),
    ],
)
def test_bad_values_are_refused_with_key_value_and_what_is_valid(key, value, needles):
    message = refusal({key: value})
    assert message.startswith(f"gpu07: inventory key '{key}' has value ")
    for needle in needles:
        assert needle in message, message
