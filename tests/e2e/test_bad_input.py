"""End to end: bad inventory data is refused before any operation, with zero bytes changed.

Each case writes an inventory with one mistake, runs the deploy against two lab hosts and
checks the message (host, key, value, what is valid). Every file of both roots is hashed
(content, mode, owner, link target) before the first case and after the last one: not a
byte may differ. An unsupported distro is a per-host preflight refusal, checked the same way
(on a bad1 that says Debian 11 for that test only, so the tests pass in any order).
"""

from __future__ import annotations

import os
import runpy
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from e2e.support import deploy, differences, refusal, root_hashes, running_lab
from lab import HostSpec

pytestmark = pytest.mark.e2e

GOOD = {
    "rocm_version": "6.4.3",
    "expected_gfx": "gfx1100",
    "expected_gpu_count": 1,
    "rocm_users": ["alice"],
}
HOSTS = [HostSpec("bad1", data=dict(GOOD)), HostSpec("bad2", data=dict(GOOD))]

# (case id, change to bad1's data, needles the error output must contain)
CASES = [
    ("unknown release", {"rocm_version": "6.2.9"},
     ["bad1:", "'rocm_version'", "'6.2.9'", "did you mean '6.2.4'", "rocm-fleet matrix"]),
    ("release as X.Y", {"rocm_version": "7.14"},
     ["bad1:", "'rocm_version'", "'7.14'", "did you mean '7.14.1'",
      "X.Y is not read as the newest X.Y.z"]),
    ("torch version typed as a number", {"torch_version": 2.5},
     ["'torch_version'", "2.5", "arrived as a number: quote it"]),
    ("release typed as a number", {"rocm_version": 6.4},
     ["'rocm_version'", "6.4", "arrived as a number: quote it"]),
    ("renamed key", {"driver": "dkms"}, ["'driver'", "renamed to 'rocm_driver'"]),
    ("near-miss of a setting", {"rocm_reboots": "allow"},
     ["unknown inventory key 'rocm_reboots'", "did you mean 'rocm_reboot'"]),
    ("torch not published for the release", {"torch_version": "2.11.0"},
     ["'torch_version'", "'2.11.0'", "rocm6.4", "2.8.0, 2.9.0, 2.9.1"]),
    ("misspelled key", {"rocm_verison": "7.2.1"},
     ["'rocm_verison'", "did you mean 'rocm_version'"]),
    ("users as a string", {"rocm_users": "alice"},
     ["'rocm_users'", "'alice'", "a list of user names", "e.g. ['alice']"]),
    ("flag as a string", {"pytorch_install": "yes"},
     ["'pytorch_install'", "'yes'", "true or false"]),
    ("negative GPU count", {"expected_gpu_count": -1},
     ["'expected_gpu_count'", "-1", "whole number"]),
    ("expected_gfx not a gfx name", {"expected_gfx": "rx7900xtx"},
     ["'expected_gfx'", "'rx7900xtx'", "gfx targets the matrix knows"]),
    ("expected_gfx unknown to the matrix", {"expected_gfx": "gfx9999"},
     ["'expected_gfx'", "'gfx9999' is not one", "gfx1100", "gfx942"]),
    ("mirror URL not http(s)", {"rocm_apt_base_url": "ftp://mirror.example/rocm/apt"},
     ["'rocm_apt_base_url'", "'ftp://mirror.example/rocm/apt'", "http:// or https:// URL"]),
    ("fingerprint not 40 hex", {"rocm_key_fingerprint": "9386B48A1A693C5C"},
     ["'rocm_key_fingerprint'", "'9386B48A1A693C5C'", "40 hexadecimal digits"]),
    ("unknown state", {"rocm_state": "removed"}, ["'rocm_state'", "'removed'", "'absent'"]),
    ("package name with a space", {"rocm_packages": ["rocm hip"]},
     ["'rocm_packages'", "'rocm hip'", "Debian package name"]),
    ("relative venv path", {"pytorch_venv": "opt/venv"},
     ["'pytorch_venv'", "'opt/venv'", "absolute path"]),
    ("a GPU without AMD's 10.1 torch", {"rocm_version": "10.1.0", "expected_gfx": "gfx908"},
     ["'expected_gfx'", "'gfx908'", "gfx908 has none on AMD's install page",
      "pytorch_install: False"]),
    ("release newer than the matrix", {"rocm_version": "10.2.0"},
     ["'rocm_version'", "'10.2.0'", "`rocm-fleet matrix check`"]),
    ("look-alike of a setting", {"expected_gpus": 1},
     ["unknown inventory key 'expected_gpus'", "did you mean 'expected_gpu_count'"]),
    ("a quote in the mirror's host", {"rocm_mirror": "http://mirror'.lab:8080/"},
     ["'rocm_mirror'", "mirror'.lab", "no quote, space"]),
    ("every bad key at once", {"rocm_users": "alice", "rocm_reboot_parallel": 0},
     ["'rocm_users'", "e.g. ['alice']", "'rocm_reboot_parallel'", "whole number >= 1"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, ["6.4.3"])


def write_inventory(lab, path: Path, change: dict) -> Path:
    hosts = runpy.run_path(str(lab.inventory))["lab"]
    hosts = [(name, {**data, **change} if name == "bad1" else data) for name, data in hosts]
    path.write_text(f"lab = {hosts!r}\n")
    return path


def test_bad_input_is_refused_before_any_change(lab, tmp_path):
    before = {name: root_hashes(lab.root(name)) for name in ("bad1", "bad2")}

    def run(number: int, change: dict):
        (tmp_path / str(number)).mkdir()
        inventory = write_inventory(lab, tmp_path / str(number) / "inventory.py", change)
        return deploy(lab, inventory=inventory)

    # Each case a deploy of its own, a few at once (each is refused before any operation).
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, range(len(CASES)), [change for _, change, _ in CASES]))
    failures = []
    for (case, _, needles), result in zip(CASES, results, strict=True):
        missing = [n for n in needles if n not in result.output]
        # pyinfra names the place of the error: the inventory's line that set the key, not
        # rocm-fleet's (engine/origin.py), and the message names the file too.
        missing += [
            f"place: {line}"
            for line in result.output.splitlines()
            if "pyinfra error in" in line and "inventory.py line" not in line
        ] + (
            []
            if "(set in " in result.output and "inventory.py)" in result.output
            else ["(set in ...inventory.py)"]
        )
        if result.returncode == 0 or missing:
            failures.append(f"{case}: rc={result.returncode}, missing {missing}: "
                            f"{result.output[-1500:]}")  # fmt: skip
        print(f"{case}: {next((ln for ln in result.output.splitlines() if 'bad1: ' in ln), '')}")
    assert failures == []
    after = {name: root_hashes(lab.root(name)) for name in ("bad1", "bad2")}
    for name in ("bad1", "bad2"):
        assert differences(before[name], after[name]) == [], name


@pytest.fixture
def bad1_on_debian_11(lab):
    """bad1's /etc/os-release saying Debian 11 for one test, then its own again: the other
    tests (in any order) see the real bad1."""
    os_release = lab.root("bad1") / "etc/os-release"
    link = os.readlink(os_release) if os_release.is_symlink() else None
    real = os_release.read_text()
    os_release.unlink()  # a symlink to ../usr/lib/os-release in Debian
    os_release.write_text(
        real.replace('VERSION_ID="12"', 'VERSION_ID="11"')
        .replace("bookworm", "bullseye")
        .replace('VERSION="12', 'VERSION="11')
    )
    yield
    os_release.unlink()
    if link is None:
        os_release.write_text(real)
    else:
        os_release.symlink_to(link)


def test_unsupported_distro_is_refused_per_host_unchanged(lab, bad1_on_debian_11):
    before = root_hashes(lab.root("bad1"))
    result = deploy(lab, limit="bad1")
    assert result.returncode != 0
    reason = refusal(result, "bad1") or ""
    print(reason)
    assert "debian 11 is not supported" in reason, result.output[-3000:]
    assert "debian 12" in reason and "ubuntu 24.04" in reason, result.output[-3000:]
    assert differences(before, root_hashes(lab.root("bad1"))) == []
