"""Every file the nodes get from a template (``files/templates/``), rendered for realistic
settings, is byte for byte the text recorded in ``tests/fixtures/templates/``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rocm_fleet.deploy import pull
from rocm_fleet.deploy.kernel import backports_pin, backports_source
from rocm_fleet.deploy.mirror import apt_mirror_conf, apt_proxy_conf, nginx_site
from rocm_fleet.model import apu, streams
from rocm_fleet.model.config import Config
from rocm_fleet.model.fleet import Fleet, ProxiedUpstream
from rocm_fleet.model.slurm import SlurmGpu, gres_conf
from rocm_fleet.model.sources import AptRepository, SigningKey
from rocm_fleet.model.tls import make_mirror_files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures/templates"
TRUSTED_ROOT = Path(__file__).resolve().parents[1] / "fixtures/pull/root.json"
FINGERPRINT = "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"
BASE = {"rocm_version": "6.4.3", "expected_gfx": "gfx942", "expected_gpu_count": 8}
PULLING = {
    **BASE,
    "rocm_mirror": "https://mirror.lab:8443",
    "rocm_pull": True,
    "rocm_pull_source": "https://mirror.lab:8443/fleet/",
    "rocm_pull_trusted_root": str(TRUSTED_ROOT),
    "rocm_pull_lock": "https://mirror.lab:8443/rocm-fleet/requirements.txt",
    "rocm_pull_lock_sha256": "3f" * 32,
    "rocm_pull_interval": "30min",
}
PROXIED = {
    **BASE,
    "rocm_mirror": "mirror1",
    "rocm_proxy": "http://proxy.corp.example:3128",
    "rocm_no_proxy": ["pypi.corp.example", ".corp.example", "10.1.0.0/16"],
}
SERVERS = [
    ProxiedUpstream("download.pytorch.org"),
    ProxiedUpstream("files.pythonhosted.org", linked=True),
    ProxiedUpstream("mirror.lan:81", "http"),
    ProxiedUpstream("[fd00::7]:8443"),
    ProxiedUpstream("repo.radeon.com"),
]
KEY = SigningKey("https://repo.radeon.com/rocm/rocm.gpg.key", FINGERPRINT)
MI300X = [SlurmGpu("mi300x", f"/dev/dri/renderD{128 + i}") for i in range(8)]
MIRROR1 = {**BASE, "ssh_hostname": "10.0.0.5"}
ALLOW = ["10.0.0.5", "10.0.0.7", "192.168.1.0/24"]


def pulling(ca: str) -> Config:
    """A pull node fetching from a TLS mirror served elsewhere, whose CA is ``ca``."""
    return Fleet({"node-1": {**PULLING, "rocm_mirror_tls_ca": ca}}).config("node-1")


CASES: dict[str, Callable[[str], str]] = {
    "nginx-live-tls.conf": lambda _: nginx_site(
        8443, False, SERVERS, ["127.0.0.53", "fd00::1"], ["10.0.0.5"], ALLOW, tls=True
    ),
    "nginx-live-no-resolver.conf": lambda _: nginx_site(8080, False, SERVERS, [], [], ["10.0.0.7"]),
    "nginx-bundle.conf": lambda _: nginx_site(8080, True, [], None, ["fd00::5"], ALLOW),
    "nginx-bundle-tls.conf": lambda _: nginx_site(8443, True, [], None, [], [], tls=True),
    "apt-proxy.conf": lambda _: apt_proxy_conf(
        Fleet({"node-1": PROXIED, "mirror1": MIRROR1}).config("node-1")
    ),
    "apt-mirror-tls.conf": lambda _: apt_mirror_conf("mirror.lab"),
    "rocm-fleet-pull.service": lambda _: pull.service_unit(),
    "rocm-fleet-pull.timer": lambda ca: pull.timer_unit(pulling(ca)),
    "rocm-fleet-pull": lambda ca: pull.pull_script(pulling(ca), "node-1.lab"),
    "pull-deploy.txt": lambda _: pull.deploy_file(),
    "pull-inventory.txt": lambda _: pull.inventory_file(),
    "backports.sources": lambda _: backports_source(
        "http://deb.debian.org/debian", "bookworm-backports"
    ),
    "backports.pref": lambda _: backports_pin("bookworm-backports"),
    "rocm.list": lambda _: AptRepository(
        "https://repo.radeon.com/rocm/apt/6.4.3", "jammy", KEY
    ).source_text(),
    "rocm.sources": lambda _: AptRepository(
        "http://10.0.0.5:8080/stable.repo.amd.com/rocm/core/packages/debian12",
        "stable",
        KEY,
        keyring="/etc/apt/keyrings/amdrocm-stable.gpg",
        deb822=True,
        x_repo_id="amdrocm-stable",
    ).source_text(),
    "rocm-plain.sources": lambda _: AptRepository(
        "https://repo.radeon.com/rocm/apt/6.4.3", "noble", KEY, deb822=True
    ).source_text(),
    **{f"rocm-pin-{s.name}.pref": lambda _, s=s: s.pin_text() for s in streams.STREAMS},
    "amd-ttm.conf": lambda _: apu.modprobe_options(96),
    "gres.conf": lambda _: gres_conf(MI300X),
    "gres-none.conf": lambda _: gres_conf([]),
}


@pytest.fixture(scope="module")
def ca(tmp_path_factory) -> str:
    return make_mirror_files(tmp_path_factory.mktemp("tls"), ["mirror.lab"]).tls.ca


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_template_renders_the_recorded_text(name, ca):
    assert CASES[name](ca) == (FIXTURES / name).read_text()
