"""Attacks on the controller's wheel locks and the small channels beside them, each told as
who tries it, from where, with what, and each asserting that nothing changed: no lock made
from the attacker's data, no host planned to install, no secret shown.

The locks pin every wheel every live host installs as root (``upstream.lock``); whoever could
choose the hashes would be root on the fleet. See docs/security-model.md.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import subprocess
import tarfile
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import get_args, get_type_hints

import pytest

from integration.rootless import stat_double
from integration.test_lock import WANTED, key_of, locks_for
from rocm_fleet.model import paths
from rocm_fleet.model.config import ConfigError, load_config, without_credentials
from rocm_fleet.model.matrix import HostRuntime
from rocm_fleet.model.secrets import SECRET_SOURCE_SETTINGS
from rocm_fleet.model.setting_types import SecretSource
from rocm_fleet.model.settings import Settings
from rocm_fleet.model.torch_builds import SDIST_ONLY
from rocm_fleet.upstream.http import Fetcher
from rocm_fleet.upstream.lock import LockError, LockRequest
from unit.bundle.test_bundle import Quiet, sdist, wheel, write_pages
from unit.loopback import running, serve, url_of
from unit.loopback import serve_trusted as serve_https
from unit.surveys import SurveyHost, fresh_survey, plan

PY311 = HostRuntime("3.11", "2.36")
FORGED = "f" * 64


@pytest.fixture
def https_index(tmp_path):
    """A PyTorch-like index over TLS (the genuine upstream, as the controller reaches it)."""
    from unit.bundle.test_bundle import index

    www = tmp_path / "www"
    with serve_https(www) as served:
        index(www, served.url, served.url.replace("127.0.0.1", "localhost"))
        yield served


def cache_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").glob("*.json"))


# --- an attacker on the network between the controller and the index -------------------------


def test_a_plain_http_index_on_the_fleet_network_is_refused_before_anything_is_read(tmp_path):
    """Who: anyone on the path to an index named ``http://`` (a closed site's mirror).
    With: the pages they answer, whose ``#sha256`` would pin every host's wheels. The lock
    is refused before a byte is fetched, naming the setting and the ways out."""
    www = tmp_path / "www"
    with serve(www) as served:
        request = LockRequest.of(f"{served.url}/whl/rocm6.4", WANTED, PY311)
        with pytest.raises(LockError) as refused:
            locks_for(tmp_path).lines(request)
        assert served.requests == []
    text = str(refused.value)
    assert "pytorch_index_base_url" in text and "https://" in text
    assert "bundle" in text and "TLS mirror" in text
    assert cache_files(tmp_path) == []


def test_a_live_install_from_a_plain_http_index_is_refused_at_plan_time(monkeypatch, tmp_path):
    """The same attack through the deploy: the host is refused while planning (the reason
    names the setting), no wheel install is planned, and the index is never asked."""
    from rocm_fleet.deploy import pytorch

    www = tmp_path / "www"
    with serve(www) as served:
        monkeypatch.setattr(pytorch, "controller_locks", lambda: locks_for(tmp_path))
        data = {"rocm_version": "6.4.3", "pytorch_index_base_url": f"{served.url}/whl"}
        planned = plan(data, SurveyHost(fresh_survey("debian-12")))
        assert served.requests == []
    assert planned.refused
    assert "pytorch_index_base_url" in (planned.reason or "")
    assert not [name for name in planned.names if "torch wheels" in name]


def test_a_bundle_of_a_plain_http_index_is_refused_before_anything_is_fetched(tmp_path):
    """The same attacker, when the administrator bundles: the bundle's manifest would pin
    the hashes the attacker answered. Refused, naming the setting; nothing written."""
    from rocm_fleet.bundle.build import BundleError, Plan, make_bundle
    from rocm_fleet.model.sources import HostNeeds, WheelNeed

    www = tmp_path / "www"
    with serve(www) as served:
        plan_ = Plan()
        need = WheelNeed(f"{served.url}/whl/rocm6.4", PY311, (("torch", "2.9.1+rocm6.4"),))
        plan_.add("node1", HostNeeds(wheels=(need,)), {})
        with pytest.raises(BundleError, match=r"not https.*pytorch_index_base_url"):
            make_bundle(plan_, tmp_path / "bundle", Fetcher(progress=Quiet()))
        assert served.requests == []
    assert not list((tmp_path / "bundle").rglob("*.whl"))


def test_an_https_index_redirecting_to_http_is_refused_and_nothing_cached(tmp_path):
    """Who: whoever controls an https index (or a CDN in front of it). With: a redirect of
    a project page to plain HTTP, where anyone on the way could answer. Refused, one line."""
    www = tmp_path / "www"

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:9{self.path}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    from unit.loopback import serve_tls

    with serve_tls(www, tmp_path / "tls") as served, pytest.MonkeyPatch.context() as patch:
        patch.setenv("REQUESTS_CA_BUNDLE", str(served.ca))
        import ssl

        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls = tmp_path / "tls"
        context.load_cert_chain(tls / "mirror.crt", tls / "mirror.key")
        with running(Redirect, context) as server:
            url = url_of(server).replace("http://", "https://") + "/whl/rocm6.4"
            with pytest.raises(LockError, match=r"from https to http; refused"):
                locks_for(tmp_path).lines(LockRequest.of(url, WANTED, PY311))
    assert cache_files(tmp_path) == []


# --- another user on the controller ------------------------------------------------------------


def test_a_forged_cache_entry_is_refused_and_the_lock_made_again_from_upstream(
    https_index, tmp_path
):
    """Who: a user who can write the controller's lock cache (a shared home, a backup
    restored, a copied directory). With: a cache file pinning torch to their own wheel,
    made as the old format was checked (a SHA-256 of its own lines), and one carrying an
    HMAC made with another key. Neither is used: the lock is made again from upstream."""
    url = f"{https_index.url}/whl/rocm6.4"
    request = LockRequest.of(url, WANTED, PY311)
    genuine = locks_for(tmp_path).lines(request)
    path = tmp_path / "cache" / f"{request.key()}.json"
    stored = json.loads(path.read_text())
    evil = [re.sub(r"sha256:[0-9a-f]{64}", f"sha256:{FORGED}", line) for line in genuine]
    digest = hashlib.sha256("".join(f"{line}\n" for line in evil).encode()).hexdigest()
    forgeries = [
        {"inputs": stored["inputs"], "lines": evil, "sha256": digest},
        {"inputs": stored["inputs"], "lines": evil, "hmac": stored["hmac"]},
    ]
    import hmac

    other_key = os.urandom(32)
    text = json.dumps({"inputs": stored["inputs"], "lines": evil}, sort_keys=True,
                      separators=(",", ":"))  # fmt: skip
    forgeries.append(
        {**forgeries[1], "hmac": hmac.new(other_key, text.encode(), "sha256").hexdigest()}
    )
    for forged in forgeries:
        path.write_text(json.dumps(forged))
        notes: list[str] = []
        lines = locks_for(tmp_path, notes).lines(request)
        assert lines == genuine and FORGED not in " ".join(lines)
        assert "not authenticated by this controller's lock key" in notes[0]
        assert json.loads(path.read_text()) == stored


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_lock_cache_owned_by_another_user_is_refused_unread(https_index, tmp_path):
    """Who: another user of the controller who made (or was given) the cache directory.
    With: its files, whatever they hold. Refused before any is read, naming the directory."""
    request = LockRequest.of(f"{https_index.url}/whl/rocm6.4", WANTED, PY311)
    locks_for(tmp_path).lines(request)
    asked = len(https_index.requests)
    cache = tmp_path / "cache"
    os.chown(cache, 65534, 65534)
    with pytest.raises(LockError, match=rf"lock cache {re.escape(str(cache))} is owned by uid"):
        locks_for(tmp_path).lines(request)
    assert len(https_index.requests) == asked


def test_a_lock_cache_others_may_write_is_refused_unread(https_index, tmp_path):
    """Who: any local user, when the cache directory is group- or world-writable. Refused,
    naming the directory and the chmod that fixes it; nothing read, nothing fetched."""
    request = LockRequest.of(f"{https_index.url}/whl/rocm6.4", WANTED, PY311)
    genuine = locks_for(tmp_path).lines(request)
    asked = len(https_index.requests)
    cache = tmp_path / "cache"
    for mode in (0o777, 0o770, 0o1777):
        cache.chmod(mode)
        with pytest.raises(LockError, match=rf"chmod go-w {re.escape(str(cache))}"):
            locks_for(tmp_path).lines(request)
    assert len(https_index.requests) == asked
    cache.chmod(0o700)
    assert locks_for(tmp_path).lines(request) == genuine


def test_a_lock_key_others_may_read_is_refused(https_index, tmp_path):
    """Who: a local user who can read the controller's key (and so forge cache files). The
    key is made 0600 in a 0700 directory; one readable by others is refused, naming it."""
    request = LockRequest.of(f"{https_index.url}/whl/rocm6.4", WANTED, PY311)
    locks_for(tmp_path).lines(request)
    key = tmp_path / "config" / "lock-key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key_of(tmp_path)) == 32
    assert (key.parent.stat().st_mode & 0o777) == 0o700
    key.chmod(0o644)
    with pytest.raises(LockError, match=rf"the lock key {re.escape(str(key))} is not 32 bytes"):
        locks_for(tmp_path).lines(request)
    key.chmod(0o600)
    key.unlink()
    key.symlink_to(tmp_path / "elsewhere")  # a link planted where the key goes: not followed
    with pytest.raises(LockError, match=r"the lock key"):
        locks_for(tmp_path).lines(request)
    assert not (tmp_path / "elsewhere").exists()


# --- an attacker who can publish on the index (or a mirror of it) ----------------------------


def test_an_sdist_of_a_distribution_published_as_wheels_is_never_built_on_the_hosts(tmp_path):
    """Who: someone who can add files to the index (a compromised mirror, a typo-squatted
    project on it). With: a newer version of a wheel-only distribution published as an
    sdist alone, whose build would run their code as root on every host. Only the
    distributions the upstream facts record as sdist-only may be pinned to an sdist."""
    assert "numpy" not in SDIST_ONLY
    www = tmp_path / "www"
    source = sdist(www / "whl/x", "numpy", "9.9.9")
    write_pages(www, "whl/x", {"numpy": [source]})
    with serve_https(www) as served:
        request = LockRequest.of(f"{served.url}/whl/x", ["numpy>=1"], PY311)
        with pytest.raises(LockError, match=r"no wheel of numpy"):
            locks_for(tmp_path).lines(request)
    assert cache_files(tmp_path) == []


def test_an_sdist_with_an_in_tree_build_backend_is_refused(tmp_path):
    """Who: the same publisher. With: AMD's ``rocm`` (sdist-only, so allowed) replaced by
    one whose pyproject.toml names a ``backend-path``: a build backend inside the sdist,
    which no pinned wheel carries. Refused, naming the sdist; nothing cached."""
    www = tmp_path / "www"
    path = sdist(www / "whl/x", "rocm", "7.14.0", ("rocm-sdk-core==7.14.0",))
    with tarfile.open(path, "r:gz") as archive:
        members = {
            m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()
        }
    members["rocm-7.14.0/pyproject.toml"] = (
        b'[build-system]\nrequires = []\nbuild-backend = "evil"\nbackend-path = ["."]\n'
    )
    members["rocm-7.14.0/evil.py"] = b"import os; os.system('id > /tmp/owned')\n"
    with tarfile.open(path, "w:gz") as archive:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    core = wheel(www / "whl/x", "rocm-sdk-core", "7.14.0")
    write_pages(www, "whl/x", {"rocm": [path], "rocm-sdk-core": [core]})
    with serve_https(www) as served:
        request = LockRequest.of(f"{served.url}/whl/x", ["rocm==7.14.0"], PY311)
        with pytest.raises(
            LockError, match=r"rocm-7\.14\.0\.tar\.gz: its pyproject\.toml names a backend-path"
        ):
            locks_for(tmp_path).lines(request)
    assert cache_files(tmp_path) == []


# --- an operator's mistake that an attacker reads: the secret in the inventory --------------

SECRET = "machine pypi.lan login ci password hunter2-Sup3r"


@pytest.mark.parametrize("key", sorted(SECRET_SOURCE_SETTINGS))
def test_a_secret_pasted_into_a_secret_setting_is_never_echoed(key):
    """Who: anyone who reads the run's output, the journal or the audit's JSON. With: the
    error for a literal secret given where its source (``env:NAME``, a 0600 file) belongs.
    The error names the key and what would be valid, never the value."""
    with pytest.raises(ConfigError) as refused:
        load_config({"rocm_version": "6.4.3", key: SECRET})
    text = str(refused.value)
    assert (
        repr(key) in text and "env:" in text and "<not shown: it may be the secret itself>" in text
    )
    assert str(len(SECRET)) not in text
    assert "hunter2" not in text and "password" not in text.split("expected")[0]


def test_every_setting_that_takes_a_secret_source_is_one_whose_value_is_never_shown():
    """A new secret setting can't be added without its errors masked: every setting whose
    rule is a secret's source (``env:NAME`` or a 0600 file) is one whose value is never shown."""
    hints = get_type_hints(Settings, include_extras=True)
    takes_sources = {key for key, hint in hints.items() if SecretSource in get_args(hint)}
    assert takes_sources == SECRET_SOURCE_SETTINGS


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("https://user:p@ss@pypi.lan/whl", "https://***@pypi.lan/whl"),
        ("https://u:a@b@c@pypi.lan:8443/whl?x=y@z", "https://***@pypi.lan:8443/whl?x=y@z"),
        ("http://token@mirror.lan/", "http://***@mirror.lan/"),
        ("https://pypi.lan/whl/@scope", "https://pypi.lan/whl/@scope"),
    ],
)
def test_credentials_in_a_url_are_masked_up_to_the_last_at_of_the_authority(url, masked):
    """Who: a reader of the error. With: a URL whose password holds an ``@``: nothing of
    it is left (it used to show what followed its first ``@``)."""
    assert without_credentials(url) == masked
    with pytest.raises(ConfigError) as refused:
        load_config(
            {"rocm_version": "6.4.3", "pytorch_index_base_url": url.replace("https", "ftp")}
        )
    assert "p@ss" not in str(refused.value) and "ss@pypi" not in str(refused.value)


# --- another user on a node -------------------------------------------------------------------


def test_a_venv_another_user_owns_is_refused_naming_the_path():
    """Who: a user of the node who made (or can write) the venv at ``pytorch_venv``. With:
    its Python or its site-packages, which the deploy would run as root. The host is
    refused at preflight, naming the venv and the file; nothing is planned."""
    venv = paths.DEFAULT_VENV
    found = f"alice 755 {venv}/lib/python3.11/site-packages"
    survey = fresh_survey("debian-12", writable_by_others={venv: found})
    planned = plan({"rocm_version": "6.4.3", "rocm_users": ["alice"]}, SurveyHost(survey))
    assert planned.refused and planned.beyond_preflight == []
    assert f"the venv {venv} is not root's alone" in (planned.reason or "")
    assert f"{venv}/lib/python3.11/site-packages is owned by alice" in (planned.reason or "")
    # Without torch, the venv is not run: no refusal for it.
    calm = plan(
        {"rocm_version": "6.4.3", "rocm_users": ["alice"], "pytorch_install": False},
        SurveyHost(survey),
    )
    assert "not root's alone" not in (calm.reason or "")


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another user need root to make")
def test_the_venv_fact_finds_a_file_of_another_user_or_one_others_may_write(tmp_path):
    """The fact preflight reads, run as the shell would on the node."""
    from rocm_fleet.facts.files import WritableByOthers

    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/python").symlink_to("/usr/bin/python3")
    fact = WritableByOthers()
    env = {
        "PATH": f"{stat_double(tmp_path.with_name(f'{tmp_path.name}-bin'), tmp_path)}:/usr/bin:/bin"
    }

    def found() -> str | None:
        run = subprocess.run(
            ["sh", "-c", fact.command(str(venv))], capture_output=True, text=True, env=env
        )
        return fact.process(run.stdout.splitlines())

    for entry in (tmp_path, venv, venv / "bin"):
        os.chown(entry, 0, 0)
    venv.chmod(0o755)
    (venv / "bin").chmod(0o755)
    assert found() is None
    (venv / "bin").chmod(0o775)
    assert found() == f"root 775 {venv}/bin"
    (venv / "bin").chmod(0o755)
    os.chown(venv / "bin/python", 1000, 1000, follow_symlinks=False)
    assert found() is not None and found().endswith(f"{venv}/bin/python")
    absent = subprocess.run(
        ["sh", "-c", fact.command(str(tmp_path / "none"))], capture_output=True, env=env
    )
    assert fact.process(absent.stdout.decode().splitlines()) is None


# --- a mirror that redirects the apt key fetch to plain HTTP ------------------------------------


def test_the_key_fetch_on_a_node_never_follows_https_to_http(tmp_path):
    """Who: whoever answers the key URL over https (a mirror, a CDN). With: a redirect to
    http. curl is told to follow https URLs to https only (the fingerprint check would
    refuse a wrong key anyway; the redirect is refused before any key is read)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "curl.args"
    (bin_dir / "curl").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {log}\nexit 22\n')
    (bin_dir / "curl").chmod(0o755)
    script = Path(paths.__file__).parents[1] / "files/scripts/verified-keyring.sh"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    for url, limited in (("https://repo.radeon.com/rocm/rocm.gpg.key", True),
                         ("http://mirror.lan/rocm.gpg.key", False)):  # fmt: skip
        run = subprocess.run(
            ["sh", str(script), url, "A" * 40, str(tmp_path / "rocm.gpg")], env=env,
            capture_output=True,
        )  # fmt: skip
        assert run.returncode != 0 and not (tmp_path / "rocm.gpg").exists()
        args = log.read_text().splitlines()
        redirects = args[args.index("--proto-redir") + 1] if "--proto-redir" in args else None
        assert redirects == ("=https" if limited else None)
