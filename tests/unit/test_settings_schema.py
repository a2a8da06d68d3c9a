"""The settings schema (model/settings.py): what documents it is generated from it and
current, every bad key of a host is reported at once, near-misses and hints, and the
evidence for carrying it on pydantic with rocm-fleet's own rules."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from rocm_fleet.model import settings, settings_reference
from rocm_fleet.model.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_users": ["alice"]}


def test_the_reference_page_and_the_schema_in_docs_are_current():
    page = (ROOT / "docs/settings.md").read_text()
    assert page == settings_reference.reference_page(), "run `make settings-docs`"
    schema = json.loads((ROOT / "docs/settings.schema.json").read_text())
    assert schema == settings_reference.json_schema(), "run `make settings-docs`"
    for key in settings.SETTINGS:
        assert f"| `{key}` |" in page


def test_the_schema_describes_every_setting_with_its_default_and_concern():
    schema = settings_reference.json_schema()
    assert schema["required"] == ["rocm_version"]
    assert list(schema["properties"]) == list(settings.SETTINGS)
    users = schema["properties"]["rocm_users"]
    assert users["type"] == "array" and users["default"] == []
    assert users["x-concern"] == "GPU groups" and users["description"].startswith("Existing")
    assert schema["properties"]["rocm_reboot"]["enum"] == ["allow", "never"]
    assert schema["properties"]["rocm_mirror_port"]["maximum"] == 65535
    assert "default" not in schema["properties"]["rocm_version"]


def _patterns(node):
    if isinstance(node, dict):
        if "pattern" in node:
            yield node["pattern"]
        for value in node.values():
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_the_schemas_patterns_are_anchored_and_refuse_file_syntax():
    """An editor's check is the same grammar: every pattern is anchored at both ends (JSON
    Schema's patterns search), and none lets a quote, a newline or a brace through."""
    for pattern in _patterns(settings_reference.json_schema()):
        assert pattern.startswith("^(?:") and pattern.endswith(")$"), pattern
        ecma = pattern[:-1] + r"\Z"  # JSON Schema's $ is the end (Python's lets a \n by)
        for attack in ('http://a"b/', "/opt/venv\n", "a;b", "{x}", "x y"):
            assert not re.search(ecma, attack), (pattern, attack)
    url = settings_reference.json_schema()["properties"]["pytorch_index_base_url"]["pattern"]
    assert re.search(url, "https://download.pytorch.org/whl")


def test_pydantic_alone_would_coerce_what_the_rules_refuse():
    """The evidence for rocm-fleet's own rules inside pydantic's schema: pydantic's lax
    types take "yes" for true and "8080" for a port; its strict ones refuse them, but
    say only "Input should be a valid list" where rocm-fleet says what to write."""
    assert TypeAdapter(bool).validate_python("yes") is True
    assert TypeAdapter(int).validate_python("8080") == 8080
    with pytest.raises(ValidationError, match="Input should be a valid list"):
        TypeAdapter(list[str], config={"strict": True}).validate_python("alice")
    with pytest.raises(ConfigError, match="true or false"):
        load_config({**GOOD, "pytorch_install": "yes"}, "gpu07")
    with pytest.raises(ConfigError, match="a TCP port"):
        load_config({**GOOD, "rocm_mirror_port": "8080"}, "gpu07")


def test_every_bad_key_of_a_host_is_reported_in_one_run():
    data = {
        "rocm_version": "7.2.1",
        "rocm_users": "alice",
        "pytorch_install": "yes",
        "rocm_reboots": "allow",
        "driver": "dkms",
        "rocm_mirror_port": 0,
    }
    with pytest.raises(ConfigError) as refused:
        load_config(data, "gpu07")
    lines = str(refused.value).splitlines()
    assert lines == [
        "gpu07: unknown inventory key 'rocm_reboots': did you mean 'rocm_reboot'?",
        "gpu07: inventory key 'driver' was renamed to 'rocm_driver'",
        "gpu07: inventory key 'rocm_users' has value 'alice'; expected a list of user names, "
        "written as a list even for one, e.g. ['alice']",
        "gpu07: inventory key 'pytorch_install' has value 'yes'; expected true or false",
        "gpu07: inventory key 'rocm_mirror_port' has value 0; expected a TCP port, 1 to 65535",
    ]
    assert refused.value.key == "rocm_reboots"


def test_a_missing_required_key_and_a_bad_one_are_both_reported():
    with pytest.raises(ConfigError) as refused:
        load_config({"rocm_users": "bob"}, "gpu07")
    lines = str(refused.value).splitlines()
    assert lines[0].startswith("gpu07: inventory key 'rocm_version' is required and not set")
    assert lines[1].startswith("gpu07: inventory key 'rocm_users' has value 'bob'")
    assert len(lines) == 2


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("expected_gpus", "'expected_gpu_count'"),
        ("expected_gpu", "'expected_gpu_count'"),
        ("rocm_pull_lock_sha", "'rocm_pull_lock_sha256'"),
        (
            "rocm_mirror_tls",
            "'rocm_mirror_tls_ca', 'rocm_mirror_tls_cert' or 'rocm_mirror_tls_key'",
        ),
        ("rocm_amdgpu_key", "'rocm_amdgpu_key_url' or 'rocm_amdgpu_key_fingerprint'"),
        ("Rocm_Version", "'rocm_version'"),
    ],
)
def test_look_alikes_of_a_setting_are_named(key, meant):
    with pytest.raises(ConfigError) as refused:
        load_config({**GOOD, key: 1}, "gpu07")
    assert str(refused.value) == f"gpu07: unknown inventory key {key!r}: did you mean {meant}?"


def test_every_setting_has_its_plural_and_its_typo_caught():
    for key in settings.SETTINGS:
        for slip in (
            key + "s" if not key.endswith("s") else key[:-1],
            key[:-2] + key[-1] + key[-2],
        ):
            if slip not in settings.SETTINGS:
                assert key in settings.near_misses(slip), (key, slip)


@pytest.mark.parametrize("key", ["rocm_apt_auth", "rocm_pip_netrc"])
def test_a_secret_given_instead_of_its_source_is_never_shown(key):
    secret = "machine repo.example login ci password hunter2"
    with pytest.raises(ConfigError) as refused:
        load_config({**GOOD, key: secret}, "gpu07")
    message = str(refused.value)
    assert "hunter2" not in message and "repo.example" not in message
    assert message.startswith(
        f"gpu07: inventory key {key!r} has value "
        "<not shown: it may be the secret itself>; expected "
    )
