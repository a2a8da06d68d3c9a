"""End to end: a node's life on one lab host.

Install 6.4.3, upgrade to 7.2.1, downgrade to 6.4.3 (sources, pin, packages and the venv's
wheels move together, nothing of the other release is left), uninstall with
``rocm_state: absent`` (the root then holds no file the deploy added), uninstall again (no
change), then a CUDA host migrated with ``rocm_migrate_from_cuda``; after the install,
``pytorch_install: false`` takes the venv it created off.

One deploy per move: that ``--dry`` plans exactly what a run changes is test_fleet's
(test_dry_run_reports_exactly_the_drift), and that a converged node's second run changes
nothing too (test_second_run_changes_nothing); a move's own second run is made only where a
later test does not show it (the companion's run after the downgrade changes nothing else).

In file order each test starts where the one before left the host; run alone (``-k``), its
``life.reach(...)`` first brings the host there, with the deploys the earlier tests make.
"""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import tempfile
from pathlib import Path

import pytest

from e2e import support
from e2e.support import VENV_PYTHON, changed, running_lab, succeeded
from lab import HostSpec
from lab.pytorch_index import write_wheel

pytestmark = pytest.mark.e2e

HOST = "life"
SPEC = HostSpec(
    HOST, suite="bookworm", profile="rx7900xtx",
    data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
          "rocm_users": ["alice"]},
)  # fmt: skip

# What an uninstall may leave changed: the package manager's own state and logs (apt's
# lists and caches, dpkg's database, debconf, logs), the loader cache, and the temp dirs.
ALLOWED_LEFTOVERS = re.compile(
    r"^(var/lib/(dpkg|apt|ucf)|var/cache/(apt|debconf|ldconfig)|var/log|etc/ld\.so\.cache"
    r"|tmp|var/tmp|run)(/|$)"
    # Links to the lab's own CA, which the lab (not the deploy) put in
    # /usr/local/share/ca-certificates: purging ca-certificates leaves local certificates'.
    r"|^etc/ssl(/certs(/rocm-fleet-lab-ca\.pem|/[0-9a-f]{8}\.0)?)?$"
)


@pytest.fixture(scope="module")
def lab():
    yield from running_lab([SPEC], ["6.4.3", "7.2.1"])


def deploy(lab, *data: str, dry: bool = False):
    return support.deploy(lab, limit=HOST, data=data, dry=dry)


def sh(lab, command: str) -> str:
    return support.sh(lab, HOST, command)


def wheels(lab) -> dict[str, str | None]:
    return support.wheels(lab, HOST)


def amd_packages(lab) -> dict[str, str]:
    """Installed packages with an AMD ROCm version -> version."""
    out = sh(lab, "dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Version}\\n'")
    found = {}
    for line in out.splitlines():
        status, name, version = line.split()
        if status.startswith("i") and re.match(r"^(\d+:)?\d+\.\d+\.\d+\.\d{5}-", version):
            found[name] = version
    return found


def paths(root: Path) -> set[str]:
    found = set()
    for directory, dirs, files in os.walk(root):
        rel = os.path.relpath(directory, root)
        if rel == "proc":
            dirs[:] = []
            continue
        for name in dirs + files:
            found.add(os.path.normpath(os.path.join(rel, name)))
    return found


def assert_release(lab, tag: str, apt_path: str, wanted_wheels: dict[str, str]) -> None:
    source = (lab.root(HOST) / "etc/apt/sources.list.d/rocm.list").read_text()
    assert f"/rocm/apt/{apt_path} jammy main" in source, source
    assert (lab.root(HOST) / "etc/apt/preferences.d/rocm-pin-600").exists()
    packages = amd_packages(lab)
    assert "rocm-hip-runtime" in packages and "rocminfo" in packages, packages
    other = {n: v for n, v in packages.items() if f".{tag}-" not in v}
    assert other == {}, f"packages of another release left: {other}"
    opt = sorted(p.name for p in (lab.root(HOST) / "opt").glob("rocm-*.*"))
    assert opt == [f"rocm-{apt_path}"], opt
    assert wheels(lab) == wanted_wheels


#: the deploy (its --data) that takes the host to a stage from wherever it is
STAGES = {"6.4.3": (), "7.2.1": ("rocm_version=7.2.1",), "absent": ("rocm_state=absent",)}


class Life:
    """Where the lab host is in its life, so that each test starts where it needs to: on a
    host already there (the tests in file order) it does nothing; elsewhere a deploy of
    that stage (one converging run, from whatever state) takes it there."""

    def __init__(self, lab):
        self.lab = lab
        #: every path of the host before any deploy: what an uninstall must return it to
        self.fresh = paths(lab.root(HOST))
        self.stage: str | None = "fresh"
        #: what the admin (make_cuda_node) added, which no uninstall removes
        self.admin: set[str] = set()

    def reach(self, stage: str) -> None:
        """Bring the host to ``stage``: "6.4.3" or "7.2.1" (installed and converged),
        "absent" (uninstalled, or never installed), or "cuda" (an NVIDIA node, no ROCm)."""
        if self.stage == "cuda" and stage != "cuda":
            # A plain deploy refuses the NVIDIA node: it leaves by the migration.
            succeeded(deploy(self.lab, "rocm_migrate_from_cuda=true"))
            self.stage = "migrated"
        if self.stage == "migrated":
            # The venv the migration kept is the admin's, not the deploy's: it would outlive
            # pytorch_install: false and an uninstall. The stages start without it.
            sh(self.lab, "rm -rf /opt/rocm-fleet")
            self.stage = None
        if self.stage != stage and not (stage == "absent" and self.stage == "fresh"):
            if stage == "cuda":
                self.reach("absent")
                before = paths(self.lab.root(HOST))
                make_cuda_node(self.lab)
                self.admin |= paths(self.lab.root(HOST)) - before
            else:
                succeeded(deploy(self.lab, *STAGES[stage]))
        self.stage = None  # the test changes the host from here; left() says where it ends

    def left(self, stage: str) -> None:
        """The test ended with the host at ``stage`` (a test that fails leaves it unknown)."""
        self.stage = stage


@pytest.fixture(scope="module")
def life(lab) -> Life:
    return Life(lab)


# The venv's wheels for ROCm 6.4.3: the rocm6.4 index's newest torch and its companions.
WHEELS_6_4_3 = {
    "torch": "2.9.1+rocm6.4",
    "torchvision": "0.24.1+rocm6.4",
    "torchaudio": "2.9.1+rocm6.4",
}


def test_install_6_4_3(lab, life):
    life.reach("absent")
    result = deploy(lab)
    succeeded(result)
    assert_release(lab, "60403", "6.4.3", WHEELS_6_4_3)
    life.left("6.4.3")


VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"
REMOVE_VENV = "PyTorch | Remove the PyTorch venv rocm-fleet created (pytorch_install: false)"


def test_pytorch_install_false_removes_the_venv_it_created(lab, life):
    """pytorch_install: true -> false takes the venv (and /opt/rocm-fleet, made for it) off
    on the same run (and nothing else of the node), and a venv the admin made there
    afterwards stays: the next run changes nothing."""
    life.reach("6.4.3")
    root = lab.root(HOST)
    venv = root / "opt/rocm-fleet/venv"
    assert (venv / "pyvenv.cfg").exists()
    off = "pytorch_install=False"
    run = deploy(lab, off)
    succeeded(run)
    # the venv goes, and the GPU check runs again (what it vouched for included the torch)
    assert set(changed(run)) - {VERIFY} == {REMOVE_VENV}, changed(run)
    assert changed(run)[REMOVE_VENV] == [HOST]
    assert not (root / "opt/rocm-fleet").exists()
    # The ledger forgets what is gone, so a venv made there later is not taken for ours.
    ledger = root / "var/lib/rocm-fleet/created-directories"
    assert ledger.read_text() == ""
    sh(lab, "mkdir -p /opt/rocm-fleet && python3 -m venv /opt/rocm-fleet/venv")
    kept = deploy(lab, off)
    assert kept.returncode == 0, kept.output[-3000:]
    assert changed(kept) == {}
    assert (venv / "pyvenv.cfg").exists()
    sh(lab, "rm -rf /opt/rocm-fleet")  # the admin's: what follows starts without it


def test_upgrade_to_7_2_1_moves_everything_together(lab, life):
    life.reach("6.4.3")
    result = deploy(lab, "rocm_version=7.2.1")
    succeeded(result)
    assert {
        "ROCm apt repository | Point apt at the ROCm release for this distro",
        "ROCm packages | Install the ROCm packages of the release",
        "PyTorch | Install the torch wheels built for the ROCm release",
    } <= set(changed(result)), changed(result)
    # The newest torch on rocm7.2 (2.14.1) comes without torchaudio: 6.4.3's goes.
    assert_release(
        lab, "70201", "7.2.1",
        {"torch": "2.14.1+rocm7.2", "torchvision": "0.29.1+rocm7.2", "torchaudio": None},
    )  # fmt: skip
    assert not (lab.root(HOST) / "opt/rocm-6.4.3").exists()
    assert sh(lab, "readlink -f /opt/rocm").strip() == "/opt/rocm-7.2.1"
    again = deploy(lab, "rocm_version=7.2.1")
    succeeded(again)
    assert changed(again) == {}
    life.left("7.2.1")


def test_downgrade_to_6_4_3_moves_everything_back(lab, life):
    life.reach("7.2.1")
    result = deploy(lab)
    succeeded(result)
    assert_release(lab, "60403", "6.4.3", WHEELS_6_4_3)
    assert not (lab.root(HOST) / "opt/rocm-7.2.1").exists()
    assert sh(lab, "readlink -f /opt/rocm").strip() == "/opt/rocm-6.4.3"
    life.left("6.4.3")


def test_a_companion_of_another_build_is_replaced(lab, life):
    life.reach("6.4.3")
    # Same public version, other build (CUDA's): `torchvision==0.24.1` alone would be
    # satisfied by it, leaving a mix in the venv.
    cu128 = "https://download.pytorch.org/whl/cu128"
    sh(lab, f"{VENV_PYTHON} -m pip install -q --no-deps --no-cache-dir --index-url {cu128} "
            "torchvision==0.24.1+cu128")  # fmt: skip
    assert wheels(lab)["torchvision"] == "0.24.1+cu128"
    result = deploy(lab)
    succeeded(result)
    assert changed(result) == {
        "PyTorch | Install the torch wheels built for the ROCm release": [HOST]
    }
    assert wheels(lab)["torchvision"] == "0.24.1+rocm6.4"
    life.left("6.4.3")


def test_uninstall_removes_what_the_deploy_added(lab, life, tmp_path):
    life.reach("6.4.3")
    result = deploy(lab, "rocm_state=absent")
    succeeded(result)
    root = lab.root(HOST)
    added = sorted(
        p for p in paths(root) - life.fresh - life.admin if not ALLOWED_LEFTOVERS.match(p)
    )
    assert added == [], added
    for gone in ("etc/apt/sources.list.d/rocm.list", "etc/apt/keyrings/rocm.gpg",
                 "etc/apt/preferences.d/rocm-pin-600", "etc/ld.so.conf.d/rocm.conf",
                 "etc/profile.d/rocm.sh", "opt/rocm-fleet", "opt/rocm", "opt/rocm-6.4.3",
                 "var/lib/rocm-fleet"):  # fmt: skip
        assert not (root / gone).exists() and not (root / gone).is_symlink(), gone
    assert amd_packages(lab) == {}
    groups = sh(lab, "id -nG alice").split()
    assert "video" in groups and "render" in groups  # users and groups stay

    again = deploy(lab, "rocm_state=absent")
    succeeded(again)
    assert changed(again) == {}
    # The audit says what the inventory says: the decommissioned host is as it should be
    # (not "failed (preflight did not run)").
    hosts = runpy.run_path(str(lab.inventory))["lab"]
    absent = tmp_path / "absent.py"
    absent.write_text(f"lab = {[(n, {**d, 'rocm_state': 'absent'}) for n, d in hosts]!r}\n")
    report = support.audit(lab, inventory=absent)
    (row,) = report.json["hosts"]
    assert (report.returncode, row["status"], row["drift"]) == (0, "ok", []), report.stdout
    life.left("absent")


NVIDIA_PACKAGES = ["cuda-toolkit-12-8", "libcuda1", "nvidia-driver"]


def make_cuda_node(lab) -> None:
    """What an NVIDIA node looks like to the deploy: NVIDIA's driver and CUDA packages
    (stand-ins built here: name, version and a file, like the real ones to dpkg) and a venv
    with PyPI-style CUDA torch wheels and one of NVIDIA's runtime wheels."""
    root = lab.root(HOST)
    drop = root / "tmp/cuda-node"
    drop.mkdir()
    for name in NVIDIA_PACKAGES:
        with tempfile.TemporaryDirectory(prefix="rflab-nv-") as tmp:  # gone with the block
            tree = Path(tmp)
            (tree / "DEBIAN").mkdir()
            (tree / "DEBIAN/control").write_text(
                f"Package: {name}\nVersion: 550.163.01-1\nArchitecture: amd64\n"
                "Maintainer: rocm-fleet lab <lab@invalid>\nDescription: NVIDIA stand-in\n"
            )
            doc = tree / f"usr/share/doc/{name}"
            doc.mkdir(parents=True)
            (doc / "README.lab").write_text("stand-in for an NVIDIA package\n")
            deb = drop / f"{name}.deb"
            build = ["dpkg-deb", "--root-owner-group", "--build", str(tree), str(deb)]
            subprocess.run(build, check=True, capture_output=True)
    write_wheel(drop, "nvidia_cublas_cu12", "12.8.4.1", {"nvidia/cublas/__init__.py": ""})
    cu128 = "https://download.pytorch.org/whl/cu128"
    sh(lab, "DEBIAN_FRONTEND=noninteractive apt-get -qq update && "
            "DEBIAN_FRONTEND=noninteractive apt-get -qq -y install python3-venv ca-certificates "
            "&& dpkg -i /tmp/cuda-node/*.deb && python3 -m venv /opt/rocm-fleet/venv && "
            f"{VENV_PYTHON} -m pip install -q --no-cache-dir --index-url {cu128} "
            "torch==2.9.1+cu128 torchvision==0.24.1+cu128 torchaudio==2.9.1+cu128 && "
            f"{VENV_PYTHON} -m pip install -q --no-deps /tmp/cuda-node/*.whl && "
            "rm -r /tmp/cuda-node")  # fmt: skip


def test_a_cuda_node_is_refused_without_rocm_migrate_from_cuda(lab, life):
    life.reach("cuda")
    result = deploy(lab)
    assert result.returncode != 0
    output = result.output
    assert "NVIDIA driver/CUDA stack installed (packages: " + ", ".join(NVIDIA_PACKAGES) in output
    assert "set rocm_migrate_from_cuda: true" in output, output[-3000:]
    assert "holds a CUDA torch (2.9.1+cu128)" in output, output[-3000:]
    assert not (lab.root(HOST) / "etc/apt/sources.list.d/rocm.list").exists()
    life.left("cuda")  # refused: nothing changed


def test_rocm_migrate_from_cuda_replaces_nvidia_with_rocm(lab, life):
    life.reach("cuda")
    result = deploy(lab, "rocm_migrate_from_cuda=true")
    succeeded(result)
    installed = sh(lab, "dpkg-query -W -f='${db:Status-Abbrev} ${Package}\\n'")
    assert not [ln for ln in installed.splitlines() if ln.startswith("i") and
                ln.split()[1] in NVIDIA_PACKAGES]  # fmt: skip
    assert wheels(lab) == WHEELS_6_4_3
    left = sh(lab, f"{VENV_PYTHON} -m pip list --format=freeze").lower().replace("_", "-")
    assert "nvidia-cublas" not in left, left
    again = deploy(lab, "rocm_migrate_from_cuda=true")
    succeeded(again)
    assert changed(again) == {}
    life.left("migrated")  # 6.4.3 in the venv the admin made
