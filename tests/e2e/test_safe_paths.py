"""End to end: the safe path rule at preflight (docs/security-model.md). A node whose
``pytorch_venv`` lies in a directory a user owns (alice, a real account of the node's) is
refused before anything is planned, naming the directory, its owner and the rule, and left
unchanged: alice could otherwise swap the venv between preflight and the deploy running its
``bin/python`` as root. Made root's, the same directory passes preflight."""

from __future__ import annotations

import pytest

from e2e.support import deploy, differences, failed_hosts, refusal, root_hashes, running_lab, sh
from lab import HostSpec

pytestmark = pytest.mark.e2e

VENV = "/srv/alice/venv"
HOST = HostSpec("venvparent", data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100",
                                    "expected_gpu_count": 1, "pytorch_venv": VENV})  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    for lab in running_lab([HOST], ["6.4.3"]):
        sh(lab, HOST.name, "install -d -o alice -m 0755 /srv/alice")  # the lab's user alice
        yield lab


def test_a_venv_in_a_directory_another_user_owns_is_refused_and_the_host_unchanged(lab):
    # What this test starts from, whatever ran before it: alice's /srv/alice, and the
    # keyrings' directory as Debian ships it (the test below opens it to everyone).
    sh(lab, HOST.name, "chown alice /srv/alice && chmod 0755 /etc/apt/keyrings")
    before = root_hashes(lab.root(HOST.name))
    result = deploy(lab)
    assert failed_hosts(result) == [HOST.name], result.output[-3000:]
    reason = refusal(result, HOST.name) or ""
    print(f"refused: {reason}")
    assert (
        f"the venv {VENV} is in a directory not root's alone: /srv/alice is owned by alice "
        "(mode 755)"
    ) in reason, result.output[-3000:]
    assert "(the safe path rule)" in reason
    assert differences(before, root_hashes(lab.root(HOST.name))) == []
    # Root's again: preflight lets the host through (planning goes on past it).
    sh(lab, HOST.name, "chown root:root /srv/alice")
    dry = deploy(lab, dry=True)
    assert "not root's alone" not in (refusal(dry, HOST.name) or ""), dry.output[-3000:]


def test_a_keyring_directory_others_may_write_fails_the_host_at_the_write(lab):
    """On the node, at the moment of writing: /etc/apt/keyrings made 0777 after preflight's
    look (nothing in preflight reads it) fails the host at the keyring's write, naming the
    directory, and AMD's key is never written there (nor a temporary beside it)."""
    sh(lab, HOST.name, "chown root:root /srv/alice && chmod 0777 /etc/apt/keyrings")
    result = deploy(lab)
    assert failed_hosts(result) == [HOST.name], result.output[-3000:]
    assert (
        "refusing to write or run /etc/apt/keyrings/rocm.gpg as root: /etc/apt/keyrings is owned "
        "by root (mode 777)"
    ) in result.output, result.output[-3000:]
    assert not (lab.root(HOST.name) / "etc/apt/keyrings/rocm.gpg").exists()
    assert list((lab.root(HOST.name) / "etc/apt/keyrings").iterdir()) == []
