"""Pull mode's signed data where it needs real HTTP: the node's client (pull/client.py,
``NoRedirectFetcher``) fetching a real TUF repository (``rocm-fleet publish``'s) served over
loopback, and ``rocm-fleet publish`` in a process of its own. The protocol's attacks (replay,
freeze, mix and match, rotation, other nodes' targets, sizes) run on a simulated mirror in
tests/unit/pull/test_pull_tuf.py.

Each attack names who does it, from where, with what, and asserts that the node changed
nothing: the serial it applied unchanged, and the refusal's result and reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rocm_fleet.pull.repository import PullRepository
from unit.conftest import DRIVERLESS_SITE
from unit.pullrepo import NODE, OTHER, SETTINGS, PullFleet, Quiet, Redirecting, refused, serve

SITE = DRIVERLESS_SITE.read_text()


@pytest.fixture
def fleet(tmp_path):
    made = PullFleet(tmp_path)
    yield made
    made.close()


def test_a_redirect_is_never_followed(fleet, tmp_path):
    """Who: whoever answers for the repository's host. With what: a redirect from the
    repository's URL to plain http elsewhere."""
    fleet.publish({NODE: SETTINGS})
    redirecting = serve(fleet.served, Redirecting)
    fleet.url = f"http://127.0.0.1:{redirecting.server_address[1]}"
    try:
        assert "HTTP 302" in refused(fleet, "fetch-failed")
    finally:
        redirecting.shutdown()
        redirecting.server_close()


class Endless(Quiet):
    """A host serving the repository whose timestamp never ends."""

    def do_GET(self) -> None:
        if not self.path.endswith("/timestamp.json"):
            return super().do_GET()
        self.send_response(200)
        self.end_headers()
        try:
            while True:
                self.wfile.write(b" " * 65536)
        except OSError:  # the node hung up
            pass


def test_a_timestamp_that_never_ends_is_refused_past_its_bound_on_the_wire(fleet):
    """Who: whoever answers for the repository's host. With what: a timestamp.json that never
    ends (to fill the node's memory or hold its pull forever). The client reads it in chunks
    and hangs up past TUF's bound for a timestamp (16 KiB)."""
    fleet.publish({NODE: SETTINGS})
    endless = serve(fleet.served, Endless)
    fleet.url = f"http://127.0.0.1:{endless.server_address[1]}"
    try:
        said = refused(fleet, "unverified")
    finally:
        endless.shutdown()
        endless.server_close()
    assert "DownloadLengthMismatchError" in said and "length of 16384" in said, said


def test_an_https_repository_is_trusted_by_the_mirrors_ca_alone(fleet, tmp_path):
    """The repository on the TLS mirror (rocm_mirror_tls_*): fetched verifying the mirror's
    certificate against the CA a push installed. Who: whoever answers for the mirror's
    address with a certificate of another CA's (or one the system's CAs trust)."""
    import ssl

    from rocm_fleet.model.tls import make_mirror_files

    fleet.publish({NODE: SETTINGS})
    tls = make_mirror_files(tmp_path / "tls", ["127.0.0.1"]).tls
    other = make_mirror_files(tmp_path / "other-ca", ["127.0.0.1"]).tls
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert, tls.key)
    mirror = serve(fleet.served, tls=context)
    fleet.url = f"https://127.0.0.1:{mirror.server_address[1]}"
    try:
        fleet.ca = other.ca
        assert "CERTIFICATE_VERIFY_FAILED" in refused(fleet, "fetch-failed")
        fleet.ca = tls.ca
        assert fleet.pull().settings == SETTINGS
    finally:
        mirror.shutdown()
        mirror.server_close()


# --- rocm-fleet publish -----------------------------------------------------------------------


def inventory(tmp_path: Path, root: Path, **node1: object) -> Path:
    pulling = {**SETTINGS, "rocm_pull_source": "http://mirror.lab:8080/fleet/",
               "rocm_pull_trusted_root": str(root), "rocm_pull_lock": "/srv/wheels/lock.txt",
               "rocm_pull_lock_sha256": "3f" * 32}  # fmt: skip
    hosts = [
        # The controller's own keys for this node: never in what the node is given.
        (NODE, {**pulling, "ssh_user": "root", "ssh_port": 2222, "_sudo": True,
                "gpu_vendor": "amd", **node1}),
        (OTHER, {**pulling, "rocm_pull_node": "gpu-2"}),
        ("pushed", {"rocm_version": "6.4.3"}),
    ]  # fmt: skip
    path = tmp_path / f"inventory{len(list(tmp_path.glob('inventory*.py')))}.py"
    path.write_text(f"fleet = {hosts!r}\n")
    return path


def published(repository: Path) -> dict[str, dict]:
    return {name: json.loads(content)
            for name, content in PullRepository(repository, []).node_targets().items()}  # fmt: skip


def rocm_fleet(*args: str) -> subprocess.CompletedProcess:
    """The CLI in a process of its own (loading an inventory imports pyinfra's CLI)."""
    return subprocess.run([sys.executable, "-m", "rocm_fleet.cli", *args], capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_publish_renders_each_pull_nodes_settings_from_the_inventory(tmp_path):
    repository, keys = tmp_path / "repository", tmp_path / "keys"
    made = rocm_fleet("publish", "--init", "--repository", str(repository), "--keys", str(keys))
    assert made.returncode == 0, made.stderr
    root = repository / "metadata/root.json"
    assert f'rocm_pull_trusted_root = "{root}"' in made.stdout
    args = ["publish", str(inventory(tmp_path, root)), "--repository", str(repository),
            "--keys", str(keys)]  # fmt: skip
    first = rocm_fleet(*args)
    assert first.returncode == 0, first.stderr
    assert "Targets version 2: gpu-2, node1 changed." in first.stdout
    targets = published(repository)
    assert sorted(targets) == ["gpu-2", NODE]  # by rocm_pull_node, else the host's name
    lock = {"rocm_pull_lock": "/srv/wheels/lock.txt", "rocm_pull_lock_sha256": "3f" * 32}
    assert targets[NODE]["settings"] == {**SETTINGS, **lock}
    assert targets[NODE]["node"] == NODE and targets[NODE]["serial"] == 2
    assert "Nothing changed" in rocm_fleet(*args).stdout
    # A node taken out of pull mode is published with rocm_pull: False (it takes itself out).
    args[1] = str(inventory(tmp_path, root, rocm_pull=False))
    assert rocm_fleet(*args).returncode == 0
    assert published(repository)[NODE]["settings"]["rocm_pull"] is False


def test_publish_refuses_an_inventory_a_push_would_refuse_naming_the_key(tmp_path):
    repository, keys = tmp_path / "repository", tmp_path / "keys"
    rocm_fleet("publish", "--init", "--repository", str(repository), "--keys", str(keys))
    bad = inventory(tmp_path, repository / "metadata/root.json", rocm_version="6.4.99")
    refused_run = rocm_fleet("publish", str(bad), "--repository", str(repository),
                             "--keys", str(keys))  # fmt: skip
    assert refused_run.returncode == 4  # bad input (cli.exits)
    assert "node1: inventory key 'rocm_version' has value '6.4.99'" in refused_run.stderr
    assert published(repository) == {}


def test_publish_carries_each_nodes_site_matrix_data_and_refuses_a_bad_one(tmp_path):
    repository, keys = tmp_path / "repository", tmp_path / "keys"
    rocm_fleet("publish", "--init", "--repository", str(repository), "--keys", str(keys))
    root = repository / "metadata/root.json"
    site = tmp_path / "site-matrix.json"
    site.write_text(SITE)
    args = ["publish", str(inventory(tmp_path, root, rocm_version="10.9.0",
                                     rocm_matrix_data=str(site))),
            "--repository", str(repository), "--keys", str(keys)]  # fmt: skip
    run = rocm_fleet(*args)
    assert run.returncode == 0, run.stderr
    targets = published(repository)
    assert targets[NODE]["matrix_data"] == SITE  # the file's bytes: its SHA-256 on the node
    assert targets[NODE]["settings"]["rocm_version"] == "10.9.0"
    assert "rocm_matrix_data" not in targets[NODE]["settings"]  # a path of the controller's
    assert "matrix_data" not in targets["gpu-2"]
    # A site file edited to point the node at another host: refused, nothing published.
    site.write_text(SITE.replace('"stable.repo.amd.com"', '"evil.example"'))
    bad = rocm_fleet(*args)
    assert bad.returncode == 4, bad.stderr
    assert f"site matrix data {site}: field 'releases[0].repository'" in bad.stderr
    assert published(repository) == targets
