"""End to end: the ROCm Core SDK on lab hosts, moves between the two streams, and
``rocm-fleet matrix check`` against the doubles, in file order.

* ``core`` (Debian 13, RX 7900 XTX) takes ROCm Core SDK 7.14.1 from the repo.amd.com double
  with torch 2.14.1 from the rocm7.14 index (its ROCm runtime from pip), ``stable``
  (Debian 13, PRO W7900) takes 10.0.0 from the stable.repo.amd.com double (deb822 source, the
  binary-plus-armored key) without torch: each converges in one run and verifies its GPUs;
  after drift on ``core`` a run of both changes exactly that drift (so nothing on ``stable``).
* ``mover`` (Debian 12, 8 x MI300X) goes 7.2.1 -> 7.14.1 -> 7.2.1: each move is announced
  (the plan's warning), carried out in one run and leaves nothing of the other stream behind;
  after the round trip a run changes nothing.
* ``matrix check`` passes against the doubles (which, built with ``catalog=True``, publish
  every release of the matrix) and names the drift the lab plants.

One deploy per step: that ``--dry`` plans exactly what a run changes is test_fleet's
(test_dry_run_reports_exactly_the_drift), and the warning that announces a move is the
plan's, printed by a run as by ``--dry``.

The run later tests start from (the first run of ``core`` and ``stable``) is a module
fixture: it runs once, where the first test needs it; a test run alone (``-k``) gets it all
the same. ``mover``'s story is one test, so it passes in any order.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from e2e import support
from e2e.support import changed, running_lab, sh, succeeded, wheels
from lab import HostSpec
from lab.upstreams import DRIFT_RELEASE, DRIFT_WHEEL
from rocm_fleet.model import paths, streams

pytestmark = pytest.mark.e2e

HOSTS = [
    HostSpec("core", suite="trixie", profile="rx7900xtx",
             data={"rocm_version": "7.14.1", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
                   "rocm_users": ["alice"]}),
    HostSpec("stable", suite="trixie", profile="w7900",
             data={"rocm_version": "10.0.0", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
                   "pytorch_install": False}),
    HostSpec("mover", suite="bookworm", profile="mi300x-8",
             data={"rocm_version": "7.2.1", "expected_gfx": "gfx942", "expected_gpu_count": 8,
                   "rocm_users": ["alice"]}),
]  # fmt: skip
RELEASES = ["7.2.1", "7.14.1", "10.0.0"]

# What a move may leave changed: the package manager's own state and logs, the loader
# cache, temp dirs, rocm-fleet's apt-list stamps (touched by the refreshes) and Python's
# byte-code caches in the venv.
ALLOWED = re.compile(
    r"^(var/lib/(dpkg|apt|ucf)|var/cache/(apt|debconf|ldconfig)|var/log|etc/ld\.so\.cache"
    r"|tmp|var/tmp|run|var/lib/rocm-fleet)(/|$)|/__pycache__(/|$)"
)
CLASSIC_FILES = (paths.ROCM_KEYRING, paths.ROCM_PIN)
CORE_FILES = (paths.AMDROCM_KEYRING, paths.AMDROCM_PIN, paths.AMDROCM_SOURCE)


@pytest.fixture(scope="module")
def lab():
    yield from running_lab(HOSTS, RELEASES, catalog=True)


def deploy(lab, host: str, *data: str, dry: bool = False):
    return support.deploy(lab, limit=host, data=data, dry=dry)


def installed(lab, host: str) -> dict[str, str]:
    out = sh(lab, host, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    return {w[1]: w[2] for w in (line.split() for line in out.splitlines()) if w[0][0] == "i"}


def of_stream(packages: dict[str, str], stream: streams.Stream) -> dict[str, str]:
    return {name: version for name, version in packages.items() if stream.owns(name, version)}


def tree(root: Path) -> set[str]:
    found = set()
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        if rel in ("proc", "sys", "dev/pts"):
            dirs[:] = []
            continue
        found |= {os.path.normpath(os.path.join(rel, name)) for name in dirs + files}
    return found


def exists(lab, host: str, path: str) -> bool:
    target = lab.root(host) / path.lstrip("/")
    return target.exists() or target.is_symlink()


# --- a Core SDK release on Debian 13 ----------------------------------------------------------


@pytest.fixture(scope="module")
def core_and_stable(lab):
    """The first run of ``core`` and ``stable`` (from bare hosts), which succeeded."""
    result = deploy(lab, "core,stable")
    succeeded(result)
    return result


def test_a_core_sdk_release_converges_in_one_run_and_verifies_its_gpus(lab, core_and_stable):
    result = core_and_stable
    # The GPU check passed with the release's own rocminfo and recorded what it vouched for.
    assert changed(result)["Verify | Check rocminfo and torch see the expected GPUs"] == [
        "core", "stable"
    ]  # fmt: skip
    record = (lab.root("core") / paths.VERIFIED.lstrip("/")).read_text()
    assert "rocm 7.14.1 (core-sdk, /opt/rocm/core-7.14/bin/rocminfo)\n" in record
    assert "rocm[device-all,libraries]==7.14.*" in record

    # 7.14.1: AMD's one-line source on repo.amd.com, the per-target package (expected_gfx
    # names the host's only GPU), under /opt/rocm/core-7.14 with AMD's links.
    source = (lab.root("core") / paths.ROCM_SOURCE.lstrip("/")).read_text()
    assert source == (
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/amdrocm.gpg] "
        "https://repo.amd.com/rocm/packages-multi-arch/debian13 stable main\n"
    )
    packages = of_stream(installed(lab, "core"), streams.CORE_SDK)
    assert packages["amdrocm7.14-gfx1100"] == "7.14.1-1", packages
    assert "amdrocm7.14" not in packages and "amdrocm7.14-gfx942" not in packages
    assert not of_stream(installed(lab, "core"), streams.CLASSIC)
    assert sh(lab, "core", "readlink -f /opt/rocm/core /opt/rocm/bin").split() == [
        "/opt/rocm/core-7.14", "/opt/rocm/core-7.14/bin"
    ]  # fmt: skip
    assert not (lab.root("core") / "opt/rocm").is_symlink()  # a directory of links
    assert sh(lab, "core", "cat /opt/rocm/core/.info/version").strip() == "7.14.1-1"
    agents = sh(lab, "core", "/opt/rocm/core-7.14/bin/rocminfo")
    assert re.findall(r"^\s+Name:\s+(gfx\w+)\s*$", agents, re.M) == ["gfx1100"]
    # The pin applies: AMD's Release declares the Origin it names.
    policy = sh(lab, "core", "apt-cache policy amdrocm7.14-gfx1100")
    assert re.search(r"^\s+600 https://repo\.amd\.com/rocm/packages-multi-arch/debian13 ", policy,
                     re.M), policy  # fmt: skip
    # torch 2.14.1+rocm7.14 and the ROCm runtime it requires from pip (same index).
    venv = wheels(lab, "core")
    assert venv == {"torch": "2.14.1+rocm7.14", "torchvision": "0.29.1+rocm7.14",
                    "torchaudio": None}  # fmt: skip
    freeze = sh(lab, "core", f"{support.VENV_PYTHON} -m pip list --format=freeze").lower()
    for dist in (
        "rocm==7.14.0.post1",
        "rocm-sdk-core==7.14.0",
        "rocm-sdk-libraries==7.14.0",
        "rocm-sdk-device-gfx1100==7.14.0",
        "rocm-sdk-device-gfx942==7.14.0",
    ):
        assert dist in freeze.replace("_", "-"), freeze  # fmt: skip

    # 10.0.0: the deb822 file on stable.repo.amd.com, its key read from AMD's odd form.
    stable = lab.root("stable")
    assert (stable / paths.AMDROCM_SOURCE.lstrip("/")).read_text() == (
        "X-Repo-Id: amdrocm-stable\nTypes: deb\n"
        "URIs: https://stable.repo.amd.com/rocm/core/packages/debian13/\nSuites: stable\n"
        "Components: main\nArchitectures: amd64\nSigned-By: /etc/apt/keyrings/amdrocm.gpg\n"
        "Enabled: yes\n"
    )
    assert not (stable / paths.ROCM_SOURCE.lstrip("/")).exists()
    keys = sh(lab, "stable", "gpg --batch --with-colons --show-keys /etc/apt/keyrings/amdrocm.gpg")
    assert [line.split(":")[9] for line in keys.splitlines() if line.startswith("fpr:")][:1] == [
        lab.lab_key_fingerprint
    ]
    assert "amdrocm10.0-gfx1100" in installed(lab, "stable")
    assert not exists(lab, "stable", support.VENV_PYTHON)


def test_the_node_checks_pass_on_core_sdk_nodes(lab, core_and_stable):
    pytest_cmd = [str(Path(lab.env()["PATH"].split(":")[0]) / "python"), "-m", "rocm_fleet.cli",
                  "check", str(lab.inventory), "--limit", "core,stable"]  # fmt: skip
    result = lab.run(pytest_cmd, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_a_run_after_drift_repairs_exactly_that_drift(lab, core_and_stable):
    """The second run of both hosts, after drift on ``core``: it changes the drift and
    nothing else (``stable`` not at all)."""
    pin = paths.AMDROCM_PIN
    sh(lab, "core", f"rm {pin} && {support.VENV_PYTHON} -m pip install -q --no-deps "
                    "--index-url https://download.pytorch.org/whl/rocm7.14 "
                    "torchvision==0.29.0+rocm7.14")  # fmt: skip
    repaired = deploy(lab, "core,stable")
    succeeded(repaired)
    assert changed(repaired) == {
        "ROCm apt repository | Pin AMD's repository above the distribution's own ROCm packages":
            ["core"],
        "PyTorch | Install the torch wheels built for the ROCm release": ["core"],
    }, changed(repaired)  # fmt: skip
    assert exists(lab, "core", pin) and wheels(lab, "core")["torchvision"] == "0.29.1+rocm7.14"


# --- moving between the streams ---------------------------------------------------------------


def test_the_classic_host_moves_to_the_core_sdk_and_back_leaving_nothing_of_the_other(lab):
    """One story on ``mover`` (each step starts where the one before left it): it converges
    on 7.2.1, moves to 7.14.1 and back, each move announced and made in one run."""
    first = deploy(lab, "mover")
    succeeded(first)
    assert of_stream(installed(lab, "mover"), streams.CLASSIC)
    assert sh(lab, "mover", "readlink -f /opt/rocm").strip().endswith("/opt/rocm-7.2.1")
    classic_tree = tree(lab.root("mover"))

    # classic -> Core SDK: announced, and nothing of the classic stream is left
    result = deploy(lab, "mover", "rocm_version=7.14.1")
    succeeded(result)
    move = (
        r"\[mover\]\s+warning: moving from ROCm \(repo\.radeon\.com\) \(comgr "
        r"3\.0\.0\.70201-81~22\.04, .* and \d+ more\) to ROCm Core SDK 7\.14\.1"
    )
    assert re.search(move, result.output), result.output[-3000:]
    made = changed(result)
    for op in ("ROCm apt repository | Install AMD's signing key (fingerprint checked)",
               "ROCm apt repository | Point apt at the ROCm release for this distro",
               "ROCm apt repository | Pin AMD's repository above the distribution's own ROCm "
               "packages",
               f"ROCm apt repository | Remove the other ROCm stream's pin {paths.ROCM_PIN}",
               f"ROCm apt repository | Remove the other ROCm stream's keyring {paths.ROCM_KEYRING}",
               "ROCm packages | Install the ROCm packages of the release",
               "PyTorch | Install the torch wheels built for the ROCm release"):  # fmt: skip
        assert made.get(op) == ["mover"], (op, made)
    packages = installed(lab, "mover")
    assert of_stream(packages, streams.CLASSIC) == {}
    assert of_stream(packages, streams.CORE_SDK)["amdrocm7.14-gfx942"] == "7.14.1-1"
    for path in CLASSIC_FILES:
        assert not exists(lab, "mover", path), path
    assert (
        "repo.radeon.com"
        not in (lab.root("mover") / "etc/apt/sources.list.d/rocm.list").read_text()
    )
    assert not exists(lab, "mover", "/opt/rocm-7.2.1")
    assert not (lab.root("mover") / "opt/rocm").is_symlink()
    assert wheels(lab, "mover") == {"torch": "2.14.1+rocm7.14", "torchvision": "0.29.1+rocm7.14",
                                    "torchaudio": None}  # fmt: skip
    agents = sh(lab, "mover", "/opt/rocm/core-7.14/bin/rocminfo")
    assert re.findall(r"^\s+Name:\s+(gfx\w+)\s*$", agents, re.M) == ["gfx942"] * 8

    # Core SDK -> classic: announced, and nothing of the Core SDK is left
    result = deploy(lab, "mover")
    succeeded(result)
    assert re.search(r"\[mover\]\s+warning: moving from ROCm Core SDK \(amdrocm", result.output), (
        result.output[-3000:]
    )
    assert "to ROCm (repo.radeon.com) 7.2.1" in result.output
    packages = installed(lab, "mover")
    assert of_stream(packages, streams.CORE_SDK) == {}
    assert of_stream(packages, streams.CLASSIC)["rocm-hip-runtime"].startswith("7.2.1.70201-")
    for path in CORE_FILES:
        assert not exists(lab, "mover", path), path
    assert not exists(lab, "mover", "/opt/rocm/core-7.14")
    assert sh(lab, "mover", "readlink -f /opt/rocm").strip().endswith("/opt/rocm-7.2.1")
    freeze = sh(lab, "mover", f"{support.VENV_PYTHON} -m pip list --format=freeze").lower()
    assert not re.search(r"^rocm([-_]sdk[-_].*)?==", freeze, re.M), freeze
    assert wheels(lab, "mover") == {"torch": "2.14.1+rocm7.2", "torchvision": "0.29.1+rocm7.2",
                                    "torchaudio": None}  # fmt: skip
    # Every path is as it was before the round trip, but for the package manager's own state.
    after = tree(lab.root("mover"))
    moved = sorted(p for p in after ^ classic_tree if not ALLOWED.search(p))
    assert moved == [], moved
    assert changed(deploy(lab, "mover")) == {}


# --- matrix check against the doubles ---------------------------------------------------------


def matrix_check(lab, *args: str):
    """``rocm-fleet matrix check --json`` in the client netns, which resolves the upstreams'
    names to the doubles and trusts the lab's CA; the doubles are signed with the lab's key."""
    cli = str(Path(lab.env()["PATH"].split(":")[0]) / "rocm-fleet")
    result = lab.run(
        [cli, "matrix", "check", "--json", "--key-fingerprint", lab.lab_key_fingerprint, *args],
        env={"REQUESTS_CA_BUNDLE": str(lab.ca_cert)},
        timeout=600,
    )
    result.json = json.loads(result.stdout) if result.stdout.strip().startswith("{") else None
    return result


def test_matrix_check_passes_on_the_doubles(lab):
    result = matrix_check(lab)
    assert result.json is not None, result.stderr[-3000:]
    bad = [c for c in result.json["checks"] if c["status"] != "ok"]
    assert (result.returncode, bad, result.json["missing_releases"]) == (0, [], [])
    assert len(result.json["checks"]) > 150  # every row: suites, drivers, keys, wheels
    assert "matrix check [" in result.stderr  # the progress display


def test_matrix_check_names_the_drift_the_lab_plants(lab):
    lab.plant_matrix_drift()
    try:
        result = matrix_check(lab)
    finally:
        lab.plant_matrix_drift(False)
    assert result.returncode == 1, result.stdout[-3000:]
    index, project, version = DRIFT_WHEEL
    (wrong,) = [c for c in result.json["checks"] if c["status"] != "ok"]
    assert (wrong["row"], wrong["what"]) == (index, f"{project} wheels")
    assert wrong["detail"] == f"no {project} wheel {version}"
    (missing,) = result.json["missing_releases"]
    assert missing["release"] == DRIFT_RELEASE.version
    assert "stable.repo.amd.com" in missing["where"] and "amdrocm10.2 10.2.0-1" in missing["where"]
    # and taken back, the doubles agree with the matrix again
    assert matrix_check(lab, "--release", "7.14.1").returncode == 0
