"""End to end: preflight refuses each kind of unfit host with its reason and leaves it unchanged,
while a fit host in the same run is deployed.

Not on the lab (it builds bookworm and trixie amd64 roots only): Debian 11 and a non-amd64
host. Both are covered at plan level (tests/unit/test_plan.py refusal cases, and
tests/unit/test_preflight.py), with the same code path: the survey's os-release and dpkg
architecture.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from e2e.support import (
    OP_PREFIX,
    deploy,
    differences,
    failed_hosts,
    host_line,
    refusal,
    root_hashes,
    running_lab,
    sh,
)
from lab import HostSpec

pytestmark = pytest.mark.e2e

GFX1100 = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}

# host -> (spec, a fragment of its refusal)
CASES = {
    "nogpu": (HostSpec("nogpu", profile="none", data={"rocm_version": "6.4.3"}),
              "no AMD GPU found (no PCI device of vendor 0x1002 with a display or processing-"
              "accelerator class; found instead: NVIDIA Corporation 10de:2335 GH100 "
              "[H200 SXM 141GB] (3D controller) at 0000:00:06.0)"),
    "wronggfx": (HostSpec("wronggfx", data={**GFX1100, "expected_gfx": "gfx942"}),
                 "expected 1 x gfx942, found 1 x gfx1100: correct expected_gfx"),
    "fewgpus": (HostSpec("fewgpus", data={**GFX1100, "expected_gpu_count": 2}),
                "too few GPUs: expected 2 x gfx1100, found 1"),
    "nvidia": (HostSpec("nvidia", data=GFX1100),
               "NVIDIA driver/CUDA stack installed (packages: libcuda1, nvidia-driver"),
    "cudatorch": (HostSpec("cudatorch", data=GFX1100),
                  "/opt/rocm-fleet/venv holds a CUDA torch (2.9.1+cu128)"),
    "smalldisk": (HostSpec("smalldisk", data=GFX1100),
                  "not enough free space on /opt (for /opt"),
    "distrotool": (HostSpec("distrotool", suite="trixie",
                            data={**GFX1100, "rocm_version": "7.2.1"}),
                   "Debian's own ROCm tools are installed: rocminfo "),
    # AMD signed 6.4.3 while its key's only binding was SHA-1: trixie's apt (sqv) rejects it
    # (the lab's double is signed the same way: tests/lab/amd_repo.py, upstream_facts.py).
    "sha1trixie": (HostSpec("sha1trixie", suite="trixie", profile="mi300x-8",
                            data={"rocm_version": "6.4.3", "expected_gfx": "gfx942",
                                  "expected_gpu_count": 8, "pytorch_install": False}),
                   "debian 13's apt rejects the signatures of ROCm 6.4.3: AMD signed its "
                   "repositories while the only binding signature of its key"),
}  # fmt: skip
# Fit, and carrying Debian's HIP runtime for libucx0 (as Ubuntu 24.04 hosts do for OpenMPI):
# on trixie, a classic release AMD signed after re-binding its key (7.0.2 on) converges.
GOOD = HostSpec("good", suite="trixie", profile="mi300x-8",
                data={"rocm_version": "7.2.1", "expected_gfx": "gfx942", "expected_gpu_count": 8,
                      "pytorch_install": False})  # fmt: skip

# Debian ships NVIDIA's driver and CUDA only in non-free, which the lab's sparse mirror
# doesn't carry (adding it would rebuild every lab cache and pull hundreds of MB of driver
# blobs), and nothing in main is NVIDIA's driver stack (libnvidia-egl-wayland1 and
# nvidia-texture-tools are deliberately not matched). So the two package names Debian
# uses are built here as empty .debs and installed with the host's real dpkg: the fact
# reads dpkg's database, which is what matters.
NVIDIA_DEBS = ("nvidia-driver", "libcuda1")
# The GPU of a real CUDA host (tests/fixtures/cuda-host/sys-bus-pci-devices), for the host
# without an AMD one: sysfs is part of the lab's hardware double (tests/lab/sysfs.py).
NVIDIA_H200 = {"slot": "0000:00:06.0", "vendor": "0x10de", "device": "0x2335",
               "class": "0x030200", "driver": "nvidia"}  # fmt: skip


def add_pci_device(root: Path, device: dict[str, str]) -> None:
    sys = root / "sys/bus/pci"
    path = sys / "devices" / device["slot"]
    path.mkdir(parents=True)
    for name in ("vendor", "device", "class"):
        (path / name).write_text(device[name] + "\n")
    (sys / "drivers" / device["driver"]).mkdir(parents=True, exist_ok=True)
    (path / "driver").symlink_to(f"../../drivers/{device['driver']}")


def build_deb(directory: Path, name: str) -> Path:
    root = directory / name
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN/control").write_text(
        f"Package: {name}\nVersion: 0~rocm-fleet-lab\nArchitecture: all\n"
        "Maintainer: rocm-fleet lab <lab@invalid>\n"
        f"Description: empty stand-in for Debian non-free {name}\n"
    )
    subprocess.run(["dpkg-deb", "-Zgzip", "--build", str(root)], check=True, capture_output=True)
    return directory / f"{name}.deb"


@pytest.fixture(scope="module")
def lab():
    hosts = [spec for spec, _ in CASES.values()] + [GOOD]
    for lab in running_lab(hosts, ["6.4.3", "7.2.1"]):
        tmpfs = lab.root("smalldisk") / "opt"
        try:
            with tempfile.TemporaryDirectory() as tmp:
                for name in NVIDIA_DEBS:
                    deb = build_deb(Path(tmp), name)
                    (lab.root("nvidia") / "tmp" / deb.name).write_bytes(deb.read_bytes())
            add_pci_device(lab.root("nogpu"), NVIDIA_H200)
            # Debian's real packages, from the lab's Debian mirror (tests/lab/mirror.py).
            install = "apt-get update -q >/dev/null && apt-get install -y -q {} >/dev/null"
            setup = {
                "nvidia": "dpkg -i /tmp/nvidia-driver.deb /tmp/libcuda1.deb && rm /tmp/*.deb",
                "good": install.format("libucx0"),
                "distrotool": install.format("libucx0 rocminfo"),
                "cudatorch": install.format("python3-venv ca-certificates") + " && "
                "python3 -m venv /opt/rocm-fleet/venv && /opt/rocm-fleet/venv/bin/pip install "
                "-q --index-url https://download.pytorch.org/whl/cu128 torch==2.9.1+cu128",
            }  # fmt: skip
            for name, command in setup.items():
                sh(lab, name, command)
            # A 64 MB filesystem at /opt (a small disk), seen by the host after a restart of
            # its namespaces.
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", tmpfs], check=True)
            lab.restart_host("smalldisk")
            yield lab
        finally:
            lab.stop_host("smalldisk")
            subprocess.run(["umount", tmpfs], check=False)


@pytest.fixture(scope="module")
def runs(lab):
    """--dry and a run of the whole lab (the tests below read the refusals of both), and the
    unfit hosts' root hashes before and right after them: what the runs changed, whatever a
    test does on the hosts later (apt-get -s logs its plan to /var/log/apt/eipp.log.xz)."""
    before = {name: root_hashes(lab.root(name)) for name in CASES}
    dry = deploy(lab, dry=True)
    result = deploy(lab)
    print(f"deploy with preflight refusals: {result.seconds:.1f}s")
    after = {name: root_hashes(lab.root(name)) for name in CASES}
    return (before, after), dry, result


def test_each_unfit_host_is_refused_with_its_reason_and_left_unchanged(lab, runs):
    (before, after), dry, result = runs
    # --dry first: it must name each refused host with its reason and exit non-zero.
    assert dry.returncode == 1, dry.output[-3000:]
    for name, (_, reason) in CASES.items():
        assert reason in (refusal(dry, name) or ""), (name, dry.output[-4000:])
    assert result.json is not None, result.output[-3000:]
    assert failed_hosts(result) == sorted(CASES), result.output[-4000:]
    for name, (_, reason) in CASES.items():
        assert reason in (refusal(result, name) or ""), (name, reason, result.output[-4000:])
    for name in CASES:
        assert differences(before[name], after[name]) == [], name
    # The fit host beside them was deployed (preflight passed, ROCm went on).
    assert (lab.root("good") / "etc/apt/sources.list.d/rocm.list").exists()
    # gfx942 is Instinct: no "AMD lists debian 13 for Instinct only" for this host (the
    # gfx1100 distrotool host beside it gets one)
    assert host_line(result, "good", "warning: AMD lists debian 13") == ""
    # ... and verified, Debian's HIP runtime left in place for libucx0.
    assert "good" not in failed_hosts(result)
    verified = [
        op["success"] + op["no_change"]
        for op in result.json["results"]["operations"]
        if op["name"].removeprefix(OP_PREFIX).startswith("Verify")
    ]
    assert verified and all("good" in hosts for hosts in verified), verified
    assert "libucx0" in sh(lab, "good", "dpkg-query -W -f='${Package}\\n' libucx0")
    print(host_line(result, "good", "warning: Debian's own ROCm libraries"))
    for run in (dry, result):
        warning = host_line(run, "good", "warning: Debian's own ROCm libraries are installed")
        assert "libucx0 needs libamdhip64-5, libhsa-runtime64-1" in warning, warning
        assert "says it also removes libucx0" in warning, warning


def test_trixie_asking_for_a_sha1_signed_release_is_told_why_and_the_ways_out(lab, runs):
    """Refused before any change (the test above compares its root before and after); the
    reason names the key and what apt would print, and the releases its apt accepts."""
    _, dry, _ = runs
    reason = refusal(dry, "sha1trixie") or ""
    print(f"sha1trixie refused: {reason}")
    assert "(CA8BB4727A47B4D09B4EE8969386B48A1A693C5C) was SHA-1" in reason, dry.output[-3000:]
    assert "debian 13's apt (sqv) refuses since 2026-02-01" in reason
    assert "choose ROCm (repo.radeon.com) 7.0.2 or newer or ROCm Core SDK 7.14.0 or newer" in reason
    assert "rocm-fleet does not weaken apt's signature policy" in reason
    assert not (lab.root("sha1trixie") / "etc/apt/keyrings/rocm.gpg").exists()
    assert not list((lab.root("sha1trixie") / "etc/apt/sources.list.d").glob("*rocm*"))


def test_debians_rocm_tool_is_refused_with_what_apt_says_its_removal_takes(lab, runs):
    _, dry, _ = runs
    reason = refusal(dry, "distrotool") or ""
    print(f"distrotool refused: {reason}")
    version = sh(lab, "distrotool", "dpkg-query -W -f='${Version}' rocminfo")
    assert f"rocminfo {version} (/usr/bin/rocm_agent_enumerator, /usr/bin/rocminfo would " in (
        reason
    ), dry.output[-3000:]
    assert "AMD's package of that name is versioned lower, so its pin can't replace it" in reason
    # apt's own simulation, on the host: what the suggested purge would take along.
    simulated = sh(
        lab, "distrotool", "apt-get -s purge rocminfo | sed -n 's/^Purg \\([^ ]*\\).*/\\1/p'"
    )
    others = sorted(set(simulated.split()) - {"rocminfo"})
    effect = f"also removes {', '.join(others)}" if others else "removes nothing else"
    assert reason.endswith(f"apt-get purge rocminfo (apt-get -s purge rocminfo says it {effect})")
    # Its libraries, which libucx0 needs, only warn.
    assert "libucx0 needs libamdhip64-5" in host_line(dry, "distrotool", "warning: Debian's own")
