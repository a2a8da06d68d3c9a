"""End to end: hosts that can't reach AMD's servers and download.pytorch.org themselves.

* behind a proxy: a real tinyproxy (Debian's) on a lab host whose route stays open, every
  other host's route to the two doubles closed; apt, the key fetch and pip go through it;
* air-gapped: a bundle made beforehand (``rocm-fleet bundle``, from the client, which
  reaches the doubles) served by one of the hosts, for classic releases and a ROCm Core SDK
  one (repo.amd.com, its key, its per-target packages and the pip ROCm runtime its torch
  requires); no host reaches the doubles at all; a bundle that lacks a package is refused
  by preflight naming it;
* a live mirror: the same host caching upstream for a fresh host that can't reach it.

One lab, six hosts. Each test sets the routes it needs; the live mirror starts from the
mirror host serving the bundle (``bundle`` and ``serving_the_bundle``: in file order the
air-gap test has made and served it; run alone with ``-k`` or in another order, the fixtures
do).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from e2e.support import (
    changed,
    deploy,
    failed_hosts,
    host_line,
    refusal,
    rocm_fleet,
    sh,
    succeeded,
)
from lab import HostSpec
from lab.upstreams import AMD, DOUBLES
from rocm_fleet.model import paths, streams

pytestmark = pytest.mark.e2e

RADEON, PYTORCH = "repo.radeon.com", "download.pytorch.org"
GPU = {"expected_gfx": "gfx1100", "expected_gpu_count": 1}
HOSTS = [
    HostSpec("proxy", suite="bookworm", profile="none", data={"rocm_version": "6.4.3"}),
    HostSpec("mirror", suite="bookworm", profile="rx7900xtx",
             data={"rocm_version": "6.4.3", **GPU}),
    HostSpec("node1", suite="bookworm", profile="rx7900xtx",
             data={"rocm_version": "6.4.3", **GPU}),
    HostSpec("node2", suite="trixie", profile="mi300x-8",
             data={"rocm_version": "7.2.1", "expected_gfx": "gfx942", "expected_gpu_count": 8,
                   "rocm_packages": ["rocm"]}),
    HostSpec("node3", suite="bookworm", profile="rx7900xtx",
             data={"rocm_version": "6.4.3", **GPU}),
    HostSpec("core", suite="trixie", profile="rx7900xtx",
             data={"rocm_version": "7.14.1", **GPU}),
]  # fmt: skip
PROXY_PORT = 8888


@pytest.fixture(scope="module")
def lab():
    from e2e.support import running_lab

    yield from running_lab(HOSTS, ["6.4.3", "7.2.1", "7.14.1"])


def clients(lab, since: int, upstream: str) -> set[str]:
    """The addresses that fetched from one double since request number ``since``."""
    return {r["client"] for r in lab.server.requests()[since:] if r["host"] == upstream}


def lab_hosts(lab) -> set[str]:
    return {lab.address(name) for name in lab.hosts}


# --- a proxy -----------------------------------------------------------------------------------

TINYPROXY_CONF = """\
User tinyproxy
Group tinyproxy
Listen {address}
Port {port}
Timeout 600
LogFile "/var/log/tinyproxy/lab.log"
LogLevel Info
PidFile "/run/tinyproxy/lab.pid"
MaxClients 100
Allow 10.213.0.0/24
ConnectPort 443
ConnectPort 80
"""


@pytest.fixture(scope="module")
def proxy(lab):
    """tinyproxy from the Debian mirror, running on the proxy host: its URL."""
    address = lab.address("proxy")
    conf = TINYPROXY_CONF.format(address=address, port=PROXY_PORT)
    sh(lab, "proxy", "apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive "
                     "apt-get install -y -q tinyproxy >/dev/null")  # fmt: skip
    sh(lab, "proxy", f"cat > /etc/tinyproxy/lab.conf <<'EOF'\n{conf}EOF\n"
                     "install -d -o tinyproxy -g tinyproxy /run/tinyproxy /var/log/tinyproxy && "
                     "tinyproxy -c /etc/tinyproxy/lab.conf")  # fmt: skip
    return f"http://{address}:{PROXY_PORT}"


def test_hosts_behind_a_proxy_converge_with_their_own_route_to_upstream_closed(lab, proxy):
    lab.close_upstreams(hosts=[h for h in lab.hosts if h != "proxy"])
    lab.open_upstreams(hosts=["proxy"])  # the proxy's own host reaches upstream
    assert lab.closed_upstreams("node1") == list(DOUBLES)
    direct = lab.ssh("node1", "/usr/lib/apt/apt-helper download-file "
                              f"http://{RADEON}/rocm/rocm.gpg.key /tmp/key")  # fmt: skip
    assert direct.returncode != 0 and "No route to host" in direct.stdout + direct.stderr

    debian = lab.debian_mirror.split("/")[2]
    data = [f"rocm_proxy={proxy}", f'rocm_no_proxy=["{debian}"]']
    # The controller locks node1's wheels afresh (another test's run may have cached the lock).
    shutil.rmtree(lab.home / ".cache/rocm-fleet/locks", ignore_errors=True)
    since = len(lab.server.requests())
    first = deploy(lab, limit="node1", data=data)
    succeeded(first)
    assert "Proxy | Send apt through the proxy" in changed(first)
    # AMD's repository, its key and the wheels came through the proxy, and only through it;
    # the controller (not a lab host) read download.pytorch.org itself, to lock the wheels.
    for upstream in (RADEON, PYTORCH):
        assert clients(lab, since, upstream) & lab_hosts(lab) == {lab.address("proxy")}, upstream
    assert clients(lab, since, RADEON) == {lab.address("proxy")}
    assert clients(lab, since, PYTORCH) - lab_hosts(lab)
    # Debian's mirror is in rocm_no_proxy: node1 fetched from it itself.
    assert lab.address("node1") in clients(lab, since, debian)
    log = sh(lab, "proxy", "cat /var/log/tinyproxy/lab.log")
    for upstream in (RADEON, PYTORCH):
        assert f"CONNECT {upstream}:443" in log, log[-2000:]
    snippet = sh(lab, "node1", "cat /etc/apt/apt.conf.d/80rocm-fleet-proxy")
    assert f'Acquire::https::Proxy "{proxy}";' in snippet
    assert f'Acquire::http::Proxy::{debian} "DIRECT";' in snippet

    # The inventory drops the proxy: its snippet goes, nothing else changes (nothing to fetch:
    # this run's exact JSON is also the converged node's second run, which changed nothing).
    dropped = deploy(lab, limit="node1")
    succeeded(dropped)
    assert changed(dropped) == {"Proxy | Remove apt's proxy settings": ["node1"]}
    assert lab.ssh("node1", "test -e /etc/apt/apt.conf.d/80rocm-fleet-proxy").returncode == 1


# --- an air gap: a bundle ----------------------------------------------------------------------

BUNDLED = ["--limit", "mirror", "--limit", "node2", "--limit", "core"]


def make_bundle(lab, bundle: Path):
    """``rocm-fleet bundle`` for the hosts in BUNDLED, made beforehand where upstream is
    reachable: the client."""
    ca = {"REQUESTS_CA_BUNDLE": str(lab.ca_cert)}
    lab.open_upstreams()
    return rocm_fleet(lab, "bundle", str(lab.inventory), "--output", str(bundle), *BUNDLED, env=ca)


@pytest.fixture(scope="module")
def bundle(lab) -> tuple[Path, Any]:
    """The bundle for mirror, node2 and core, and the run that made it."""
    path = lab.workdir / "bundle"
    return path, make_bundle(lab, path)


@pytest.fixture
def serving_the_bundle(lab, bundle) -> None:
    """The mirror host serving the bundle (as the air-gap test leaves it), deployed if not."""
    if lab.ssh("mirror", f"test -d {paths.MIRROR_BUNDLE}").returncode != 0:
        data = ["rocm_mirror=mirror", f"rocm_mirror_bundle={bundle[0]}"]
        succeeded(deploy(lab, limit="mirror", data=data))


def test_an_air_gapped_fleet_converges_from_a_bundle_one_of_its_hosts_serves(lab, bundle):
    bundle, made = bundle
    assert made.returncode == 0, made.stdout + made.stderr
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert [(r["url"].split("/", 2)[2], r["suite"], r["packages"]) for r in manifest["repositories"]
            ] == [(f"{AMD}/rocm/packages-multi-arch/debian13", "stable", ["amdrocm7.14-gfx1100"]),
                  (f"{RADEON}/rocm/apt/6.4.3", "jammy", ["rocm-hip-runtime"]),
                  (f"{RADEON}/rocm/apt/7.2.1", "noble", ["rocm"])]  # fmt: skip
    # The Core SDK's own key (the lab signs every double with one key, so one file each).
    assert sorted(manifest["keys"]) == [f"https://{AMD}/rocm/packages-multi-arch/gpg/rocm.gpg",
                                        f"https://{RADEON}/rocm/rocm.gpg.key"]  # fmt: skip
    devices = [f"rocm-sdk-device-{gfx}" for gfx in streams.CORE_SDK_GFX_PACKAGES]
    # rocm is an sdist: setuptools, its build backend, bundled beside it.
    core_runtime = sorted(["filelock", "torch", "torchvision", "rocm", "rocm-sdk-core",
                           "rocm-sdk-libraries", "setuptools", *devices])  # fmt: skip
    assert [(w["index_url"].rsplit("/", 1)[1], w["python"], sorted(w["pins"]))
            for w in manifest["wheel_sets"]] == [
        ("rocm6.4", "3.11", ["filelock", "torch", "torchaudio", "torchvision"]),  # Debian 12
        ("rocm7.14", "3.13", core_runtime),  # Debian 13: torch and its pip ROCm runtime
        ("rocm7.2", "3.13", ["filelock", "torch", "torchvision"]),  # Debian 13, torch 2.14
    ]  # fmt: skip
    core_debs = sorted(p.rsplit("/", 1)[1].split("_")[0] for p in manifest["files"]
                       if p.startswith(f"{AMD}/") and p.endswith(".deb"))  # fmt: skip
    assert core_debs == sorted(["amdrocm-sysdeps7.14", "amdrocm-runtime7.14", "amdrocm-base7.14",
                                "amdrocm-core7.14", "amdrocm-core7.14-gfx1100",
                                "amdrocm7.14-gfx1100"])  # fmt: skip
    debs = [p for p in manifest["files"] if p.endswith(".deb")]
    assert not [p for p in debs if "/6.4.3/" in p and "/r/rocm/" in p]  # jammy: no meta "rocm"
    assert [p for p in debs if "/7.2.1/" in p and "/r/rocm/" in p]
    assert "fetched" in made.stderr  # progress, on stderr
    # (A second bundle run fetches nothing new: tests/integration/bundle/test_bundle.py
    # test_a_bundle_holds_what_hosts_need_verified_and_a_second_run_fetches_nothing_new.)

    lab.close_upstreams()
    mirror_data = ["rocm_mirror=mirror"]
    # A bundle that lacks a package node2 needs: refused by preflight, naming it, before apt
    # starts (a real run: preflight is the same in --dry); the mirror host won't serve it half.
    broken = lab.workdir / "broken-bundle"
    shutil.copytree(bundle, broken)
    (rocminfo,) = broken.rglob("rocminfo_1.0.0.70201-*~24.04_amd64.deb")
    rocminfo.unlink()
    state = ("stat -c '%n %Y %s' /etc/apt/sources.list.d/ /etc/apt/sources.list.d/*; "
             "ls -d /etc/nginx; true")  # fmt: skip
    before = {name: sh(lab, name, state) for name in ("mirror", "node2")}
    refused = deploy(lab, limit="mirror,node2",
                     data=[*mirror_data, f"rocm_mirror_bundle={broken}"])  # fmt: skip
    assert failed_hosts(refused) == ["mirror", "node2"], refused.output[-3000:]
    reason = refusal(refused, "node2") or ""
    assert "the fleet mirror's bundle" in reason and "rocminfo 1.0.0.70201-81~24.04" in reason
    assert rocminfo.name in (refusal(refused, "mirror") or "")
    # refused before anything changed (whatever another test left: any order)
    assert {name: sh(lab, name, state) for name in ("mirror", "node2")} == before

    since = len(lab.server.requests())
    data = [*mirror_data, f"rocm_mirror_bundle={bundle}"]
    first = deploy(lab, limit="mirror,node2,core", data=data)
    succeeded(first)
    served = f"http://{lab.address('mirror')}:8080"
    for name in ("mirror", "node2"):
        source = sh(lab, name, "cat /etc/apt/sources.list.d/rocm.list")
        assert f"{served}/{RADEON}/rocm/apt/" in source, source
        assert "signed-by=/etc/apt/keyrings/rocm.gpg" in source and "trusted" not in source
    assert sh(lab, "core", f"cat {paths.ROCM_SOURCE}") == (
        f"deb [arch=amd64 signed-by={paths.AMDROCM_KEYRING}] "
        f"{served}/{AMD}/rocm/packages-multi-arch/debian13 stable main\n"
    )
    # No host reached a double (they can't), and apt checked AMD's signature itself.
    reached = set().union(*(clients(lab, since, upstream) for upstream in DOUBLES))
    assert not reached & lab_hosts(lab)
    assert "rocm 7.2.1.70201" in sh(lab, "node2", "dpkg-query -W -f='${Package} ${Version}' rocm")
    assert "7.14.1-1" in sh(lab, "core", "dpkg-query -W -f='${Version}' amdrocm7.14-gfx1100")
    pip = sh(lab, "core", "/opt/rocm-fleet/venv/bin/python -m pip list --format=freeze").lower()
    assert "torch==2.14.1+rocm7.14" in pip and "rocm-sdk-device-gfx1100==7.14.0" in pip
    second = deploy(lab, limit="mirror,node2,core", data=data)
    succeeded(second)
    assert changed(second) == {}

    # The mirror refuses a query string (cache busting) and hides the manifest.
    busted = sh(lab, "node2", f"curl -s -o /dev/null -w '%{{http_code}}' '{served}/{AMD}/x?1'")
    assert busted == "400"
    assert sh(lab, "node2", f"curl -s -o /dev/null -w '%{{http_code}}' {served}/manifest.json") == (
        "404"
    )  # the inventory's host names are not served
    # The mirror serves the fleet's hosts alone: the controller's address (the lab's client
    # namespace) is none of them, so nginx answers 403 where node2 gets the file.
    key = f"{served}/{RADEON}/rocm/rocm.gpg.key"
    outsider = lab.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", key])
    assert outsider.stdout == "403", outsider
    assert sh(lab, "node2", f"curl -s -o /dev/null -w '%{{http_code}}' {key}") == "200"

    # Someone at the mirror (or on the wire) swaps core's torch wheel and rewrites the hash
    # on its page: the host's pip refuses it (every wheel pinned to the hash the bundle
    # verified, --require-hashes), naming the wheel and both hashes; nothing is installed.
    (wheel_set,) = [w for w in manifest["wheel_sets"] if "torch" in w["pins"]
                    and w["pins"]["torch"]["version"] == "2.14.1+rocm7.14"]  # fmt: skip
    torch, vision = (wheel_set["pins"][name]["path"] for name in ("torch", "torchvision"))
    genuine = manifest["files"][torch]["sha256"]
    root = paths.MIRROR_BUNDLE
    sh(lab, "mirror", f"cp '{root}/{vision}' '{root}/{torch}'")
    swapped = sh(lab, "mirror", f"sha256sum '{root}/{torch}'").split()[0]
    page = next(p for p in manifest["files"] if p.endswith("/torch/index.html")
                and wheel_set["index_url"].split("://", 1)[1] in p)  # fmt: skip
    sh(lab, "mirror", f"sed -i 's/{genuine}/{swapped}/' '{root}/{page}'")
    sh(lab, "core", "/opt/rocm-fleet/venv/bin/python -m pip uninstall -y -q torch")
    third = deploy(lab, limit="mirror,core", data=data)
    assert failed_hosts(third) == ["core"], third.output[-3000:]
    assert "DO NOT MATCH THE HASHES" in third.output, third.output[-3000:]
    assert genuine in third.output and swapped in third.output
    pip = sh(lab, "core", "/opt/rocm-fleet/venv/bin/python -m pip list --format=freeze").lower()
    assert "torch==" not in pip


# --- a live mirror -----------------------------------------------------------------------------


def test_a_live_mirror_caches_upstream_for_a_host_that_cannot_reach_it(lab, serving_the_bundle):
    lab.close_upstreams(hosts=[h for h in lab.hosts if h != "mirror"])
    lab.open_upstreams(hosts=["mirror"])  # the live mirror's own host reaches upstream
    since = len(lab.server.requests())
    first = deploy(lab, limit="mirror,node3", data=["rocm_mirror=mirror"])
    succeeded(first)
    # Through a live plain-HTTP mirror the host's pip installs the controller's lock
    # (--require-hashes), made from the upstream index: nothing to warn about the wheels;
    # what is said is that the transport is plain (integrity rests on signatures and pins).
    warned = host_line(first, "node3", "warning: the fleet mirror")
    assert "is plain HTTP: integrity rests on AMD's signatures and pinned hashes" in warned
    assert "hashes come from" not in warned
    assert "Fleet mirror | Drop the bundle (a live mirror now)" in changed(first)
    for upstream in (RADEON, PYTORCH):  # the controller, locking the wheels, is no lab host
        assert clients(lab, since, upstream) & lab_hosts(lab) == {lab.address("mirror")}, upstream
    wheels = [r for r in lab.server.requests()[since:] if r["path"].endswith(".whl")]
    # Whole files, never slices (a file replaced upstream can't mix old and new parts), and
    # each fetched by the mirror once however many hosts asked (proxy_cache_lock); the
    # controller fetches them too when it locks them first (the double serves no PEP 658
    # metadata), and not when its lock cache holds them already (an earlier test's run).
    assert wheels and not [r for r in wheels if r["range"]], wheels
    fetched = [r["path"] for r in wheels if r["client"] == lab.address("mirror")]
    assert fetched, wheels
    assert len(fetched) == len(set(fetched)), fetched
    assert lab.ssh("mirror", "test -d /srv/rocm-fleet").returncode == 1
    pip = sh(lab, "node3", "/opt/rocm-fleet/venv/bin/python -m pip list --format=freeze")
    assert "torch==2.9.1+rocm6.4" in pip and "filelock==3.13.1" in pip
    second = deploy(lab, limit="mirror,node3", data=["rocm_mirror=mirror"])
    succeeded(second)
    assert changed(second) == {}


# --- the mirror over TLS -----------------------------------------------------------------------


def test_a_tls_mirror_serves_the_fleet_and_a_certificate_of_another_ca_is_refused(lab, bundle):
    from rocm_fleet.model.tls import make_mirror_files

    lab.close_upstreams()
    address = lab.address("mirror")
    tls = make_mirror_files(lab.workdir / "mirror-tls", [address]).tls
    data = ["rocm_mirror=mirror", f"rocm_mirror_bundle={bundle[0]}",
            f"rocm_mirror_tls_ca={tls.ca}", f"rocm_mirror_tls_cert={tls.cert}",
            f"rocm_mirror_tls_key={tls.key}"]  # fmt: skip
    dry = deploy(lab, limit="mirror,node2", data=data, dry=True)
    succeeded(dry)
    first = deploy(lab, limit="mirror,node2", data=data)
    succeeded(first)
    key_body = Path(tls.key).read_text().splitlines()[1]
    for run in (dry, first):  # the private key is in no output of pyinfra's
        assert key_body not in run.output
        assert "is plain HTTP" not in run.output
    assert "Fleet mirror | Give nginx the mirror's private key (root only)" in changed(first)
    assert sh(lab, "mirror", f"stat -c '%a %U' {paths.MIRROR_KEY}") == "600 root\n"
    served = f"https://{address}:8080"
    for name in ("mirror", "node2"):
        assert f"{served}/{RADEON}/rocm/apt/" in sh(
            lab, name, "cat /etc/apt/sources.list.d/rocm.list"
        )
        assert f"Acquire::https::{address}::CaInfo" in sh(lab, name, f"cat {paths.APT_MIRROR_CONF}")
    # Pinned for the mirror alone: the system's trust store doesn't know the fleet's CA.
    assert lab.ssh("node2", f"curl -sf -o /dev/null {served}/{RADEON}/rocm/rocm.gpg.key").returncode
    assert sh(lab, "node2", f"curl -sf --cacert {paths.MIRROR_CA} -o /dev/null -w '%{{http_code}}' "
                            f"{served}/{RADEON}/rocm/rocm.gpg.key") == "200"  # fmt: skip
    pip = sh(lab, "node2", "/opt/rocm-fleet/venv/bin/python -m pip list --format=freeze")
    assert "torch==" in pip.lower()

    # Someone on the fleet network presents a certificate for the mirror's address from
    # another CA: apt (and curl, pip) on the hosts refuse it.
    other = make_mirror_files(lab.workdir / "other-tls", [address]).tls
    for source, target in ((other.cert, paths.MIRROR_CERT), (other.key, paths.MIRROR_KEY)):
        sh(lab, "mirror", f"cat > {target} <<'EOF'\n{Path(source).read_text()}EOF")
    sh(lab, "mirror", "nginx -s reload && sleep 1")
    update = lab.ssh("node2", "apt-get update 2>&1")
    assert "certificate" in (update.stdout + update.stderr).lower(), update.stdout[-2000:]
    assert f"{address}:8080" in update.stdout + update.stderr
    assert lab.ssh("node2", f"curl -sf --cacert {paths.MIRROR_CA} -o /dev/null "
                            f"{served}/{RADEON}/rocm/rocm.gpg.key").returncode == 60  # fmt: skip
    # The next run puts the mirror's own certificate back, and the hosts fetch again.
    # (It is also the TLS fleet's second run: only the mirror's own side changes, node2's
    # not at all.)
    third = deploy(lab, limit="mirror,node2", data=data)
    succeeded(third)
    assert "Fleet mirror | Give nginx the mirror's certificate" in changed(third)
    others = {op: hosts for op, hosts in changed(third).items()
              if hosts != ["mirror"] or not op.startswith("Fleet mirror | ")}  # fmt: skip
    assert others == {}, changed(third)
    assert lab.ssh("node2", "apt-get update -q").returncode == 0


def test_credentials_reach_apt_and_pip_root_only_and_no_output_shows_them(lab, bundle, tmp_path):
    secret = "lab-Secret-" + os.urandom(6).hex()
    netrc = tmp_path / "pip.netrc"
    netrc.write_text(f"machine pypi.lab.example login ci password {secret}\n")
    netrc.chmod(0o600)
    env = {"LAB_APT_AUTH": f"machine repo.lab.example login ci password {secret}\n"}
    data = ["rocm_mirror=mirror", f"rocm_mirror_bundle={bundle[0]}",
            "rocm_apt_auth=env:LAB_APT_AUTH", f"rocm_pip_netrc={netrc}"]  # fmt: skip
    lab.close_upstreams()
    dry = deploy(lab, "-vvv", "--diff", limit="mirror,node2", data=data, dry=True, env=env)
    succeeded(dry)
    first = deploy(lab, "-vvv", "--diff", limit="mirror,node2", data=data, env=env)
    succeeded(first)
    for run in (dry, first):
        assert secret not in run.output
    assert "ROCm apt repository | Give apt the repository's credentials (root only)" in (
        changed(first)
    )
    for path, text in ((paths.APT_AUTH, env["LAB_APT_AUTH"]), (paths.PIP_NETRC, netrc.read_text())):
        assert sh(lab, "node2", f"stat -c '%a %U %G' {path}") == "600 root root\n"
        assert sh(lab, "node2", f"cat {path}").rstrip("\n") == text.rstrip("\n")
    # A file readable by others where pyinfra runs is refused, naming the key, not the secret.
    netrc.chmod(0o644)
    refused = deploy(lab, limit="node2", data=data, dry=True, env=env)
    assert "inventory key 'rocm_pip_netrc'" in refused.output and secret not in refused.output
    netrc.chmod(0o600)
    second = deploy(lab, limit="mirror,node2", data=data, env=env)
    succeeded(second)
    assert changed(second) == {}
    # Unset: the files go.
    third = deploy(lab, limit="mirror,node2", data=data[:2])
    succeeded(third)
    for path in (paths.APT_AUTH, paths.PIP_NETRC):
        assert lab.ssh("node2", f"test -e {path}").returncode == 1
