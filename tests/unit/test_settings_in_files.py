"""Settings can't change the structure of the files, command lines and units they are
written into: every value a setting's type accepts, written by rocm-fleet's own writers,
parses back (by the format's own parser where there is one: apt-config, python-debian's
deb822, NGINX Inc.'s crossplane, the shell) to the same keys and stanzas with the value
intact; and the attacks on them (a quote, a newline, ``;``, braces in a URL's host) are
refused before any file is written, naming the key."""

from __future__ import annotations

import configparser
import dataclasses
import shlex
from pathlib import Path
from typing import get_type_hints

import crossplane
import pytest
from debian.deb822 import Deb822
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from rocm_fleet.deploy.kernel import backports_source
from rocm_fleet.deploy.mirror import nginx_site
from rocm_fleet.deploy.pull import timer_unit
from rocm_fleet.model import grammar
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.fleet import ProxiedUpstream
from rocm_fleet.model.settings import SETTINGS, Settings
from rocm_fleet.model.settings_reference import json_schema
from rocm_fleet.model.sources import AptRepository, SigningKey
from rocm_fleet.operations._script import script

GOOD = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "rocm_users": ["alice"]}
FINGERPRINT = "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


TYPES = {
    key: TypeAdapter(hint) for key, hint in get_type_hints(Settings, include_extras=True).items()
}
SCHEMA = json_schema()["properties"]


def accepts(key: str, value: object) -> bool:
    """``key``'s type takes ``value`` (the grammar, its code checks)."""
    try:
        TYPES[key].validate_python(value)
    except ValidationError:
        return False
    return True


def accepted(key: str, pattern: str) -> st.SearchStrategy[str]:
    """Strings of ``pattern`` that ``key``'s type accepts, as the value or, for a list
    setting, as an item of it."""
    return st.from_regex(pattern, fullmatch=True).filter(
        lambda value: accepts(key, value) or accepts(key, [value])
    )


URLS = accepted("rocm_apt_base_url", grammar.HTTP_URL)
PATHS = accepted("pytorch_venv", grammar.ABSOLUTE_PATH)


# --- apt's sources: one-line and deb822 ---------------------------------------------------


@EXAMPLES
@given(url=URLS)
def test_a_repository_url_keeps_a_sources_line_and_stanza_whole(url):
    key = SigningKey("https://example.org/key.gpg", FINGERPRINT)
    line = AptRepository(url, "noble", key).source_text()
    assert line.count("\n") == 1 and line.endswith("\n")
    tokens = line.split()
    assert len(tokens) == 6 and tokens[0] == "deb" and tokens[3] == url, line
    stanza = AptRepository(url, "noble", key, deb822=True).source_text()
    (paragraph,) = list(Deb822.iter_paragraphs(stanza))
    assert list(paragraph) == [
        "Types", "URIs", "Suites", "Components", "Architectures", "Signed-By", "Enabled"
    ]  # fmt: skip
    assert paragraph["URIs"] == f"{url}/"


@EXAMPLES
@given(url=URLS)
def test_a_backports_mirror_keeps_its_stanza_whole(url):
    (paragraph,) = list(Deb822.iter_paragraphs(backports_source(url, "bookworm-backports")))
    assert list(paragraph) == ["Types", "URIs", "Suites", "Components", "Signed-By"]
    assert paragraph["URIs"] == url


# --- apt.conf: the proxy and the mirror's CA, read back by apt-config ----------------------


HOSTS = accepted("rocm_no_proxy", grammar.HOST_NAME)


# --- nginx: the mirror's site, parsed by crossplane ----------------------------------------


def shape(block: list[dict]) -> list:
    """The site's structure: each directive's name and its block's, without arguments."""
    return [(d["directive"], shape(d["block"]) if "block" in d else None) for d in block]


def parsed(text: str, tmp_path: Path) -> list[dict]:
    path = tmp_path / "site.conf"
    path.write_text(text)
    payload = crossplane.parse(str(path), single=True, check_ctx=False, check_args=False)
    assert payload["status"] == "ok", payload["errors"]
    return payload["config"][0]["parsed"]


def directives(block: list[dict], name: str) -> list[list[str]]:
    found = []
    for d in block:
        if d["directive"] == name:
            found.append(d["args"])
        found += directives(d.get("block", []), name)
    return found


@EXAMPLES
@given(
    port=st.integers(1, 65535),
    listen=accepted("rocm_mirror_listen", f"{grammar.IPV4}|[0-9a-f:]+"),
    allow=st.lists(accepted("rocm_mirror_allow", f"{grammar.IPV4}(/[0-9]{{1,2}})?"), max_size=3),
    upstream=URLS,
    tls=st.booleans(),
)
def test_the_mirrors_settings_keep_nginxs_site_whole(
    port, listen, allow, upstream, tls, tmp_path_factory
):
    netloc = grammar.authority(upstream)
    servers = [ProxiedUpstream(netloc, upstream.split(":", 1)[0])]
    tmp = tmp_path_factory.mktemp("nginx")
    site = parsed(nginx_site(port, False, servers, [], [listen], allow, tls), tmp)
    reference = parsed(
        nginx_site(
            8080,
            False,
            [ProxiedUpstream("example.org")],
            [],
            ["10.0.0.1"],
            ["10.9.0.0/16"] * len(allow),
            tls,
        ),
        tmp,
    )
    assert shape(site) == shape(reference)
    address = f"[{listen}]" if ":" in listen else listen
    assert directives(site, "listen") == [[f"{address}:{port}", *(["ssl"] if tls else [])]]
    assert directives(site, "allow") == [["127.0.0.1"], ["::1"], *([n] for n in allow)]
    assert ["Host", netloc] in directives(site, "proxy_set_header")


# --- systemd: the pull timer ---------------------------------------------------------------

SPANS = accepted("rocm_pull_interval", grammar.TIME_SPAN)
PULL = {
    **GOOD,
    "rocm_pull": True,
    "rocm_pull_source": "http://mirror.lab/fleet/",
    "rocm_pull_trusted_root": "/srv/fleet/metadata/root.json",
    "rocm_pull_lock": "http://mirror.lab/fleet/lock.txt",
    "rocm_pull_lock_sha256": "0" * 64,
}


@EXAMPLES
@given(interval=SPANS, delay=SPANS)
def test_the_pull_periods_keep_the_timer_unit_whole(interval, delay):
    config = load_config({**PULL, "rocm_pull_interval": interval, "rocm_pull_random_delay": delay})
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # systemd's keys are case-sensitive
    unit.read_string(timer_unit(config))
    assert {s: list(unit[s]) for s in unit.sections()} == {
        "Unit": ["Description"],
        "Timer": ["OnBootSec", "OnUnitActiveSec", "RandomizedDelaySec"],
        "Install": ["WantedBy"],
    }
    assert unit["Timer"]["OnUnitActiveSec"] == interval
    assert unit["Timer"]["RandomizedDelaySec"] == delay


# --- the shell: the pull script's variables, read by sh --------------------------------------


# --- command lines: packages --------------------------------------------------------


@EXAMPLES
@given(
    packages=st.lists(accepted("rocm_packages", grammar.PACKAGE_NAME), min_size=1, max_size=3),
)
def test_packages_are_each_one_word_of_the_command(packages):
    config = load_config({**GOOD, "rocm_packages": packages})
    command = script("packages-install", "", *config.rocm_packages).get_raw_value()
    assert shlex.split(command)[-len(packages) :] == packages


# --- every grammar is a full match ------------------------------------------------------------

SAMPLES = {
    "rocm_apt_base_url": "https://mirror.example/rocm/apt",
    "rocm_key_fingerprint": FINGERPRINT,
    "rocm_apt_auth": "env:APT_AUTH",
    "rocm_users": ["alice"],
    "rocm_packages": ["rocm"],
    "pytorch_venv": "/opt/venv",
    "rocm_mirror": "mirror1",
    "rocm_mirror_listen": "10.0.0.1",
    "rocm_mirror_allow": ["10.0.0.0/24"],
    "rocm_proxy": "http://proxy.example:3128",
    "rocm_no_proxy": ["deb.debian.org"],
    "rocm_pull_source": "http://mirror.lab/fleet/",
    "rocm_pull_lock_sha256": "0" * 64,
    "rocm_mok_password_env": "MOK",
    "rocm_pull_interval": "1h",
}


@pytest.mark.parametrize("key", sorted(SAMPLES))
@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", ";", "'", '"', "{", "}", "\x00"])
def test_no_setting_takes_a_line_end_or_syntax_after_a_valid_value(key, tail):
    value = SAMPLES[key]
    assert accepts(key, value), key
    bad = [value[0] + tail] if isinstance(value, list) else value + tail
    with pytest.raises(ConfigError) as refused:
        load_config({**GOOD, key: bad}, "gpu07")
    assert f"'{key}'" in str(refused.value)


def test_every_string_setting_has_a_sample_or_a_closed_set():
    """A new setting that reaches a file needs its line here (or is a choice/flag/number)."""
    closed = {"rocm_version", "torch_version", "expected_gfx", "rocm_distro_override"}
    for key in SETTINGS:
        schema = str(SCHEMA[key])
        if "'string'" in schema and key not in closed and "enum" not in schema:
            assert key in SAMPLES or "pattern" in schema, key


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rocm_mirror", "http://mirror'.lab:8080/"),
        ("rocm_mirror", 'http://mirror".lab/'),
        ("rocm_mirror", "http://mirror.lab\n/"),
        ("rocm_mirror", "http://mirror.lab;/"),
        ("rocm_mirror", "http://mirror.lab}/"),
        ("rocm_mirror", "http://{mirror}.lab/"),
        ("rocm_mirror", "http://mirror.lab:8080/\n"),
        ("rocm_mirror", "http://mirror.lab:99999/"),
        ("rocm_mirror", "http://[FD00:0::1]/"),
        ("rocm_apt_base_url", "https://repo.example/rocm/apt;include /etc/shadow"),
        ("rocm_apt_base_url", "https://repo.example/rocm/apt suite evil"),
        ("rocm_key_url", "https://repo.example/key.gpg$(reboot)"),
        ("pytorch_index_base_url", "https://download.pytorch.org/whl?x=1"),
        ("rocm_proxy", 'http://proxy.example:3128";\nAcquire::http::Proxy "http://evil'),
        ("rocm_no_proxy", ['deb.debian.org" "DIRECT";']),
        ("rocm_mirror_listen", "10.0.0.1;"),
        ("rocm_mirror_listen", "010.000.000.001"),
        ("rocm_mirror_allow", ["10.0.0.0/24; allow all"]),
        ("rocm_pull_interval", "1h\nExecStart=/bin/sh"),
        ("rocm_pull_source", "http://mirror.lab/fleet/'; rm -rf /; '"),
        ("pytorch_venv", "/opt/../etc"),
        ("rocm_users", ["alice\n"]),
        ("rocm_users", ["alice;reboot"]),
    ],
)
def test_attacks_through_a_setting_are_refused_naming_the_key(key, value):
    with pytest.raises(ConfigError) as refused:
        load_config({**GOOD, key: value}, "gpu07")
    assert str(refused.value).startswith(f"gpu07: inventory key {key!r} has value ")


def test_a_dataclass_copy_keeps_the_validated_values():
    config = load_config({**GOOD, "rocm_key_fingerprint": FINGERPRINT.lower()})
    assert dataclasses.replace(config).rocm_key_fingerprint == FINGERPRINT


@pytest.mark.parametrize("address", ["mirror'.lab", "mirror.lab;", "10.0.0.1\n", "FD00::5"])
def test_a_mirror_host_reached_by_a_bad_address_is_refused(address):
    """The mirror host's ssh_hostname is pyinfra's setting, but every host writes it into
    its apt sources and apt.conf: it must be a host too."""
    from rocm_fleet.model.fleet import Fleet

    fleet = Fleet({"node": {**GOOD, "rocm_mirror": "mirror1"},
                   "mirror1": {**GOOD, "ssh_hostname": address}})  # fmt: skip
    with pytest.raises(ConfigError) as refused:
        fleet.config("node")
    assert str(refused.value).startswith("node: inventory key 'rocm_mirror' has value 'mirror1'")
    assert repr(address) in str(refused.value)
