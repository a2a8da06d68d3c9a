"""End to end: runs that meet faults end with each host converged or failed with a reason.

On one lab: a replaced signing key, the ROCm mirror stopping in the middle of an install (and
an unreachable host in the run that repairs it), the PyTorch index down while torch is being
changed, and dpkg killed in the middle of a release upgrade. Each test sets up the hosts it
needs, so the tests pass in any order and alone. A test that starts from an installed host
asks for it (``installed``): in file order an earlier test has left it so; otherwise a
deploy does. A test that needs a host rocm-fleet has never touched has one of its own
(``fkey``, ``f2``), which no other test deploys, and checks it is untouched (``untouched``).
"""

from __future__ import annotations

import shlex
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from e2e import support
from e2e.support import VENV_PYTHON, changed, failed_hosts, running_lab, sh
from lab import HostSpec

pytestmark = pytest.mark.e2e

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
HOSTS = [
    HostSpec("fkey", data=dict(DATA)),  # only the replaced key's test: never gets a key
    # starts converged (tests/lab/converged.py, a host of test_audit.py's kind): the fault
    # tests need one host that has ROCm and torch; f2 and fkey are the fresh ones
    HostSpec("f1", data={**DATA, "rocm_users": ["alice"]}, converged=True),
    HostSpec("f2", data=dict(DATA)),  # only the mirror's test: its install is the one cut
    HostSpec("gone", data=dict(DATA), sshd=False),
]
SOURCE = "etc/apt/sources.list.d/rocm.list"
KEYRING = "etc/apt/keyrings/rocm.gpg"


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3", "7.2.1"])


def deploy(lab, limit: str, *data: str):
    return support.deploy(lab, limit=limit.split(","), data=data)


def torch_of(lab, name: str) -> str:
    """torch's version and HIP version, by importing it in the host's venv."""
    return sh(lab, name, f"{VENV_PYTHON} -c 'import torch; print(torch.__version__, "
                         "torch.version.hip)'").strip()  # fmt: skip


def when(condition, action, timeout: float = 300) -> threading.Thread:
    """Run `action` once `condition()` holds (polled every 20 ms), in a thread."""

    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                action()
                return
            time.sleep(0.02)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def is_installed(lab, name: str) -> bool:
    """ROCm 6.4.3 and its torch on the host, dpkg not left mid-run."""
    check = lab.ssh(
        name,
        f"dpkg-query -W -f='${{Version}}' rocm-core && {VENV_PYTHON} -c 'import torch' "
        '&& test -z "$(dpkg --audit)"',
    )
    return check.returncode == 0 and ".60403-" in check.stdout


def untouched(lab, name: str) -> None:
    """Assert that rocm-fleet has never deployed to ``name``: no ROCm source, key or state
    (a test's own fresh host, which no other test may deploy)."""
    root = lab.root(name)
    left = [p for p in (SOURCE, KEYRING, "var/lib/rocm-fleet") if (root / p).exists()]
    assert left == [], f"{name} is no fresh host: another test deployed to it ({left})"


@pytest.fixture
def installed(lab):
    """``installed(name)``: the host with 6.4.3 and its torch, deployed if it isn't."""

    def install(name: str) -> None:
        if not is_installed(lab, name):
            result = deploy(lab, name)
            assert failed_hosts(result) == [], result.output[-3000:]

    return install


def other_key() -> str:
    """An armored public key that is not the lab's (a throwaway ed25519 key)."""
    with tempfile.TemporaryDirectory(prefix="rflab-otherkey-") as home:
        env = {"GNUPGHOME": home, "PATH": "/usr/bin:/bin"}
        gpg = ["gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", ""]
        try:
            subprocess.run([*gpg, "--quick-gen-key", "Not AMD <not-amd@invalid>", "ed25519",
                            "sign", "never"], env=env, check=True, capture_output=True)  # fmt: skip
            return subprocess.run([*gpg, "--armor", "--export"], env=env, check=True,
                                  capture_output=True, text=True).stdout  # fmt: skip
        finally:
            subprocess.run(["gpgconf", "--kill", "all"], env=env, check=False)


def test_a_replaced_signing_key_is_refused_with_nothing_written(lab):
    served = lab.workdir / "www/radeon/rocm/rocm.gpg.key"
    untouched(lab, "fkey")
    genuine = served.read_text()
    served.write_text(other_key())
    try:
        result = deploy(lab, "fkey")
    finally:
        served.write_text(genuine)
    assert failed_hosts(result) == ["fkey"], result.output[-3000:]
    assert "refusing key from https://repo.radeon.com/rocm/rocm.gpg.key: fingerprint" in (
        result.output
    ), result.output[-3000:]
    root = lab.root("fkey")
    assert not (root / KEYRING).exists() and not (root / SOURCE).exists()
    assert not any(root.glob("etc/apt/keyrings/rocm.gpg*"))


def test_mirror_stopping_mid_install_fails_that_host_only_and_an_unreachable_one_is_named(
    lab, installed
):
    # f1 converged, f2 installing: only f2's install meets the stopped mirror. (A fresh f1
    # would be installing in step with f2 and meet it too.)
    installed("f1")
    untouched(lab, "f2")
    stamp = lab.root("f2") / "var/lib/rocm-fleet/apt-lists.stamp"
    # After the source, key and apt-get update: the package downloads meet a 503.
    watcher = when(stamp.exists, lambda: lab.server.set_down("repo.radeon.com", True, "503"))
    try:
        result = deploy(lab, "f1,f2")
    finally:
        watcher.join(1)
        lab.server.clear_faults()
    assert failed_hosts(result) == ["f2"], result.output[-3000:]
    assert "503" in result.output and "repo.radeon.com" in result.output, result.output[-3000:]
    assert (lab.root("f2") / SOURCE).exists()

    # The next run, with a host that can't be reached: that one is named, the rest converge
    # (f2 finishes its install).
    again = deploy(lab, "f1,f2,gone")
    print(again.output[-1500:])
    assert "gone" in failed_hosts(again) or "Could not connect to gone" in again.output
    assert [h for h in failed_hosts(again) if h != "gone"] == [], again.output[-3000:]
    assert again.json and again.json.get("results"), again.output[-3000:]  # ran to its end
    assert "[gone]" in again.output and "gone" in again.output.split("Beginning")[0]
    assert torch_of(lab, "f2").startswith("2.9.1+rocm6.4 ")
    assert torch_of(lab, "f1").startswith("2.9.1+rocm6.4 ")


def test_pytorch_index_down_leaves_the_working_torch_in_place(lab, installed):
    installed("f1")
    before = torch_of(lab, "f1")
    # The index down for the controller too, with no lock of torch 2.8.0 cached: the wheel
    # set can't be pinned, so f1 is refused while planning, naming the index, unchanged.
    lab.server.set_down("download.pytorch.org", True, "drop")
    try:
        refused = deploy(lab, "f1", "torch_version=2.8.0")
    finally:
        lab.server.clear_faults()
    assert failed_hosts(refused) == ["f1"], refused.output[-3000:]
    reason = support.refusal(refused, "f1") or ""
    assert "can't lock torch==2.8.0+rocm6.4" in reason, refused.output[-3000:]
    assert "https://download.pytorch.org/whl/rocm6.4" in reason
    assert "Install the torch wheels" not in refused.output
    assert torch_of(lab, "f1") == before
    # The lock made (a --dry run while the index is up), the index goes down for the host's
    # own pip mid-run: the install fails and the working torch stays.
    support.succeeded(support.deploy(lab, limit=["f1"], data=["torch_version=2.8.0"], dry=True))
    lab.server.set_down("download.pytorch.org", True, "drop")
    try:
        result = deploy(lab, "f1", "torch_version=2.8.0")
    finally:
        lab.server.clear_faults()
    assert failed_hosts(result) == ["f1"], result.output[-3000:]
    assert "Install the torch wheels" in result.output
    assert torch_of(lab, "f1") == before  # still importable, still the ROCm build
    assert Path(lab.root("f1") / "opt/rocm-fleet/venv/bin/python").exists()


# Stands in for update-alternatives (the real one moved aside) while the ROCm 7.2.1
# rocm-core postinst runs: records its pid and hangs, so the test can kill dpkg right there.
HANG = """#!/bin/sh
case "$*" in
    *"--install /opt/rocm rocm /opt/rocm-7.2.1"*) echo $$ > /tmp/rflab-hang; exec sleep 600 ;;
esac
exec /usr/bin/update-alternatives.real "$@"
"""


def test_dpkg_killed_mid_upgrade_is_repaired_by_the_next_run(lab, installed):
    installed("f1")  # the upgrade's postinst is what gets killed
    root = lab.root("f1")
    tool = root / "usr/bin/update-alternatives"
    tool.rename(root / "usr/bin/update-alternatives.real")
    tool.write_text(HANG)
    tool.chmod(0o755)
    marker = root / "tmp/rflab-hang"

    def kill_dpkg() -> None:
        time.sleep(0.2)
        lab.ssh("f1", f"kill -9 $(pidof dpkg); kill -9 {shlex.quote(marker.read_text().strip())}")

    watcher = when(lambda: marker.exists() and marker.read_text().strip(), kill_dpkg)
    try:
        result = deploy(lab, "f1", "rocm_version=7.2.1")
    finally:
        watcher.join(1)
        (root / "usr/bin/update-alternatives.real").replace(tool)
        marker.unlink(missing_ok=True)
    assert failed_hosts(result) == ["f1"], result.output[-3000:]
    assert "signal 9" in result.output or "dpkg" in result.output, result.output[-3000:]
    left = sh(lab, "f1", "dpkg-query -W -f='${Status} ${Package}\\n' | grep -v ' installed '")
    assert left.strip(), "dpkg was expected to be left mid-install"
    print("left by the killed dpkg:", left.strip().replace("\n", "; "))

    again = deploy(lab, "f1", "rocm_version=7.2.1")
    assert failed_hosts(again) == [], again.output[-3000:]
    assert "ROCm apt repository | Finish an interrupted dpkg run" in changed(again)
    assert sh(lab, "f1", "dpkg --audit").strip() == ""
    versions = sh(lab, "f1", "dpkg-query -W -f='${Version}\\n' rocm-core rocminfo hsa-rocr")
    assert all(".70201-" in v for v in versions.split()), versions
    assert torch_of(lab, "f1").startswith("2.14.1+rocm7.2 ")  # the newest on rocm7.2
    # (that a converged node's next run changes nothing is test_fleet.py's)
