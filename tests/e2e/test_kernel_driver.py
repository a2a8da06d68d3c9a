"""End to end: kernel, driver and Secure Boot on a lab fleet (no reboots allowed here).

One lab, one host per state: an RDNA4 card on Debian 12's stock 6.1 kernel (gets the real
bookworm-backports 6.12 kernel), and amdgpu-dkms hosts whose firmware is in each Secure Boot
state (on with no key / key enrolled / key already queued, off, legacy BIOS, EFI without a
SecureBoot variable). What changes hosts the tests share is a chain of module fixtures (the
first run, the drift, the run with reboots allowed, the run after it), each checked as it
left the hosts: the check's failure is kept and raised by its test, so the tests pass alone
and in any order. The tests at the end change one host each, a different one.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from e2e import support
from e2e.support import (
    OP_PREFIX,
    as_drift,
    audit,
    changed,
    failed_hosts,
    running_lab,
    succeeded,
)
from lab import HostSpec, Lab
from lab.machine import DKMS_CERT, EFI_DIR, Machine, check_crypt, kernel_files, mok_state
from rocm_fleet.operations.secureboot import PENDING

pytestmark = pytest.mark.e2e

PASSWORD = "MOK-lab-s3cret-7f2c19"  # the secret the scan must never find
ENV = "ROCM_FLEET_MOK_PASSWORD"

BASE = {"rocm_version": "6.4.3", "pytorch_install": False, "expected_gpu_count": 1}
DKMS = {**BASE, "expected_gfx": "gfx1100", "rocm_driver": "dkms"}
# Enrolled, Secure Boot off and "no SecureBoot variable" are decided from the same facts and
# are covered at plan level (tests/unit/test_kernel_driver.py); each dkms host here costs
# real kernel headers (gcc and all), so the lab keeps the states that do something different.
HOSTS = [
    HostSpec("rdna4", profile="rx9070xt", data={**BASE, "expected_gfx": "gfx1201"}),
    HostSpec("sbnew", data=DKMS, machine=Machine(secure_boot=True)),
    HostSpec("sbpending", data=DKMS, machine=Machine(secure_boot=True, mok="pending")),
    HostSpec("bios", data=DKMS, machine=Machine(firmware="bios")),
]
NAMES = [h.name for h in HOSTS]
#: every pyinfra stdout/stderr of the module's lab (cleared when it comes up), for the
#: secret scan
OUTPUTS: list[str] = []


@pytest.fixture(scope="module")
def lab():
    OUTPUTS.clear()
    yield from running_lab(HOSTS, ["6.4.3"])


def deploy(lab: Lab, *args: str, limit=NAMES, inventory: Path | None = None, dry=False):
    """pyinfra --json -vv with the MOK password in its environment only (never in an argv)."""
    result = support.deploy(
        lab, "-vv", *args, limit=limit, inventory=inventory, dry=dry, env={ENV: PASSWORD}
    )
    OUTPUTS.append(result.output)
    print(f"pyinfra {' '.join(args) or 'run'}: {result.seconds:.1f}s")
    return result


def checked(check, *args) -> Exception | None:
    """Run ``check`` now, while the hosts are as a step left them: the failure it raised
    (for the step's test to raise), or None."""
    try:
        check(*args)
    except Exception as error:  # raised again by the step's test
        return error
    return None


def replay(failure: Exception | None) -> None:
    """A step's test: the failure its checks kept, raised (nothing when they passed)."""
    if failure:
        raise failure


@pytest.fixture(scope="module")
def first_run(lab):
    """The first run on the bare hosts (no reboots allowed), which succeeded: every host
    then needs a reboot. Its checks' failure (made before any other step), or None."""
    result = deploy(lab)
    succeeded(result)
    return checked(check_first_run, lab, result)


def test_first_run_installs_kernel_driver_and_queues_the_key(first_run):
    replay(first_run)


def check_first_run(lab: Lab, result) -> None:
    out = result.output
    assert result.returncode == 0, out[-5000:]
    assert failed_hosts(result) == []
    ops = changed(result)

    # RDNA4 on 6.1: bookworm-backports, its real 6.12 kernel, the running kernel untouched.
    assert ops["Kernel | Install the newer kernel (the running one stays)"] == ["rdna4"]
    root = lab.root("rdna4")
    source = (root / "etc/apt/sources.list.d/rocm-fleet-backports.sources").read_text()
    assert "Suites: bookworm-backports" in source
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in source
    running = lab.running_kernel("rdna4")
    assert running.startswith("6.1.0-")
    kernels = sorted(p.name for p in (root / "boot").glob("vmlinuz-*"))
    kernels.remove(f"vmlinuz-{running}")  # the lab's double of the running kernel's files
    assert kernels and all("+bpo" in k or "+deb12" in k for k in kernels), kernels
    # The real kernel package's own amdgpu and the initramfs its hook made: ready to boot.
    assert list((root / "boot").glob(f"initrd.img-{kernels[0].removeprefix('vmlinuz-')}"))
    policy = lab.ssh("rdna4", "apt-cache policy linux-image-amd64 curl", check=True).stdout
    assert "~bpo12" in policy.split("Installed:")[1].splitlines()[0], policy
    # The product points backports at the host's own mirror: the one the lab built it from.
    assert f"100 {lab.debian_mirror} bookworm-backports" in policy, policy
    curl = policy.split("curl:")[1]
    assert "bpo" not in curl.split("Installed:")[1].splitlines()[0], policy  # nothing else
    assert (root / "run/reboot-required").exists()
    assert "linux-image-6.12" in (root / "run/reboot-required.pkgs").read_text()

    # amdgpu-dkms on every dkms host, headers of the running kernel, AMD's pin covers it.
    for name in NAMES[1:]:
        r = lab.ssh(name, "dpkg-query -W amdgpu-dkms linux-headers-$(uname -r)", check=True)
        assert "amdgpu-dkms\t1:" in r.stdout, (name, r.stdout)
        line = (lab.root(name) / "etc/apt/sources.list.d/amdgpu.list").read_text()
        assert "https://repo.radeon.com/amdgpu/6.4.3/ubuntu jammy main" in line

    # Secure Boot on, no key: created as DKMS would, queued once with the hash file.
    sbnew = lab.root("sbnew")
    cert = sbnew / DKMS_CERT
    assert mok_state(sbnew, cert) == "pending"
    auth = (sbnew / EFI_DIR / "MokAuth").read_text().strip()
    assert auth.startswith("$6$") and check_crypt(PASSWORD, auth)
    imports = [c for c in lab.mokutil_calls("sbnew") if " --import " in c]
    assert imports == [f"mokutil --import /{DKMS_CERT} --hash-file /run/rocm-fleet/mok-import.hash"]
    assert not (sbnew / "run/rocm-fleet/mok-import.hash").exists()
    subject = lab.ssh("sbnew", f"openssl x509 -inform DER -in /{DKMS_CERT} -noout -subject")
    assert "DKMS module signing key" in subject.stdout
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert re.search(r"\[sbnew\]\s+" + re.escape(PENDING), plain), plain[-3000:]
    assert re.search(r"\[sbpending\]\s+" + re.escape(PENDING), plain)

    # Already queued: nothing imported. Legacy BIOS: no key made, nothing imported.
    for name in ("sbpending", "bios"):
        assert not [c for c in lab.mokutil_calls(name) if "--import" in c], name
    assert not (lab.root("bios") / DKMS_CERT).exists()
    assert not any("disable-validation" in c for n in NAMES for c in lab.mokutil_calls(n))

    # No permission to reboot: the run ends with the list and the reasons.
    assert "Hosts that need a reboot" in out
    report = out[out.index("Hosts that need a reboot") :]
    assert "rdna4: new kernel 6.12" in report
    assert "sbnew: " in report and "MOK enrollment pending" in report
    assert "bios: new driver amdgpu-dkms" in report


@pytest.fixture(scope="module")
def drift(lab, first_run):
    """Drift made on two hosts after the first run, shown by --dry and the audit, fixed by
    a run; then a run that changes nothing. Its checks' failure, or None."""
    return checked(check_drift, lab)


def test_dry_run_reports_exactly_the_drift_and_a_second_run_changes_nothing(drift):
    replay(drift)


def check_drift(lab: Lab) -> None:
    lab.ssh("rdna4", "rm /etc/apt/preferences.d/rocm-fleet-backports", check=True)
    lab.ssh("bios", "dpkg --purge amdgpu-dkms", check=True)
    # A host whose GPU check waits for its reboot has no passed check on record: every
    # run (and --dry, and the audit) says the check will run there.
    unverified = sorted(n for n in NAMES if not (lab.root(n) / "run/rocm-fleet/verified").exists())
    check = "Verify | Check rocminfo and torch see the expected GPUs"
    dry = deploy(lab, dry=True)
    assert dry.returncode == 0, dry.output[-3000:]
    would = changed(dry)
    assert would == {
        "Kernel | Keep backports at priority 100": ["rdna4"],
        "amdgpu driver | Install kernel headers and amdgpu-dkms": ["bios"],
        **({check: unverified} if unverified else {}),
    }
    # The audit names the same drift, from the same plan.
    report = audit(lab, "--limit", "rdna4,bios")
    drift = {row["host"]: row["drift"] for row in report.json["hosts"]}
    verify = {n: [as_drift(check)] if n in unverified else [] for n in NAMES}
    assert drift == {
        "rdna4": ["reboot", as_drift("Kernel | Keep backports at priority 100"),
                  *verify["rdna4"]],
        "bios": ["reboot", as_drift("amdgpu driver | Install kernel headers and amdgpu-dkms"),
                 *verify["bios"]],
    }, report.stdout  # fmt: skip
    fixed = deploy(lab)
    assert fixed.returncode == 0
    # The checks that wait for a reboot run again and wait again: no change.
    assert set(changed(fixed)) == set(would) - {check}
    # A second run changes nothing and queues nothing: the key went to mokutil once.
    again = deploy(lab)
    assert again.returncode == 0, again.output[-4000:]
    assert changed(again) == {}
    assert len([c for c in lab.mokutil_calls("sbnew") if "--import" in c]) == 1


# --- reboots (the same lab: every host above now needs one) ---------------------------------


def reboot_inventory(lab: Lab) -> Path:
    """The lab's inventory plus rocm_reboot: allow, 2 at a time, 40 s to come back."""
    text = lab.inventory.read_text().replace(
        "'rocm_version': '6.4.3',",
        "'rocm_version': '6.4.3', 'rocm_reboot': 'allow', 'rocm_reboot_parallel': 2, "
        "'rocm_reboot_timeout': 40,",
    )
    path = lab.workdir / "inventory_reboot.py"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def rebooted(lab, drift):
    """The run with reboots allowed, after the drift: bios never comes back, sbnew's key is
    confirmed at its console. Its checks' failure, or None."""
    lab.set_returns_after_reboot("bios", False)  # this one never comes back
    lab.confirm_mok_at_console("sbnew", PASSWORD)  # someone types the password at sbnew
    return checked(check_rebooted, lab, deploy(lab, inventory=reboot_inventory(lab)))


def test_allowed_reboots_only_needy_hosts_two_at_a_time_and_verifies_them(rebooted):
    replay(rebooted)


def check_rebooted(lab: Lab, result) -> None:
    out = re.sub(r"\x1b\[[0-9;]*m", "", result.output)
    assert result.returncode != 0
    assert failed_hosts(result) == ["bios"], out[-4000:]
    assert "did not come back within 40s after the reboot" in out

    # rdna4 booted into the backports kernel; sbnew's key was confirmed at the console;
    # sbpending's request stays (nobody there, and queued with someone else's password).
    assert lab.running_kernel("rdna4").startswith("6.12.")
    assert mok_state(lab.root("sbnew"), lab.root("sbnew") / DKMS_CERT) == "enrolled"
    assert mok_state(lab.root("sbpending"), lab.root("sbpending") / DKMS_CERT) == "pending"
    assert [b["boot"] for b in lab.boots["bios"]] == ["never came back"]
    for name in ("rdna4", "sbnew", "sbpending"):
        assert len(lab.boots[name]) == 1, lab.boots
        assert not (lab.root(name) / "run/reboot-required").exists()
    # Two at a time (pyinfra picks the batches, not in inventory order): never more than
    # two hosts between their reboot request and their boot, and two at once did happen.
    # bios never boots: pyinfra gives up on it 40 s after the reboot (2 s margin here).
    down = {}
    for name in ("rdna4", "sbnew", "sbpending", "bios"):
        requested = float(lab.boots[name][0]["requested"])
        down[name] = (requested, float(lab.boots[name][0].get("at", requested + 38)))
    overlap = max(sum(1 for a, b in down.values() if a <= t < b) for t, _ in down.values())
    assert overlap == 2, down
    # ... and each was verified again after it came back.
    verify = [
        op
        for op in result.json["results"]["operations"]
        if op["name"].removeprefix(OP_PREFIX).startswith("Verify")
    ]
    assert verify and all(
        h not in op.get("error", []) for op in verify for h in down if h != "bios"
    )


@pytest.fixture(scope="module")
def after_reboots(lab, rebooted):
    """A run with reboots allowed after that one (bios, down, left out): its checks'
    failure. The tests below start from here, each on a host of its own."""
    return checked(check_after_reboots, lab)


def test_after_the_reboots_nothing_reboots_or_changes(after_reboots):
    replay(after_reboots)


def check_after_reboots(lab: Lab) -> None:
    result = deploy(lab, inventory=reboot_inventory(lab), limit=["rdna4", "sbnew", "sbpending"])
    assert result.returncode == 0, result.output[-4000:]
    assert changed(result) == {}
    assert all(len(lab.boots[n]) == 1 for n in ("rdna4", "sbnew", "sbpending")), lab.boots


#: A later ABI of the stock kernel, as a Debian security update brings it.
NEW_KERNEL = "6.1.0-99-amd64"


def test_a_reboot_into_a_kernel_without_the_driver_is_refused_until_it_is_built(lab, after_reboots):
    host = "sbnew"  # amdgpu-dkms, Secure Boot on, its key enrolled at the last reboot
    root = lab.root(host)
    inventory = reboot_inventory(lab)
    running, boots = lab.running_kernel(host), len(lab.boots[host])
    # An unattended upgrade installs a newer kernel without its headers (DKMS builds
    # nothing) and marks the reboot, as the kernel's postinst hooks do.
    kernel_files(root, NEW_KERNEL)
    lab.ssh(host, "touch /run/reboot-required && "
            f"echo linux-image-{NEW_KERNEL} >> /run/reboot-required.pkgs", check=True)  # fmt: skip
    not_built = f"amdgpu-dkms is not built for kernel {NEW_KERNEL}"

    # The plan refuses it (the audit's JSON; --dry prints the plan the same way,
    # test_dry_run_reports_exactly_the_drift_and_a_second_run_changes_nothing).
    report = audit(lab, "--limit", host, inventory=inventory)
    (row,) = report.json["hosts"]
    boot = row["cells"]["reboot"]["boot"]
    assert boot["next"] == NEW_KERNEL and not_built in boot["refused"][0], boot
    assert [(k["kernel"], k["ready"]) for k in boot["kernels"]] == [
        (NEW_KERNEL, False),
        (running, True),
    ]

    refused = deploy(lab, limit=[host], inventory=inventory)
    out = plain(refused.output)
    assert refused.returncode != 0 and failed_hosts(refused) == [host], out[-4000:]
    # On the host's line, and as the error that failed it (the reboot command never ran).
    assert re.search(rf"\[{host}\]\s+reboot refused: next boot {re.escape(NEW_KERNEL)}", out), out
    assert f"reboot refused (package linux-image-{NEW_KERNEL})" in out and not_built in out
    assert len(lab.boots[host]) == boots and lab.running_kernel(host) == running

    # The build: the new kernel's headers arrive and DKMS builds and signs for it (the lab's
    # amdgpu-dkms double does in its postinst what `dkms autoinstall` does).
    lab.ssh(host, f"mkdir -p /usr/src/linux-headers-{NEW_KERNEL} && "
            "/var/lib/dpkg/info/amdgpu-dkms.postinst configure", check=True)  # fmt: skip
    module = root / "lib/modules" / NEW_KERNEL / "updates/dkms/amdgpu.ko"
    assert module.read_text().endswith("~Module signature appended~\n")
    went = deploy(lab, limit=[host], inventory=inventory)
    assert went.returncode == 0, plain(went.output)[-4000:]
    assert lab.running_kernel(host) == NEW_KERNEL and len(lab.boots[host]) == boots + 1
    after = audit(lab, "--limit", host, inventory=inventory)
    (row,) = after.json["hosts"]
    assert row["cells"]["reboot"]["boot"]["refused"] == [], row["cells"]["reboot"]


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_the_mok_password_is_nowhere(lab, first_run):
    """Not in any file of any lab root (overlay upper dirs: everything the hosts wrote), not in
    what pyinfra printed with -v (every run so far: at least the first, which queued the key),
    not in the process list of a host."""
    hosts_dir = lab.workdir / "hosts"
    found = subprocess.run(
        ["grep", "-rlaF", "--", PASSWORD, str(hosts_dir)], capture_output=True, text=True
    )
    assert found.returncode == 1, found.stdout  # 1 = no match
    assert OUTPUTS and not any(PASSWORD in text for text in OUTPUTS)
    assert "mokutil --import" in "".join(OUTPUTS)  # the commands were printed (-v)


# --- back to the kernel's own driver (last: it changes a host the tests above share) ----------

PURGE = "amdgpu driver | Purge amdgpu-dkms and the headers the deploy installed for it"
DRIVER_GONE = {PURGE, "amdgpu driver | Remove AMD's amdgpu driver source",
               "amdgpu driver | Remove the driver source's apt-lists stamp"}  # fmt: skip


def inbox_inventory(lab: Lab) -> Path:
    """The lab's inventory with rocm_driver: inbox for every dkms host."""
    text = lab.inventory.read_text()
    assert "'rocm_driver': 'dkms'" in text
    path = lab.workdir / "inventory_inbox.py"
    path.write_text(text.replace("'rocm_driver': 'dkms'", "'rocm_driver': 'inbox'"))
    return path


def test_back_to_inbox_purges_amdgpu_dkms_and_its_source_on_one_run(lab, after_reboots):
    host = "sbpending"
    root = lab.root(host)
    inventory = inbox_inventory(lab)
    # The audit sees the leftovers, from the plan --dry prints.
    report = audit(lab, "--limit", host, inventory=inventory)
    (row,) = report.json["hosts"]
    assert as_drift(PURGE) in row["drift"], report.stdout
    # The bare host had no mokutil: the deploy installed it for the signing key, recorded.
    recorded = (root / "var/lib/rocm-fleet/driver-packages").read_text().split()
    assert "mokutil" in recorded, recorded

    run = deploy(lab, limit=[host], inventory=inventory)
    assert run.returncode == 0, run.output[-4000:]
    assert set(changed(run)) >= DRIVER_GONE, changed(run)
    for package in ("amdgpu-dkms", "mokutil"):
        query = f"dpkg-query -W -f='${{db:Status-Abbrev}}' {package} || true"
        status = lab.ssh(host, query).stdout
        assert not status.startswith("ii"), (package, status)
    assert not (root / "etc/apt/sources.list.d/amdgpu.list").exists()
    assert not (root / "var/lib/rocm-fleet/amdgpu-lists.stamp").exists()
    assert not (root / "var/lib/rocm-fleet/driver-packages").exists()
    assert (root / "etc/apt/keyrings/rocm.gpg").exists()  # the ROCm repository's keyring
    policy = lab.ssh(host, "apt-cache policy", check=True).stdout
    assert "/amdgpu/" not in policy, policy  # apt forgot the driver repository
    # AMD's module stays loaded until a reboot, which isn't allowed here: the run says so.
    out = re.sub(r"\x1b\[[0-9;]*m", "", run.output)
    report_text = out[out.index("Hosts that need a reboot") :]
    assert "driver amdgpu-dkms removed" in report_text, report_text

    # Nothing of the driver left for a second run to do (the plan a run would carry out).
    after = audit(lab, "--limit", host, inventory=inventory)
    (row,) = after.json["hosts"]
    assert not [d for d in row["drift"] if d.startswith("amdgpu_driver")], after.stdout


HOLD = "Kernel | Hold the kernel meta packages (rocm_kernel_hold)"


def test_kernel_hold_is_placed_kept_and_only_its_own_released(lab, after_reboots):
    """rocm_kernel_hold with real apt-mark: the installed meta package held and recorded,
    a second run changes nothing, the setting gone releases rocm-fleet's hold alone (the
    admin's stay), and a meta package the admin held is never taken for rocm-fleet's."""
    host = "bios"
    root = lab.root(host)
    ledger = root / "var/lib/rocm-fleet/held-kernel-packages"
    check = "Verify | Check rocminfo and torch see the expected GPUs"
    text = lab.inventory.read_text()
    held = lab.workdir / "inventory_kernel_hold.py"
    held.write_text(
        text.replace("'rocm_driver': 'dkms'", "'rocm_driver': 'dkms', 'rocm_kernel_hold': True")
    )

    def showhold() -> list[str]:
        return sorted(lab.ssh(host, "apt-mark showhold", check=True).stdout.split())

    # bios "never came back" from the run with reboots allowed: powered on again.
    lab.set_returns_after_reboot(host, True)
    lab.start_host(host)
    # The stock kernel's headers meta package (real, from the lab's Debian mirror) and the
    # admin's own holds: curl, and a local package whose one-letter name Debian policy
    # refuses and dpkg keeps (only looked up, never passed on).
    local = (
        "mkdir -p /tmp/z/DEBIAN && printf 'Package: z\\nVersion: 1.0\\nArchitecture: all\\n"
        "Maintainer: Admin <admin@example.org>\\nDescription: local tool\\n' "
        "> /tmp/z/DEBIAN/control && dpkg-deb -b /tmp/z /tmp/z.deb && dpkg -i /tmp/z.deb"
    )
    try:
        lab.ssh(host, f"apt-get install -y -q linux-headers-amd64 && {local} && "
                "apt-mark hold curl z", check=True)  # fmt: skip
        assert showhold() == ["curl", "z"]
        run = deploy(lab, limit=[host], inventory=held)
        assert run.returncode == 0, run.output[-4000:]
        assert changed(run).get(HOLD) == [host], changed(run)
        assert "kernel hold: hold linux-headers-amd64" in run.output  # the plan's line
        assert showhold() == ["curl", "linux-headers-amd64", "z"]
        assert ledger.read_text() == "linux-headers-amd64\n"
        # apt itself now keeps the package where it is.
        status = lab.ssh(host, "dpkg-query -W -f='${Status}' linux-headers-amd64").stdout
        assert status.startswith("hold "), status

        again = deploy(lab, limit=[host], inventory=held)
        assert again.returncode == 0, again.output[-3000:]
        assert set(changed(again)) <= {check}, changed(again)

        # The setting gone: rocm-fleet's hold goes, the admin's stays.
        off = deploy(lab, limit=[host])
        assert off.returncode == 0, off.output[-3000:]
        assert changed(off).get(HOLD) == [host], changed(off)
        assert showhold() == ["curl", "z"]
        assert not ledger.exists()

        # A meta package the admin holds is the admin's: never recorded, so never released.
        lab.ssh(host, "apt-mark hold linux-headers-amd64", check=True)
        admin = deploy(lab, limit=[host], inventory=held)
        assert admin.returncode == 0, admin.output[-3000:]
        assert set(changed(admin)) <= {check}, changed(admin)
        assert not ledger.exists()
        assert showhold() == ["curl", "linux-headers-amd64", "z"]
    finally:
        lab.ssh(host, "apt-mark unhold curl linux-headers-amd64 z; dpkg --purge z; rm -r /tmp/z*")
