"""End to end: `rocm-fleet audit` sees every drift `--dry` sees, names it the same way, and a
run repairs it; a host preflight would refuse is flagged with the same reason; table, JSON
and exit status; and the audit writes nothing on any host.

Drifts on a converged host ("drifty"), for every resource the deploy manages on it, a few
at a time whose repairs are apart (``GROUPS``): `--dry` and the audit must name exactly the
operations that repair them, and the next run must repair exactly that, the audit then
finding nothing left to change. The kernel and driver resources (backports source and pin,
AMD's driver source, amdgpu-dkms) are checked the same way in test_kernel_driver.py, on the
lab that has them.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from e2e.support import (
    as_drift,
    audit,
    changed,
    deploy,
    differences,
    dry_names,
    refusal,
    root_hashes,
    running_lab,
    sh,
    succeeded,
)
from lab import HostSpec

pytestmark = pytest.mark.e2e

DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
DEPLOYED = ["clean", "drifty", "refused"]
# The deployed hosts start converged (tests/lab/converged.py, shared with test_check.py's
# "good"): the first deploy of a fresh node is test_lifecycle.py's.
HOSTS = [HostSpec(name, data=DATA, converged=True) for name in DEPLOYED] + [
    HostSpec("gone", data=DATA, sshd=False)
]
VENV_PIP = "/opt/rocm-fleet/venv/bin/python -m pip install -q --no-deps --no-cache-dir"
REPO = "ROCm apt repository"
PACKAGES = "ROCm packages"

# (what drifted, the command that makes it drift, the operations that repair it)
DRIFTS = [
    ("AMD's keyring deleted", "rm /etc/apt/keyrings/rocm.gpg",
     [f"{REPO} | Install AMD's signing key (fingerprint checked)"]),
    # Seconds after the last run: the edited source is newer than apt's lists.
    ("the source pointed at another release, packages unchanged",
     "sed -i 's|/rocm/apt/6.4.3 |/rocm/apt/7.2.1 |' /etc/apt/sources.list.d/rocm.list",
     [f"{REPO} | Point apt at the ROCm release for this distro",
      f"{REPO} | Refresh apt lists after a source or key change"]),
    ("AMD's pin removed", "rm /etc/apt/preferences.d/rocm-pin-600",
     [f"{REPO} | Pin AMD's repository above the distribution's own ROCm packages"]),
    ("apt's lists older than the source", "touch -d 2000-01-01 /var/lib/rocm-fleet/apt-lists.stamp",
     [f"{REPO} | Refresh apt lists after a source or key change"]),
    ("a prerequisite purged", "apt-get purge -y -q gnupg >/dev/null",
     [f"{REPO} | Install the tools that fetch and check AMD's key"]),
    ("the ROCm meta package purged", "apt-get purge -y -q rocm-hip-runtime >/dev/null",
     [f"{PACKAGES} | Install the ROCm packages of the release"]),
    ("the loader path edited", "echo /usr/local/lib >> /etc/ld.so.conf.d/rocm.conf",
     [f"{PACKAGES} | Put /opt/rocm/lib on the dynamic loader path"]),
    ("the PATH snippet removed", "rm /etc/profile.d/rocm.sh",
     [f"{PACKAGES} | Put /opt/rocm/bin on login shells' PATH"]),
    ("a GPU user removed from video", "gpasswd -d alice video >/dev/null",
     ["GPU groups | Give the GPU users video and render"]),
    ("python3-venv purged", "apt-get purge -y -q python3-venv >/dev/null",
     ["PyTorch | Install python3-venv"]),
    ("torchvision replaced by another build",
     f"{VENV_PIP} --index-url https://download.pytorch.org/whl/cu128 torchvision==0.24.1+cu128",
     ["PyTorch | Install the torch wheels built for the ROCm release"]),
    ("the venv removed", "rm -rf /opt/rocm-fleet/venv",
     ["PyTorch | Create the PyTorch venv",
      "PyTorch | Install the torch wheels built for the ROCm release"]),
]  # fmt: skip


@pytest.fixture(scope="module")
def fleet():
    yield from running_lab(HOSTS, ["6.4.3", "7.2.1"])


def audit_drift(lab, host: str) -> tuple[dict, list[str]]:
    """The audit's row for one host and its drift as operation names ("Concern | op")."""
    report = audit(lab, "--limit", host)
    assert report.json is not None, report.stdout + report.stderr[-3000:]
    (row,) = report.json["hosts"]
    return row, dry_names(row)


def test_a_converged_fleet_has_no_drift(fleet):
    # clean and drifty: every test leaves them converged ("refused" is not, once ``refused``
    # has run, in any order of the tests)
    hosts = ",".join(["clean", "drifty"])
    report = audit(fleet, "--limit", hosts)
    assert report.returncode == 0, report.stdout + report.stderr[-2000:]
    assert [row["status"] for row in report.json["hosts"]] == ["ok"] * 2
    table = fleet.run(
        [str(Path(fleet.env()["PATH"].split(":")[0]) / "rocm-fleet"), "audit",
         str(fleet.inventory), "--limit", hosts]
    )  # fmt: skip
    assert "2 hosts: 2 as the inventory says, 0 drifted" in table.stdout, table.stdout
    assert "!" not in table.stdout


# The drifts in groups, each group at once: within one, no two drifts share a repairing
# operation or touch what another's repair needs (the source and the lists' age both refresh
# the lists; the venv's removal, python3-venv and torchvision all end in the venv), so the
# union of their repairs is exactly what --dry and the audit must name.
GROUPS = [
    ["AMD's keyring deleted", "AMD's pin removed", "the ROCm meta package purged",
     "the loader path edited", "a GPU user removed from video",
     "torchvision replaced by another build"],
    ["the source pointed at another release, packages unchanged", "a prerequisite purged",
     "the PATH snippet removed", "the venv removed"],
    ["apt's lists older than the source", "python3-venv purged"],
]  # fmt: skip


@pytest.mark.parametrize("group", GROUPS, ids=["+".join(g) for g in GROUPS])
def test_every_drift_is_named_alike_by_dry_and_audit_and_repaired(fleet, group):
    drifts = {what: (command, repairs) for what, command, repairs in DRIFTS}
    repairs = [op for what in group for op in drifts[what][1]]
    assert len(repairs) == len(set(repairs)), repairs  # the group's repairs are apart
    for what in group:
        sh(fleet, "drifty", drifts[what][0])
    dry = deploy(fleet, limit="drifty", dry=True)
    assert dry.returncode == 0, dry.output[-3000:]
    assert sorted(changed(dry)) == sorted(repairs), (group, changed(dry))
    row, drift = audit_drift(fleet, "drifty")
    assert row["status"] == "drift", row
    assert sorted(drift) == sorted(repairs), (group, row)
    fixed = deploy(fleet, limit="drifty")
    succeeded(fixed)
    assert set(repairs) <= set(changed(fixed)), (group, changed(fixed))
    # repaired: the audit (which sees what --dry sees) finds nothing left to change
    assert audit_drift(fleet, "drifty")[0]["status"] == "ok"


def test_every_drift_is_in_one_group():
    whats = [what for group in GROUPS for what in group]
    assert sorted(whats) == sorted(what for what, _, _ in DRIFTS)


def test_dry_diff_and_the_audits_json_show_the_package_and_file_diffs(fleet):
    """``--dry --diff`` on a drifted host: the loader path file's unified diff and the package
    to install at the version the lab's AMD repository double serves; the audit's JSON the
    same; the run repairs both."""
    sh(fleet, "drifty", "echo /usr/local/lib >> /etc/ld.so.conf.d/rocm.conf && "
       "apt-get purge -y -q rocm-hip-runtime >/dev/null")  # fmt: skip
    dry = deploy(fleet, "--diff", limit="drifty", dry=True)
    assert dry.returncode == 0, dry.output[-3000:]
    output = re.sub(r"\x1b\[[0-9;]*m", "", dry.output)
    diff = ["--- /etc/ld.so.conf.d/rocm.conf", "+++ /etc/ld.so.conf.d/rocm.conf",
            "@@ -1,3 +1,2 @@", " /opt/rocm/lib", " /opt/rocm/lib64", "-/usr/local/lib"]  # fmt: skip
    shown = r"\[drifty\]\s+Will modify /etc/ld[.]so[.]conf[.]d/rocm[.]conf\n" + "".join(
        rf" +{re.escape(line)}\n" for line in diff
    )
    assert re.search(shown, output), output[-3000:]
    installed = re.search(
        r"\[drifty\]\s+Will install rocm-hip-runtime (6[.]4[.]3[.]60403-\S+)\n", output
    )
    assert installed, output[-3000:]
    row, _ = audit_drift(fleet, "drifty")
    assert {"action": "install", "name": "rocm-hip-runtime", "old": None,
            "new": installed[1]} in row["changes"]["packages"], row["changes"]  # fmt: skip
    (file,) = [f for f in row["changes"]["files"] if f["path"] == "/etc/ld.so.conf.d/rocm.conf"]
    assert file == {"action": "modify", "path": "/etc/ld.so.conf.d/rocm.conf", "diff": diff}
    succeeded(deploy(fleet, limit="drifty"))
    assert audit_drift(fleet, "drifty")[0]["changes"] == {"packages": [], "files": []}


def distro_rocm_smi() -> bytes:
    """A stand-in for Debian's own rocm-smi (Debian's version form, /usr/bin/rocm-smi), as
    an admin would install it from Debian after the deploy."""
    with tempfile.TemporaryDirectory(prefix="rflab-rocmsmi-") as tmp:
        tree = Path(tmp) / "rocm-smi"
        (tree / "DEBIAN").mkdir(parents=True)
        (tree / "DEBIAN/control").write_text(
            "Package: rocm-smi\nVersion: 6.1.2-1\nArchitecture: all\n"
            "Maintainer: rocm-fleet lab <lab@invalid>\nDescription: Debian's rocm-smi stand-in\n"
        )
        (tree / "usr/bin").mkdir(parents=True)
        (tree / "usr/bin/rocm-smi").write_text("#!/bin/sh\necho Debian rocm-smi\n")
        (tree / "usr/bin/rocm-smi").chmod(0o755)
        subprocess.run(["dpkg-deb", "--root-owner-group", "--build", str(tree)],
                       check=True, capture_output=True)  # fmt: skip
        return (Path(tmp) / "rocm-smi.deb").read_bytes()


@pytest.fixture(scope="module")
def refused(fleet):
    """The host "refused" after the deploy, with Debian's own rocm-smi installed over it
    (preflight refuses such a host)."""
    (fleet.root("refused") / "tmp/rocm-smi.deb").write_bytes(distro_rocm_smi())
    sh(fleet, "refused", "dpkg -i /tmp/rocm-smi.deb >/dev/null && rm /tmp/rocm-smi.deb")
    return "refused"


def test_a_host_preflight_would_refuse_is_flagged_with_the_same_reason(fleet, refused):
    dry = deploy(fleet, limit="refused", dry=True)
    reason = refusal(dry, "refused")
    assert dry.returncode == 1 and reason and "rocm-smi" in reason, dry.output[-3000:]
    row, _ = audit_drift(fleet, "refused")
    assert row["status"] == "refused" and row["error"] == reason, row
    # -q: the report says why, and stderr nothing (not the refusal planning logs)
    cli = str(Path(fleet.env()["PATH"].split(":")[0]) / "rocm-fleet")
    quiet = fleet.run([cli, "audit", str(fleet.inventory), "--limit", "refused", "-q"])
    assert quiet.returncode == 1 and quiet.stderr == "", quiet.stderr
    assert "  ! refused: " in quiet.stdout and "rocm-smi" in quiet.stdout, quiet.stdout


@pytest.fixture
def pin_removed(fleet):
    """drifty without AMD's pin and with a reboot pending, both put back after the test (the
    other tests start from a converged drifty)."""
    saved = "/root/rocm-pin-600.saved"
    sh(fleet, "drifty", f"cp -a /etc/apt/preferences.d/rocm-pin-600 {saved} && "
       "rm /etc/apt/preferences.d/rocm-pin-600 && touch /run/reboot-required")  # fmt: skip
    yield
    sh(fleet, "drifty", f"mv {saved} /etc/apt/preferences.d/rocm-pin-600 && "
       "rm -f /run/reboot-required")  # fmt: skip


def test_table_json_exit_status_unreachable_and_read_only(fleet, refused, pin_removed):
    before = {name: root_hashes(fleet.root(name)) for name in DEPLOYED}
    cli = str(Path(fleet.env()["PATH"].split(":")[0]) / "rocm-fleet")
    table = fleet.run([cli, "audit", str(fleet.inventory), "--wide"], timeout=300)
    report = audit(fleet)
    after = {name: root_hashes(fleet.root(name)) for name in DEPLOYED}
    for name in DEPLOYED:
        assert differences(before[name], after[name]) == [], name
    print(table.stdout)

    # drift and a refusal are findings, which outrank the unreachable host (cli.exits)
    assert table.returncode == 1, table.stdout + table.stderr[-2000:]
    lines = {line.split()[0]: line for line in table.stdout.splitlines()[1:-1]}
    assert "!" not in lines["clean"]
    assert "! Pin AMD's repository above" in lines["drifty"] and "! pending" in lines["drifty"]
    assert "! REFUSED: " in lines["refused"] and "rocm-smi" in lines["refused"]
    assert "! UNREACHABLE" in lines["gone"]
    summary = table.stdout.splitlines()[-1]
    assert (
        summary
        == "4 hosts: 1 as the inventory says, 1 drifted, 1 refused, 1 unreachable/failed/invalid"
    )

    assert report.returncode == 1 and report.json["exit_status"] == 1
    rows = {row["host"]: row for row in report.json["hosts"]}
    assert {name: row["status"] for name, row in rows.items()} == {
        "clean": "ok", "drifty": "drift", "refused": "refused", "gone": "unreachable",
    }  # fmt: skip
    assert rows["drifty"]["drift"] == [
        "reboot",
        as_drift(f"{REPO} | Pin AMD's repository above the distribution's own ROCm packages"),
    ]
    cells = rows["clean"]["cells"]
    assert cells["torch"]["torch"] == "2.9.1+rocm6.4" and cells["torch"]["hip"]
    assert cells["gpus"]["found"] == ["gfx1100"] and cells["driver"]["text"].startswith("amdgpu")
    assert rows["clean"]["concerns"]["rocm_apt_repository"] == {
        "text": "ok", "drift": False, "name": REPO, "operations": []
    }  # fmt: skip

    only = audit(fleet, "--limit", "drifty", "--limit", "clean")
    assert only.returncode == 1
