"""The fleet mirror and the proxy in plans: where hosts point apt, the key fetch and pip, what
the mirror host runs (nginx, for a bundle or as a live cache), apt's proxy snippet, and the
refusal of a host whose mirror's bundle lacks what it needs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from pyinfra.api import FileUploadCommand

from rocm_fleet.deploy.mirror import apt_proxy_conf, nginx_site
from rocm_fleet.facts.apt import InstalledPackages
from rocm_fleet.model import paths
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.decisions import Mirror
from rocm_fleet.model.fleet import Fleet, ProxiedUpstream
from rocm_fleet.upstream.aptrepo import Index, RepositoryError, install_closure, parse_stanzas
from unit.surveys import (
    SurveyHost,
    converged_survey,
    digest,
    fresh_survey,
    plan,
    script_call,
    unchecked,
    words,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
MIRROR_HOST = {**DATA, "ssh_hostname": "10.0.0.5"}
ALICE = {"groups": ["video"], "users": {}}


def fresh(data: dict, others: dict | None = None, **survey):
    return plan(data, SurveyHost(fresh_survey("debian-12", **{"groups": ALICE, **survey})), others)


def pip_words(planned) -> list[str]:
    """pip's command line, after the hash-locked lines piped into it."""
    (command,) = planned.find("Install the torch wheels").commands
    found = words(command)
    return found[found.index("|") + 1 :]


def locked_lines(planned) -> list[str]:
    """The hash-locked requirement lines pip reads on its stdin."""
    (command,) = planned.find("Install the torch wheels").commands
    found = unchecked(words(command))
    assert found[:2] == ["printf", "%s\\n"]
    return [line.split(" --hash=sha256:")[0] for line in found[2 : found.index("|")]]


# --- resolving the mirror ----------------------------------------------------------------------


def test_the_mirror_is_a_host_of_the_inventory_or_a_url():
    mirror1 = {**MIRROR_HOST, "rocm_mirror": "mirror1", "rocm_mirror_port": 3142}
    fleet = Fleet({
        "node": {**DATA, "rocm_mirror": "mirror1"},
        "mirror1": mirror1,
        "remote": {**DATA, "rocm_mirror": "http://controller.example:8000/"},
        "lost": {**DATA, "rocm_mirror": "mirror2"},
        "proxied": {**MIRROR_HOST, "rocm_mirror": "proxied", "rocm_proxy": "http://p:3128"},
        "behind": {**DATA, "rocm_mirror": "bad"},
        "bad": {**DATA, "rocm_verison": "6.4.3"},
    })  # fmt: skip
    assert fleet.config("node").mirror == Mirror("http://10.0.0.5:3142", "mirror1", None, False)
    assert fleet.config("mirror1").mirror.serves
    assert fleet.config("remote").mirror == Mirror(
        "http://controller.example:8000", None, None, False
    )
    with pytest.raises(ConfigError) as error:
        fleet.config("lost")
    assert str(error.value) == (
        "lost: inventory key 'rocm_mirror' has value 'mirror2'; expected a host of the "
        "inventory (node, mirror1, remote, lost, proxied, behind, bad) or the http:// URL of "
        "a mirror"
    )
    with pytest.raises(ConfigError, match="a live mirror reaches upstream directly"):
        fleet.config("proxied")
    # A mirror host with bad data: the host using it is refused with the mirror's own error.
    for name in ("behind", "bad"):
        with pytest.raises(ConfigError, match="bad: unknown inventory key 'rocm_verison'"):
            fleet.config(name)
    assert sorted(fleet.configs()) == ["mirror1", "node", "remote"]


def test_the_fleet_decides_each_host_once_and_the_mirror_serves_what_its_hosts_need():
    reads = []

    class Counted(dict):
        def __getitem__(self, name):
            reads.append(name)
            return super().__getitem__(name)

    fleet = Fleet(Counted({
        "node": {**DATA, "rocm_mirror": "mirror1"},
        "core": {"rocm_version": "7.14.1", "rocm_mirror": "mirror1", "rocm_driver": "dkms"},
        "gone": {**DATA, "rocm_mirror": "mirror1", "rocm_state": "absent"},
        "mirror1": {**MIRROR_HOST, "pytorch_install": False},
    }))  # fmt: skip
    assert fleet.config("node") is fleet.config("node")
    assert reads == ["node", "mirror1"]  # a host is read when first needed, and once
    assert fleet.upstreams("mirror1") == [
        ProxiedUpstream("download.pytorch.org"),
        ProxiedUpstream("files.pythonhosted.org", linked=True),
        ProxiedUpstream("repo.amd.com"),
        ProxiedUpstream("repo.radeon.com"),
    ]
    assert sorted(reads) == ["core", "gone", "mirror1", "node"]
    assert fleet.upstreams("node") == []  # nobody uses it


def test_one_fleet_per_pyinfra_inventory_read_through_pyinfras_merge_of_group_data():
    from pyinfra.api import Inventory

    from rocm_fleet.engine.inventory_fleet import fleet_of

    hosts = [("node", {"rocm_mirror": "mirror1"}), ("mirror1", {"ssh_hostname": "10.0.0.5"})]
    inventory = Inventory((hosts, {"rocm_version": "6.4.3", "rocm_mirror_port": 3142}))
    fleet = fleet_of(inventory)
    assert fleet_of(inventory) is fleet
    assert fleet_of(Inventory((hosts, {"rocm_version": "6.4.3"}))) is not fleet
    assert fleet.config("node").mirror == Mirror("http://10.0.0.5:3142", "mirror1", None, False)
    assert fleet.config("mirror1").release.version == "6.4.3"  # the group's data
    with pytest.raises(ConfigError, match="expected a host of the inventory"):
        Fleet({"node": {"rocm_version": "6.4.3", "rocm_mirror": "elsewhere"}}).config("node")


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("rocm_proxy", "http://user:secret@proxy:3128", "a proxy URL without user or password"),
        ("rocm_proxy", "socks5://proxy:1080", "an http:// URL of the proxy"),
        ("rocm_no_proxy", ["ok.example", "bad host"], "a list of host names"),
        ("rocm_mirror_port", 0, "a TCP port, 1 to 65535"),
        ("rocm_mirror", "ftp://mirror", "an inventory host name, or the http:// URL of a mirror"),
        ("rocm_mirror_bundle", "bundle/dir", "an absolute path"),
        ("rocm_mirror_listen", "mirror.lan", "an IPv4 or IPv6 address"),
        ("rocm_mirror_allow", ["10.0.0.0/33"], "a list of IP addresses or CIDR networks"),
        ("rocm_mirror", "https://u:secret@mirror.lan/", "/etc/apt/auth.conf.d/"),
        ("rocm_apt_base_url", "https://u:secret@repo.lan/rocm", "rocm_apt_auth"),
        ("pytorch_index_base_url", "https://u:secret@pypi.lan/whl", "rocm_pip_netrc"),
        ("rocm_key_url", "https://u:secret@repo.lan/key.asc", "a URL without user or password"),
    ],
)
def test_bad_mirror_and_proxy_settings_are_refused(key, value, valid):
    with pytest.raises(ConfigError) as error:
        load_config({**DATA, key: value}, "node")
    shown = (
        value.replace("u:secret@", "***@").replace("user:secret@", "***@")
        if isinstance(value, str)
        else value
    )
    assert f"inventory key {key!r} has value {shown!r}" in str(error.value)
    assert valid in str(error.value)
    assert "secret" not in str(error.value)  # a refused credential is never echoed


# --- hosts that use a mirror -------------------------------------------------------------------


def test_a_host_using_the_mirror_points_apt_the_key_and_pip_at_it():
    planned = fresh({**DATA, "rocm_mirror": "mirror1"}, {"mirror1": MIRROR_HOST})
    (source,) = planned.find("Point apt at the ROCm release").commands
    assert script_call(source)[1][2] == (
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
        "http://10.0.0.5:8080/repo.radeon.com/rocm/apt/6.4.3 jammy main\n"
    )
    (key,) = planned.find("Install AMD's signing key").commands
    assert script_call(key)[1] == [
        "http://10.0.0.5:8080/repo.radeon.com/rocm/rocm.gpg.key",
        "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C",
        paths.ROCM_KEYRING,
    ]
    (pin,) = planned.find("Pin AMD's repository").commands  # AMD's Origin: still AMD's pin
    assert "Pin: release o=repo.radeon.com" in script_call(pin)[1][2]
    pip = pip_words(planned)
    index = pip.index("--index-url")
    assert pip[index : index + 4] == [
        "--index-url", "http://10.0.0.5:8080/download.pytorch.org/whl/rocm6.4",
        "--trusted-host", "10.0.0.5:8080",
    ]  # fmt: skip
    assert not [name for name in planned.names if "mirror" in name.lower()]


def test_the_mirror_host_runs_nginx_as_a_live_cache_of_every_upstream_its_clients_use():
    others = {"client": {**DATA, "rocm_mirror": "node", "rocm_driver": "dkms",
                         "ssh_hostname": "10.0.0.7"}}  # fmt: skip
    planned = fresh({**MIRROR_HOST, "rocm_mirror": "node"}, others)
    names = [n for n in planned.names if n.startswith("Fleet mirror")]
    assert names == [
        "Fleet mirror | Install nginx to serve the mirror",
        "Fleet mirror | Drop the bundle (a live mirror now)",
        "Fleet mirror | Configure nginx to serve the mirror",
        "Fleet mirror | Run nginx with the mirror's configuration",
    ]
    assert planned.names.index(names[-1]) < planned.names.index(
        "ROCm apt repository | Install AMD's signing key (fingerprint checked)"
    )
    (install,) = planned.find("Install nginx").commands
    assert script_call(install)[1][1:] == ["ca-certificates", "nginx"]
    (site,) = planned.find("Configure nginx").commands
    path, _mode, content = script_call(site)[1]
    servers = [ProxiedUpstream("download.pytorch.org"),
               ProxiedUpstream("files.pythonhosted.org", linked=True),
               ProxiedUpstream("repo.radeon.com")]  # fmt: skip
    # It listens on the address the inventory reaches it by, for the inventory's hosts.
    expected = nginx_site(8080, False, servers, [], ["10.0.0.5"], ["10.0.0.5", "10.0.0.7"])
    assert (path, content) == (paths.MIRROR_SITE, expected)
    assert "    listen 10.0.0.5:8080;\n" in content and "    allow 10.0.0.7;\n" in content
    # The host resolves no name by DNS (fresh_survey): PyPI's file host is left out.
    assert "files.pythonhosted.org" not in content
    (start,) = planned.find("Run nginx").commands
    assert script_call(start) == ("daemon-serving", ["nginx", "start", paths.MIRROR_STAMP])
    # It uses itself, by the address the others use.
    (source,) = planned.find("Point apt at the ROCm release").commands
    assert "http://10.0.0.5:8080/repo.radeon.com/rocm/apt/6.4.3 jammy" in script_call(source)[1][2]


def test_core_sdk_hosts_fetch_their_streams_repository_and_key_through_the_mirror():
    core = {"rocm_version": "7.14.1", "expected_gfx": "gfx1100", "rocm_mirror": "mirror1"}
    planned = fresh(core, {"mirror1": MIRROR_HOST})
    (source,) = planned.find("Point apt at the ROCm release").commands
    assert script_call(source)[1] == [
        paths.ROCM_SOURCE, "644",
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/amdrocm.gpg] "
        "http://10.0.0.5:8080/repo.amd.com/rocm/packages-multi-arch/debian12 stable main\n",
    ]  # fmt: skip
    (key,) = planned.find("Install AMD's signing key").commands
    assert script_call(key)[1][:3] == [
        "http://10.0.0.5:8080/repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg",
        "D0F004A0025A1145C7807FCD0701EAC4D5E02107",
        paths.AMDROCM_KEYRING,
    ]
    pip = pip_words(planned)
    assert "http://10.0.0.5:8080/download.pytorch.org/whl/rocm7.14" in pip
    # the runtime, from the mirror too (its wheels pinned: unit.locks stands in for the lock)
    assert "rocm[device-all,libraries]==7.14.*" in locked_lines(planned)
    # The mirror host proxies the Core SDK's server for it (and the driver's, with dkms).
    stable = {"rocm_version": "10.0.0", "rocm_driver": "dkms", "pytorch_install": False,
              "rocm_mirror": "node"}  # fmt: skip
    mirror = fresh({**MIRROR_HOST, "rocm_mirror": "node", "rocm_mirror_allow": ["10.0.0.0/24"]},
                   {"core": core | {"rocm_mirror": "node"}, "stable": stable})  # fmt: skip
    (site,) = mirror.find("Configure nginx").commands
    content = script_call(site)[1][2]
    for upstream in ("repo.amd.com", "stable.repo.amd.com", "repo.radeon.com",
                     "download.pytorch.org"):  # fmt: skip
        assert f"    location /{upstream}/ {{" in content, upstream


def test_the_live_site_proxies_each_upstream_whole_and_rewrites_index_links():
    servers = [ProxiedUpstream("download.pytorch.org"), ProxiedUpstream("mirror.lan:81", "http"),
               ProxiedUpstream("files.pythonhosted.org", linked=True)]  # fmt: skip
    site = nginx_site(8080, False, servers, ["127.0.0.53", "fd00::1"])
    assert "upstream rocm_fleet_0 {\n    server download.pytorch.org:443;\n}" in site
    assert "upstream rocm_fleet_1 {\n    server mirror.lan:81;\n}" in site
    assert "proxy_pass https://rocm_fleet_0$rocm_fleet_upstream_uri;" in site
    # A linked host is resolved per request (no upstream block: it can't stop nginx loading).
    assert "resolver 127.0.0.53 [fd00::1] valid=300s;" in site
    assert "proxy_pass https://files.pythonhosted.org$rocm_fleet_upstream_uri;" in site
    assert "upstream rocm_fleet_2" not in site
    assert "proxy_ssl_verify on;" in site and "proxy_ssl_name download.pytorch.org;" in site
    assert "sub_filter 'https://download.pytorch.org/' '/download.pytorch.org/';" in site
    assert "sub_filter 'href=\"/' 'href=\"/download.pytorch.org/';" in site
    # Whole files, never slices (a file replaced upstream can't mix old and new parts).
    assert "slice 1m" not in site and "proxy_cache_lock on;" in site
    assert site.count("proxy_cache_valid 200 180d;") == 3
    assert nginx_site(8080, True, []).count("root /srv/rocm-fleet/bundle;") == 1


def fake_bundle(directory: Path, packages: list[str]) -> Path:
    """A bundle (as ``rocm-fleet bundle`` lays it out) holding AMD's key, the fixture's
    Packages for 6.4.3 jammy and the closure of ``packages``, files of the index's sizes."""
    repo = "repo.radeon.com/rocm/apt/6.4.3"
    text = (FIXTURES / "apt" / "rocm-6.4.3-jammy-Packages").read_text()
    files = {}

    def add(path: str, data: bytes) -> None:
        (directory / path).parent.mkdir(parents=True, exist_ok=True)
        (directory / path).write_bytes(data)
        sha256 = hashlib.sha256(data).hexdigest()
        files[path] = {"url": f"https://{path}", "size": len(data), "sha256": sha256}

    add("repo.radeon.com/rocm/rocm.gpg.key", b"key")
    index = f"{repo}/dists/jammy/main/binary-amd64/Packages"
    add(index, text.encode())
    closure = install_closure(Index(parse_stanzas(text)), packages, "fixture")
    for package in closure:
        add(f"{repo}/{package.filename}", b"d" * package.size)
    manifest = {
        "format": 1,
        "files": files,
        "repositories": [{"url": f"https://{repo}", "suite": "jammy", "component": "main",
                          "architecture": "amd64", "index": index}],
        "wheel_sets": [],
    }  # fmt: skip
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


def test_the_mirror_host_serves_a_bundle_it_copies_from_where_pyinfra_runs(tmp_path):
    bundle = fake_bundle(tmp_path / "bundle", ["rocm-hip-runtime"])
    data = {**MIRROR_HOST, "rocm_mirror": "node", "rocm_mirror_bundle": str(bundle),
            "pytorch_install": False}  # fmt: skip
    planned = fresh(data)
    assert not planned.refused
    copy = planned.find("Copy the bundle to the mirror").commands
    uploads = [c for c in copy if isinstance(c, FileUploadCommand)]
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert [u.dest for u in uploads] == [
        *(f"{paths.MIRROR_BUNDLE}/{p}" for p in sorted(manifest["files"])),
        f"{paths.MIRROR_BUNDLE}/manifest.json",  # last: an interrupted copy is redone
    ]
    made, settle = [c for c in copy if not isinstance(c, FileUploadCommand)]
    # The directories are made only where the bundle's keeps to the safe path rule.
    assert script_call(made)[0] == "directories"
    assert script_call(made)[1][0] == paths.MIRROR_BUNDLE
    name, (directory, sums, stale) = script_call(settle)
    assert (name, directory, stale) == ("bundle-settle", paths.MIRROR_BUNDLE, "")
    assert len(sums.splitlines()) == len(manifest["files"])
    (site,) = planned.find("Configure nginx").commands
    assert script_call(site)[1][2] == nginx_site(8080, True, [], None, ["10.0.0.5"], ["10.0.0.5"])
    # The copy is one digest compare once the host holds the same manifest.
    held = digest((bundle / "manifest.json").read_text())
    again = fresh(data, files={f"{paths.MIRROR_BUNDLE}/manifest.json": held})
    assert again.find("Copy the bundle").commands == []


def test_a_host_is_refused_naming_what_the_mirror_bundle_lacks(tmp_path):
    bundle = fake_bundle(tmp_path / "bundle", ["rocm-hip-runtime"])
    others = {"mirror1": {**MIRROR_HOST, "rocm_mirror_bundle": str(bundle)}}
    ok = fresh({**DATA, "rocm_mirror": "mirror1", "pytorch_install": False}, others)
    assert not ok.refused
    wider = fresh({**DATA, "rocm_mirror": "mirror1", "rocm_packages": ["rocm"]}, others)
    assert wider.refused and wider.ops == []
    # rocm and torch: the bundle was made for rocm-hip-runtime without PyTorch.
    assert "rocm 6.4.3.60403-128~22.04 (https://repo.radeon.com/rocm/apt/6.4.3 jammy main)" in (
        _refusal(wider)
    )
    assert "torch==2.9.1+rocm6.4" in _refusal(wider)
    next(bundle.rglob("rocminfo_*.deb")).unlink()
    gone = fresh({**DATA, "rocm_mirror": "mirror1", "pytorch_install": False}, others)
    assert gone.refused and "rocminfo 1.0.0.60403-128~22.04" in _refusal(gone)
    # The mirror host itself won't serve a bundle with a hole in it.
    serving = fresh({**MIRROR_HOST, "rocm_mirror": "node", "rocm_mirror_bundle": str(bundle),
                     "pytorch_install": False})  # fmt: skip
    assert serving.refused and "is incomplete (1 file(s)" in _refusal(serving)
    assert "rocminfo_1.0.0.60403-128~22.04_amd64.deb" in _refusal(serving)


def _refusal(planned) -> str:
    from rocm_fleet.engine.refuse import outcome

    return outcome(planned.state, "node").refused or ""


# --- the proxy ---------------------------------------------------------------------------------

PROXIED = {**DATA, "rocm_proxy": "http://proxy.example:3128",
           "rocm_no_proxy": ["deb.debian.org", ".corp.example", "10.0.0.0/8"]}  # fmt: skip


def test_apt_the_key_fetch_and_pip_go_through_the_proxy_before_anything_is_fetched():
    planned = fresh(PROXIED)
    assert planned.names[0] == "Proxy | Send apt through the proxy"
    (snippet,) = planned.ops[0].commands
    assert script_call(snippet)[1] == [
        paths.APT_PROXY_CONF,
        "644",
        "// Written by rocm-fleet from rocm_proxy and rocm_no_proxy; removed with them.\n"
        'Acquire::http::Proxy "http://proxy.example:3128";\n'
        'Acquire::https::Proxy "http://proxy.example:3128";\n'
        'Acquire::http::Proxy::deb.debian.org "DIRECT";\n'
        'Acquire::https::Proxy::deb.debian.org "DIRECT";\n',
    ]
    (key,) = planned.find("Install AMD's signing key").commands
    assert script_call(key)[1][3:] == [
        "http://proxy.example:3128", "deb.debian.org,.corp.example,10.0.0.0/8"
    ]  # fmt: skip
    assert pip_words(planned)[:4] == [
        "env",
        "http_proxy=http://proxy.example:3128",
        "https_proxy=http://proxy.example:3128",
        "no_proxy=deb.debian.org,.corp.example,10.0.0.0/8",
    ]


def test_the_mirror_is_always_reached_directly():
    config = Fleet({"node": {**PROXIED, "rocm_mirror": "mirror1"}, "mirror1": MIRROR_HOST}).config(
        "node"
    )
    assert 'Acquire::http::Proxy::10.0.0.5 "DIRECT";' in apt_proxy_conf(config)
    planned = fresh({**PROXIED, "rocm_mirror": "mirror1"}, {"mirror1": MIRROR_HOST})
    assert "no_proxy=deb.debian.org,.corp.example,10.0.0.0/8,10.0.0.5" in pip_words(planned)


def test_proxy_settings_are_removed_when_the_inventory_drops_them_and_a_clean_host_has_none():
    assert not [n for n in fresh(DATA).names if "roxy" in n]
    left = fresh(DATA, files={paths.APT_PROXY_CONF: digest("old")})
    (removal,) = left.find("Remove apt's proxy settings").commands
    assert unchecked(words(removal)) == ["rm", "-f", paths.APT_PROXY_CONF]


def test_a_converged_host_behind_the_proxy_and_the_mirror_plans_nothing_from_one_survey():
    data = {**PROXIED, "rocm_users": ["alice"], "rocm_mirror": "http://10.0.0.5:8080"}
    survey = converged_survey(data, "debian-12")
    host = SurveyHost(survey)
    planned = plan(data, host)
    assert planned.changes == [] and host.extra_reads == []


def test_uninstall_removes_the_proxy_snippet_and_any_mirror():
    host = SurveyHost(fresh_survey("debian-12"), other={InstalledPackages: {}})
    planned = plan({**DATA, "rocm_state": "absent"}, host)  # no preflight: facts one by one
    assert "Proxy | Remove apt's proxy settings" in planned.names
    assert "Fleet mirror | Stop serving the mirror" in planned.names


# --- a mirror for the fleet only -----------------------------------------------------------------


@pytest.mark.parametrize("bundle", [False, True])
def test_both_kinds_of_mirror_serve_what_was_published_for_pull_mode(bundle):
    site = nginx_site(8080, bundle, [ProxiedUpstream("repo.radeon.com")], [])
    location = (
        "    location /fleet/ {\n        limit_except GET { deny all; }\n"
        "        alias /srv/rocm-fleet-published/;\n        autoindex off;\n    }"
    )
    assert location in site


def test_the_site_admits_only_the_fleet_and_serves_only_upstream_paths():
    servers = [ProxiedUpstream("download.pytorch.org"), ProxiedUpstream("repo.radeon.com")]
    site = nginx_site(8080, False, servers, [], ["10.0.0.5"], ["10.0.0.7", "192.168.1.0/24"])
    assert "    listen 10.0.0.5:8080;\n" in site and "listen 8080;" not in site
    allow = [
        line.strip() for line in site.splitlines() if line.strip().startswith(("allow", "deny"))
    ]
    assert allow == ["allow 127.0.0.1;", "allow ::1;", "allow 10.0.0.7;", "allow 192.168.1.0/24;",
                     "deny all;"]  # fmt: skip
    # Anything but the upstreams' paths is 404; a query string is refused, and never in the
    # cache key nor passed upstream (no ?1, ?2, ... copies of a multi-GB wheel).
    assert "    location / {\n        return 404;\n    }" in site
    assert "    if ($is_args) {\n        return 400;\n    }" in site
    assert "proxy_cache_key $proxy_host$rocm_fleet_upstream_uri;" in site
    assert "~^/[^/?]+(?<rocm_fleet_rest>/[^?]*)$ $rocm_fleet_rest;" in site
    assert "$slice_range" not in site and "slice 1m" not in site
    # Per upstream: pages and files; and what the administrators published for pull mode.
    assert site.count("limit_except GET { deny all; }") == 5
    # Without an address, every interface (and an IPv6 listen address in brackets).
    assert "    listen 8080;\n    listen [::]:8080;\n" in nginx_site(8080, False, servers, [])
    assert "    listen [fd00::5]:8080;\n" in nginx_site(8080, False, servers, [], ["fd00::5"])


def test_a_bundle_site_hides_the_manifest_and_admits_only_the_fleet():
    site = nginx_site(8080, True, [], None, ["10.0.0.5"], ["10.0.0.7"])
    assert "    location = /manifest.json {\n        return 404;\n    }" in site
    assert "allow 10.0.0.7;" in site and "deny all;" in site
    assert "try_files $uri $uri/ =404;" in site and "if ($is_args)" in site


def test_hosts_named_by_dns_need_the_networks_the_mirror_admits():
    from pyinfra.api import Inventory

    from rocm_fleet.deploy.mirror import mirror_access

    hosts = {
        "mirror1": {**MIRROR_HOST, "rocm_mirror": "mirror1"},
        "gpu1": {**DATA, "rocm_mirror": "mirror1", "ssh_hostname": "fd00::7"},
        "gpu2.lan": {**DATA, "rocm_mirror": "mirror1"},
        "elsewhere": {**DATA, "ssh_hostname": "10.9.9.9"},  # uses no mirror: not admitted
    }
    inventory = Inventory((list(hosts.items()), {}))
    config = load_config(hosts["mirror1"], "mirror1")
    with pytest.raises(ConfigError, match=r"names gpu2\.lan \(gpu2\.lan\) by DNS name: set "
                       r"rocm_mirror_allow on mirror1"):  # fmt: skip
        mirror_access(config, "mirror1", inventory)
    allowing = load_config({**MIRROR_HOST, "rocm_mirror_allow": ["10.1.0.0/16"]}, "mirror1")
    assert mirror_access(allowing, "mirror1", inventory) == (
        ["10.0.0.5"], ["10.0.0.5", "fd00::7", "10.1.0.0/16"]
    )  # fmt: skip
    listen = load_config({**MIRROR_HOST, "rocm_mirror_listen": "10.0.1.5",
                          "rocm_mirror_allow": ["10.1.0.0/16"]}, "mirror1")  # fmt: skip
    assert mirror_access(listen, "mirror1", inventory)[0] == ["10.0.1.5"]


def test_a_live_plain_http_mirror_serves_wheels_the_controller_pinned(upstream_locks):
    """Through a live mirror the host's pip reads plain-HTTP pages, but installs only the
    controller's lock (made from the upstream index itself): no warning about the wheels'
    hashes is left to give."""
    from rocm_fleet.engine.refuse import outcome

    planned = fresh({**DATA, "rocm_mirror": "mirror1"}, {"mirror1": MIRROR_HOST})
    (request,) = upstream_locks.requests
    assert request.index_url == "https://download.pytorch.org/whl/rocm6.4"  # upstream's
    assert "--require-hashes" in pip_words(planned)
    assert "http://10.0.0.5:8080/download.pytorch.org/whl/rocm6.4" in pip_words(planned)
    found = outcome(planned.state, "node").findings
    assert found is not None and not [w for w in found.warnings if "hashes come from" in w]
    # What is left to say of a plain-HTTP mirror is the transport (test_mirror_tls).
    assert [w for w in found.warnings if "is plain HTTP: integrity rests on" in w]


def test_a_pinned_root_takes_the_newest_of_its_release_not_the_repositorys_newest():
    """``NAME=PREFIX*`` (the container toolkit at ``rocm_containers_toolkit_version``): the
    version apt's ``Pin: version PREFIX*`` would install, so a bundle carries what the node's
    pin asks for, even when the repository has a newer release."""
    text = "".join(
        f"Package: amd-container-toolkit\nVersion: {version}\nArchitecture: amd64\n"
        f"Filename: pool/main/a/amd-container-toolkit_{version}_amd64.deb\nSize: 10\n"
        f"SHA256: {'0' * 64}\n\n"
        for version in ("1.2.0~22.04", "1.3.0~22.04", "1.2.1~22.04")
    )
    index = Index(parse_stanzas(text))
    (newest,) = install_closure(index, ["amd-container-toolkit"], "fixture")
    (pinned,) = install_closure(index, ["amd-container-toolkit=1.2*"], "fixture")
    (exact,) = install_closure(index, ["amd-container-toolkit=1.2.0*"], "fixture")
    assert (newest.version, pinned.version, exact.version) == (
        "1.3.0~22.04", "1.2.1~22.04", "1.2.0~22.04",
    )  # fmt: skip
    with pytest.raises(RepositoryError, match=r"amd-container-toolkit=1\.4\*: not in fixture"):
        install_closure(index, ["amd-container-toolkit=1.4*"], "fixture")


def test_a_bundle_needs_the_toolkit_release_the_node_pins():
    from rocm_fleet.model import matrix
    from rocm_fleet.model.sources import host_needs

    row = matrix.distro("debian", "12")
    data = {"rocm_version": "7.2.0", "rocm_containers_engines": ["docker"]}
    toolkit = [need for need in host_needs(load_config(data, "node"), row).apt
               if "amd-container-toolkit" in need.repository.url]  # fmt: skip
    assert toolkit[0].packages == ("amd-container-toolkit=1.3.0*",)  # the default release
    older = load_config({**data, "rocm_containers_toolkit_version": "1.2.0"}, "node")
    needs = [n for n in host_needs(older, row).apt if n.repository == toolkit[0].repository]
    assert needs[0].packages == ("amd-container-toolkit=1.2.0*",)
