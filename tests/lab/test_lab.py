"""Tests of the lab itself: the doubles behave like the real thing, and teardown is clean.

The fleet tests share one 2-host lab (bookworm + trixie) and use plain shell over SSH, not
the product, so a lab regression is told apart from a product regression.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import shlex
import subprocess
import sys
import tarfile
import time
import tomllib
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote

import pytest

from lab import (
    HostSpec,
    Lab,
    amd_repo,
    amd_wheels,
    converged,
    core_sdk_repo,
    machine,
    profiles,
    pytorch_index,
    upstreams,
)
from lab.server import Server
from lab.upstreams import DOUBLES
from rocm_fleet.model.matrix import release
from rocm_fleet.model.streams import CORE_SDK_GFX_PACKAGES

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the lab needs root")

AGENT = re.compile(
    r"^\*{7}\s*\nAgent (\d+)\s*\n\*{7}\s*\n"
    r"  Name:\s+(.+?)\s*\n  Uuid:\s+(\S+)\s*\n  Marketing Name:\s+(.+?)\s*\n"
    r"  Vendor Name:\s+(\S+)\s*\n(?:.*\n)*?  Device Type:\s+(\w+)",
    re.M,
)
ISA = re.compile(r"^      Name:\s+amdgcn-amd-amdhsa--(\S+)\s*$", re.M)


def run_rocminfo(tmp_path: Path, profile: str, version: str = "6.4.3"):
    """The rocminfo double against a profile file, outside any root (as root)."""
    gpus = tmp_path / "gpus"
    gpus.write_text(profiles.render(profile))
    script = amd_repo.rocminfo_script(release(version)).replace(
        "/" + profiles.PROFILE_PATH, str(gpus)
    )
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)


@needs_root
@pytest.mark.parametrize("profile", sorted(profiles.PROFILES))
def test_rocminfo_double_lists_the_profile_agents(tmp_path, profile):
    proc = run_rocminfo(tmp_path, profile)
    gpus = profiles.gpus(profile)
    if not gpus:
        assert proc.returncode == 1
        assert proc.stdout.strip() == "ROCk module is NOT loaded, possibly no GPU devices"
        return
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("ROCk module is loaded\n=====================    \n")
    assert "HSA System Attributes" in out and "HSA Agents" in out
    assert out.rstrip().endswith("*** Done ***")
    agents = AGENT.findall(out)
    assert [a[0] for a in agents] == [str(i) for i in range(1, len(gpus) + 2)]
    assert agents[0][5] == "CPU" and agents[0][2] == "CPU-XX"
    gpu_agents = agents[1:]
    assert [(a[1], a[2], a[3], a[4], a[5]) for a in gpu_agents] == [
        (g.gfx, g.uuid, g.name, "AMD", "GPU") for g in gpus
    ]
    assert ISA.findall(out) == [g.arch for g in gpus]
    # Label width 25, as in rocminfo.cc.
    assert re.search(r"^  Device Type:             GPU", out, re.M)


def test_rocminfo_7x_also_lists_the_generic_isa(tmp_path):
    out = run_rocminfo(tmp_path, "rx7900xtx", "7.2.1").stdout
    assert ISA.findall(out) == ["gfx1100", "gfx11-generic"]


def test_package_versions_follow_the_real_scheme():
    rel = release("6.4.3")
    core = amd_repo.PACKAGES[0]
    assert amd_repo.deb_version(core, rel, "jammy") == "6.4.3.60403-128~22.04"
    assert amd_repo.deb_version(amd_repo._by_name("rocminfo"), rel, "noble") == (
        "1.0.0.60403-128~24.04"
    )
    assert amd_repo.rocm_core_version_string(rel) == "6.4.3-128"


def test_wheels_are_valid(tmp_path):
    wheels = pytorch_index.build(tmp_path, [release("6.4.3")])
    torch = next(w for w in wheels["rocm6.4"] if w.project == "torch")
    with zipfile.ZipFile(torch.path) as zf:
        names = zf.namelist()
        meta = zf.read(f"torch-{torch.version}.dist-info/METADATA").decode()
        record = zf.read(f"torch-{torch.version}.dist-info/RECORD").decode()
    assert "torch/cuda.py" in names
    assert f"Version: {torch.version}" in meta
    assert all(line.split(",")[0] in names for line in record.splitlines())
    vision = next(w for w in wheels["rocm6.4"] if w.project == "torchvision")
    with zipfile.ZipFile(vision.path) as zf:
        meta = zf.read(f"torchvision-{vision.version}.dist-info/METADATA").decode()
    assert re.search(r"^Requires-Dist: torch==\d+\.\d+\.\d+\+rocm6\.4$", meta, re.M)
    assert "cu128" in wheels
    # torch requires filelock, which lives in /whl/ beside the indexes, as on the real host.
    assert (
        "Requires-Dist: filelock\n"
        in zipfile.ZipFile(torch.path).read(f"torch-{torch.version}.dist-info/METADATA").decode()
    )
    page = (tmp_path / "whl/rocm6.4/filelock/index.html").read_text()
    assert 'href="/whl/filelock-3.13.1-py3-none-any.whl#sha256=' in page


def test_a_double_package_is_the_same_bytes_whenever_it_is_built(tmp_path):
    """A root converged by one lab finds the next lab's packages where its lists say."""
    rel, pkg = release("6.4.3"), amd_repo.PACKAGES[0]
    first = amd_repo.build_deb(pkg, rel, "noble", tmp_path / "s1", tmp_path / "p1")
    time.sleep(1.1)  # past the mtimes of the first build's files
    second = amd_repo.build_deb(pkg, rel, "noble", tmp_path / "s2", tmp_path / "p2")
    assert first.read_bytes() == second.read_bytes()


def test_core_sdk_packages_follow_the_real_scheme():
    """Names with the release's major.minor, versions X.Y.Z-<build>, everything under
    /opt/rocm/core-X.Y, rocminfo in the base package (TheRock's packaging, matrix.py)."""
    debs = {d.name: d for d in core_sdk_repo.packages(release("7.14.1"))}
    assert core_sdk_repo.package_version("7.14.0") == "7.14.0-3"
    assert core_sdk_repo.package_version("10.0.0") == "10.0.0-4"
    assert {f"amdrocm7.14-{g}" for g in CORE_SDK_GFX_PACKAGES} <= set(debs)
    assert set(debs["amdrocm7.14"].depends) == {f"amdrocm7.14-{g}" for g in CORE_SDK_GFX_PACKAGES}
    assert debs["amdrocm7.14-gfx1100"].depends == ("amdrocm-core7.14-gfx1100",)
    files = [path for deb in debs.values() for path, _body, _mode in deb.files]
    assert all(path.startswith("opt/rocm/core-7.14/") for path in files)
    assert "opt/rocm/core-7.14/bin/rocminfo" in files
    postinst = debs["amdrocm-core7.14"].postinst
    assert "update-alternatives --install /opt/rocm/core core /opt/rocm/core-7.14 " in postinst
    assert "/usr/bin/rocminfo rocminfo /opt/rocm/core-7.14/bin/rocminfo" in postinst


@needs_root
def test_core_sdk_repositories_carry_amds_origin_and_both_key_forms(tmp_path):
    signer = amd_repo.Signer(tmp_path / "gnupg")
    try:
        core_sdk_repo.build(tmp_path / "www", [release("10.0.0")], signer, [release("7.14.1")])
    finally:
        signer.close()
    www = tmp_path / "www"
    stable = www / "stable.repo.amd.com/rocm/core/packages/debian13"
    inrelease = (stable / "dists/stable/InRelease").read_text()
    assert "Origin: AMD ROCm\n" in inrelease and "Suite: stable\n" in inrelease
    assert inrelease.startswith("-----BEGIN PGP SIGNED MESSAGE-----")
    index = (stable / "dists/stable/main/binary-amd64/Packages").read_text()
    assert re.search(r"^Package: amdrocm10.0-gfx1100\n(?:.+\n)*?Version: 10.0.0-4\n", index, re.M)
    assert "Depends: amdrocm-core10.0-gfx1100 (= 10.0.0-4)" in index
    multi = www / "repo.amd.com/rocm/packages-multi-arch"
    # The catalog release: its meta package only, in every distro directory.
    listed = (multi / "ubuntu2404/dists/stable/main/binary-amd64/Packages").read_text()
    assert re.findall(r"^Package: (.+)$", listed, re.M) == ["amdrocm7.14"]
    armored = (multi / "gpg/rocm.gpg").read_bytes()
    assert armored.startswith(b"-----BEGIN PGP PUBLIC KEY BLOCK-----")
    both = (www / "stable.repo.amd.com/rocm/gpg/packages.gpg").read_bytes()
    assert both[0] & 0x80 and b"-----BEGIN PGP PUBLIC KEY BLOCK-----" in both
    base = next((stable / "pool").rglob("amdrocm-base10.0_*.deb"))
    contents = subprocess.run(["dpkg-deb", "-c", base], capture_output=True, text=True).stdout
    assert "./opt/rocm/core-10.0/bin/rocminfo" in contents


def test_core_sdk_torch_wheels_require_the_pip_rocm_runtime(tmp_path):
    """torch+rocm7.14 requires rocm[device-all,libraries]==7.14.* (the real wheel's
    Requires-Dist); the stand-ins resolve it the way the real ones do."""
    wheels = pytorch_index.build(tmp_path, [release("7.14.1"), release("10.0.0")])
    assert "rocm10.0" not in wheels
    by_name = {w.project: w for w in wheels["rocm7.14"] if w.project != "torch"}
    torch = next(w for w in wheels["rocm7.14"] if w.project == "torch")
    with zipfile.ZipFile(torch.path) as zf:
        meta = zf.read(f"torch-{torch.version}.dist-info/METADATA").decode()
    assert "Requires-Dist: rocm[device-all,libraries]==7.14.*" in meta
    assert by_name["rocm"].version == "7.14.0.post1"
    # rocm as TheRock publishes it: an sdist only, with its build backend beside it.
    assert by_name["rocm"].path.name == "rocm-7.14.0.post1.tar.gz"
    with tarfile.open(by_name["rocm"].path) as sdist:
        meta = sdist.extractfile("rocm-7.14.0.post1/PKG-INFO").read().decode()
        pyproject = tomllib.load(sdist.extractfile("rocm-7.14.0.post1/pyproject.toml"))
    assert "Requires-Dist: rocm-sdk-core==7.14.0\n" in meta
    assert 'Requires-Dist: rocm-sdk-device-gfx1100==7.14.0; extra == "device-all"' in meta
    assert pyproject["build-system"]["requires"] == ["setuptools>=70.2.0"]
    assert pyproject["project"]["dependencies"] == ["rocm-sdk-core==7.14.0"]
    assert (
        "rocm-sdk-device-gfx1100==7.14.0"
        in pyproject["project"]["optional-dependencies"]["device-all"]
    )
    with zipfile.ZipFile(by_name["setuptools"].path) as zf:
        assert "setuptools/build_meta.py" in zf.namelist()
    assert {"rocm-sdk-core", "rocm-sdk-libraries", "rocm-sdk-device-gfx942"} <= set(by_name)
    page = (tmp_path / "whl/rocm7.14/rocm-sdk-core/index.html").read_text()
    assert "rocm_sdk_core-7.14.0-py3-none-any.whl#sha256=" in page


def test_amds_stable_index_double_serves_10x_torch_with_device_extras(tmp_path):
    """stable.repo.amd.com/rocm/whl-next/ from the record: the 10.x releases only, the exact
    builds of AMD's page, torch requires rocm[libraries]==<release>, [device-<gfx>] brings
    amd-torch-device-<gfx>, gfx1150's device wheel only for the build it is offered."""
    wheels = amd_wheels.build(tmp_path, [release("7.14.1"), release("10.1.0")])
    assert amd_wheels.URL == "https://stable.repo.amd.com/rocm/whl-next/"
    torches = sorted(w.version for w in wheels if w.project == "torch")
    assert torches == ["2.12.0+rocm10.1.0", "2.13.0+rocm10.1.0", "2.14.0+rocm10.1.0"]
    torch = next(w for w in wheels if (w.project, w.version) == ("torch", "2.14.0+rocm10.1.0"))
    with zipfile.ZipFile(torch.path) as zf:
        meta = zf.read(f"torch-{torch.version}.dist-info/METADATA").decode()
    assert "Requires-Dist: rocm[libraries]==10.1.0\n" in meta
    assert 'amd-torch-device-gfx1100==2.14.0+rocm10.1.0; extra == "device-gfx1100"' in meta
    assert "device-gfx1150" not in meta and "device-gfx908" not in meta
    apu = [w.version for w in wheels if w.project == "amd-torch-device-gfx1150"]
    assert apu == ["2.12.0+rocm10.1.0"]
    vision = {w.version for w in wheels if w.project == "torchvision"}
    assert "0.29.0a0+rocm10.1.0" in vision
    page = (tmp_path / "rocm/whl-next/rocm/index.html").read_text()
    assert "rocm-10.1.0.tar.gz#sha256=" in page and ".whl" not in page
    assert "setuptools-" in (tmp_path / "rocm/whl-next/setuptools/index.html").read_text()
    assert amd_wheels.build(tmp_path / "none", [release("7.14.1")]) == []


def readme_code() -> str:
    """The code in the lab's README: fenced blocks and inline spans, one per line."""
    text = (Path(__file__).parent / "README.md").read_text()
    fenced = re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S)
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S))
    return "\n".join(fenced + inline)


def public(names) -> list[str]:
    return sorted({n for n in names if not n.startswith("_")})


def test_readme_names_every_public_name_of_the_lab(tmp_path):
    code = readme_code()
    words = set(re.findall(r"[\w+-]+", code))
    lab = Lab(hosts=[HostSpec("x")], workdir=tmp_path)  # never entered: builds nothing
    missing = [f"lab.{n}" for n in public([*dir(Lab), *vars(lab)]) if f"lab.{n}" not in code]
    # The server's steering methods; starting and stopping it is the lab's own business.
    steering = [n for n in public(vars(Server)) if inspect.isfunction(getattr(Server, n))]
    missing += [
        f"lab.server.{n}"
        for n in steering
        if n not in ("start", "stop") and f"lab.server.{n}" not in code
    ]
    missing += [f"Lab({n}=)" for n in inspect.signature(Lab).parameters if n not in words]
    for cls in (HostSpec, machine.Machine):
        missing += [
            f"{cls.__name__}.{f.name}" for f in dataclasses.fields(cls) if f.name not in words
        ]
    missing += [f"profile {p}" for p in profiles.PROFILES if p not in words]
    missing += [f"double /{path}" for path in machine.DOUBLES if f"/{path}" not in code]
    missing += [f"firmware {f}" for f in machine.FIRMWARES if f not in words]
    missing += [f"mok {m}" for m in machine.MOK_STATES if m not in words]
    assert missing == [], "tests/lab/README.md does not document: " + ", ".join(missing)


# --- the fleet ------------------------------------------------------------------------------

FLEET = [
    HostSpec("bw", suite="bookworm", profile="rx7900xtx"),
    HostSpec("tx", suite="trixie", profile="mi300x-8"),
    HostSpec("down", suite="bookworm", profile="none", sshd=False),
]


@pytest.fixture(scope="module")
def lab():
    if os.geteuid() != 0:
        pytest.skip("the lab needs root")
    with Lab(hosts=FLEET, rocm_releases=["6.4.3", "7.2.1"]) as lab:
        yield lab


def sh(lab: Lab, host: str, script: str, check: bool = True) -> str:
    proc = lab.ssh(host, script, timeout=600)
    if check:
        assert proc.returncode == 0, f"{host}: {proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def on_both(fn):
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(["bw", "tx"], pool.map(fn, ["bw", "tx"]), strict=True))


ROCM_SOURCE = (
    "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
    "https://repo.radeon.com/rocm/apt/{path} {suite} main"
)
PIN = "Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n"


#: What each host installs: bookworm's apt (gpgv) takes what AMD signed under its key's SHA-1
#: binding (6.4.3); trixie's (sqv) does not, so it gets a release signed after the re-binding.
RELEASE_OF = {"bw": ("6.4.3", "60403-128", "jammy", "22.04"),
              "tx": ("7.2.1", "70201-81", "noble", "24.04")}  # fmt: skip


@pytest.fixture(scope="module")
def installed(lab) -> dict[str, dict[str, str]]:
    """Both hosts with AMD's rocminfo from repo.radeon.com behind the pin (the tests below
    start from it, in any order): what apt and rocminfo said on each, before and after the
    pin."""

    def install(host: str) -> dict[str, str]:
        version, _, suite, _ = RELEASE_OF[host]
        sh(lab, host, "apt-get update -q && apt-get install -y -q ca-certificates gnupg curl")
        sh(
            lab,
            host,
            "mkdir -p /etc/apt/keyrings && curl -fsS https://repo.radeon.com/rocm/rocm.gpg.key"
            " | gpg --dearmor > /etc/apt/keyrings/rocm.gpg && "
            f"echo {shlex.quote(ROCM_SOURCE.format(path=version, suite=suite))}"
            " > /etc/apt/sources.list.d/rocm.list && apt-get update -q",
        )
        unpinned = sh(lab, host, "apt-cache policy rocminfo")
        sh(lab, host, f"printf {shlex.quote(PIN)} > /etc/apt/preferences.d/rocm-pin-600")
        sh(lab, host, "apt-get install -y -q rocminfo")
        pinned = sh(lab, host, "apt-cache policy rocminfo")
        info = sh(lab, host, "/opt/rocm/bin/rocminfo; cat /opt/rocm/.info/version")
        as_alice = lab.ssh(host, "runuser -u alice -- /opt/rocm/bin/rocminfo")
        return {"unpinned": unpinned, "pinned": pinned, "info": info, "alice": as_alice.stdout}

    return on_both(install)


@pytest.mark.lab
def test_apt_installs_rocminfo_from_repo_radeon_com_with_the_pin(lab, installed):
    results = installed
    for host, res in results.items():
        version, tag, _, ubuntu = RELEASE_OF[host]
        # Debian's own rocminfo wins without AMD's pin: the double keeps that trap real.
        candidate = re.search(r"Candidate: (\S+)", res["unpinned"]).group(1)
        assert not candidate.startswith("1.0.0."), res["unpinned"]
        assert f"Installed: 1.0.0.{tag}~{ubuntu}" in res["pinned"], res["pinned"]
        escaped = re.escape(version)
        assert re.search(rf"600 https://repo\.radeon\.com/rocm/apt/{escaped} \w+/main",
                         res["pinned"])  # fmt: skip
        assert f"{version}-{tag.split('-')[1]}" in res["info"]
        assert 'not member of "render" group' in res["alice"]
    assert results["bw"]["info"].count("Device Type:             GPU") == 1
    assert results["tx"]["info"].count("Device Type:             GPU") == 8
    https = [r for r in lab.server.requests("repo.radeon.com") if r["scheme"] == "https"]
    paths = [unquote(r["path"]) for r in https]  # apt sends ~ as %7e
    assert any(p.endswith("/rocminfo_1.0.0.60403-128~22.04_amd64.deb") for p in paths), paths


@pytest.mark.lab
def test_trixies_apt_rejects_what_amd_signed_under_the_sha1_binding(lab, installed):
    """The message real trixie hosts print for rocm/apt/6.4.3 (ROCm/legacy-rocm-build issue
    #5232), from the lab's real apt and sqv; bookworm's gpgv took the same repository
    (``installed``)."""
    source = ROCM_SOURCE.format(path="6.4.3", suite="noble")
    proc = lab.ssh(
        "tx",
        f"cp /etc/apt/sources.list.d/rocm.list /tmp/rocm.list.keep && "
        f"echo {shlex.quote(source)} > /etc/apt/sources.list.d/rocm.list && apt-get update -q; "
        "rc=$?; cp /tmp/rocm.list.keep /etc/apt/sources.list.d/rocm.list; exit $rc",
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert f"Signing key on {lab.lab_key_fingerprint} is not bound" in out, out
    assert "No binding signature at time 2025-08-07T19:56:47Z" in out, out
    assert "SHA1 is not considered secure since 2026-02-01" in out, out
    assert (
        "The repository 'https://repo.radeon.com/rocm/apt/6.4.3 noble InRelease' is not signed"
        in out
    )


@pytest.mark.lab
def test_upgrade_to_a_newer_rocm_release_moves_opt_rocm(lab, installed):
    source = ROCM_SOURCE.format(path="7.2.1", suite="jammy")
    out = sh(
        lab,
        "bw",
        f"echo {shlex.quote(source)} > /etc/apt/sources.list.d/rocm.list && "
        "apt-get update -q >/dev/null && apt-get install -y -q rocminfo >/dev/null && "
        "dpkg-query -W rocminfo rocm-core && readlink -f /opt/rocm && "
        "ls -d /opt/rocm-* && /opt/rocm/bin/rocminfo | grep -c generic",
    )
    assert "rocminfo\t1.0.0.70201-81~22.04" in out
    assert "rocm-core\t7.2.1.70201-81~22.04" in out
    assert "/opt/rocm-7.2.1\n" in out
    assert "/opt/rocm-6.4.3" not in out  # the old release's files went with its package


@pytest.mark.lab
def test_pip_installs_torch_from_download_pytorch_org_through_the_lab_ca(lab, installed):
    """From the hosts with apt's lists and AMD's rocminfo (``installed``): a GPU-less
    host's rocminfo is read at the end."""
    check = (
        "import torch, torchvision; c = torch.cuda; "
        "x = torch.ones(64, 32, device='cuda') @ torch.ones(32, 8, device='cuda'); "
        "print(torch.__version__, torchvision.__version__, torch.version.hip, "
        "torch.version.cuda, c.is_available(), c.device_count(), c.get_device_name(0), "
        "c.get_device_properties(0).gcnArchName, x.sum().item(), x.cpu().device, sep='|')"
    )

    def install(host: str) -> str:
        sh(lab, host, "apt-get install -y -q python3-venv >/dev/null")
        sh(
            lab,
            host,
            "python3 -m venv /opt/venv && /opt/venv/bin/pip install -q "
            "--index-url https://download.pytorch.org/whl/rocm6.4 "
            "torch==2.9.1+rocm6.4 torchvision",
        )
        return sh(lab, host, f"/opt/venv/bin/python -c {shlex.quote(check)}").strip()

    out = on_both(install)
    assert out["bw"] == (
        "2.9.1+rocm6.4|0.24.1+rocm6.4|6.4.43482-0f2d60242|None|True|1|"
        "Radeon RX 7900 XTX|gfx1100|16384.0|cpu"
    )
    assert out["tx"].split("|")[4:8] == [
        "True",
        "8",
        "AMD Instinct MI300X",
        "gfx942:sramecc+:xnack-",
    ]
    fetched = [r["path"] for r in lab.server.requests("download.pytorch.org")]
    assert "/whl/rocm6.4/torch/" in fetched
    assert any("torch-2.9.1%2Brocm6.4" in p for p in fetched)
    # No GPU: torch falls back like a real CPU-only host.
    lab.set_profile("bw", "none")
    try:
        probe = "import torch; print(torch.cuda.is_available(), torch.cuda.device_count())"
        assert sh(lab, "bw", f"/opt/venv/bin/python -c {shlex.quote(probe)}").strip() == ("False 0")
        proc = lab.ssh("bw", "/opt/rocm/bin/rocminfo")
        assert proc.returncode == 1 and "NOT loaded" in proc.stdout
    finally:
        lab.set_profile("bw", "rx7900xtx")


@pytest.mark.lab
def test_faults_can_be_injected_per_upstream(lab):
    url = "https://download.pytorch.org/whl/rocm6.4/"
    curl = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", lab.ca_cert]
    resolve = ["--resolve", "download.pytorch.org:443:10.213.0.1"]
    assert lab.run([*curl, *resolve, url]).stdout == "200"
    lab.server.set_down("download.pytorch.org")
    try:
        assert lab.run([*curl, *resolve, url]).stdout == "503"
        lab.server.set_down("download.pytorch.org", mode="drop")
        assert lab.run([*curl, *resolve, url]).returncode != 0
    finally:
        lab.server.set_down("download.pytorch.org", False)
    assert lab.run([*curl, *resolve, url]).stdout == "200"


@pytest.mark.lab
def test_routes_to_the_doubles_close_per_host_and_the_server_sends_ranges(lab):
    key = "https://repo.radeon.com/rocm/rocm.gpg.key"
    # apt's own downloader: in every root, whatever the tests before installed.
    fetch = "/usr/lib/apt/apt-helper download-file http://repo.radeon.com/rocm/rocm.gpg.key /tmp/k"
    lab.close_upstreams(hosts=["bw"])
    try:
        assert lab.closed_upstreams("bw") == list(DOUBLES)  # the Core SDK's hosts too
        assert lab.closed_upstreams("tx") == []
        stable_key = "http://stable.repo.amd.com/rocm/gpg/packages.gpg"
        for command in (fetch, f"/usr/lib/apt/apt-helper download-file {stable_key} /tmp/k"):
            closed = lab.ssh("bw", command)
            assert closed.returncode != 0 and "No route to host" in closed.stdout + closed.stderr
        sh(lab, "tx", fetch)
        # The Debian mirror stays reachable (it is the server's own address).
        release = f"{lab.debian_mirror}/dists/bookworm/InRelease"
        sh(lab, "bw", f"/usr/lib/apt/apt-helper download-file {release} /tmp/release")
    finally:
        lab.open_upstreams(hosts=["bw"])
    sh(lab, "bw", fetch)
    # From the client netns the names resolve to the doubles too (rocm-fleet bundle runs there).
    before = len(lab.server.requests("repo.radeon.com"))
    curl = ["curl", "-sS", "--cacert", str(lab.ca_cert), key]
    assert lab.run([*curl, "-r", "10-19"]).stdout == lab.run(curl).stdout[10:20]
    ranged, whole = lab.server.requests("repo.radeon.com")[before:]
    assert (ranged["status"], ranged["range"], ranged["bytes"]) == (206, "bytes=10-19", 10)
    assert whole["status"] == 200 and whole["bytes"] > 10


@pytest.mark.lab
def test_hosts_can_be_stopped_restarted_and_left_unreachable(lab):
    refused = lab.ssh("down", "true", timeout=30)
    assert refused.returncode == 255 and "refused" in refused.stderr
    sh(lab, "tx", "nohup sleep 600 >/dev/null 2>&1 &")
    lab.stop_host("tx")
    assert lab.ssh("tx", "true", timeout=30).returncode == 255
    lab.start_host("tx")
    out = sh(lab, "tx", "hostname; ps -e -o comm= | grep -c sleep || true")
    assert out.split() == ["tx", "0"]  # a restart is a reboot: no process survived
    lab.restart_host("tx")
    assert sh(lab, "tx", "cat /proc/1/comm").strip() == "sshd"


@pytest.mark.lab
def test_pyinfra_reports_the_unreachable_host_as_failed(lab):
    result = lab.pyinfra(lab.inventory, "exec", "--", "true", json=True, check=False)
    assert result.returncode == 1
    assert result.json["results"]["failed_hosts"] == ["down"]
    assert sorted(result.json["results"]["operations"][0]["success"]) == ["bw", "tx"]
    facts = lab.pyinfra(lab.inventory, "fact", "server.Hostname", json=True, limit="bw,tx")
    assert facts.json == {"server.Hostname": {"bw": "bw", "tx": "tx"}}


@needs_root
@pytest.mark.lab
@needs_root
def test_converged_hosts_start_as_the_deploy_left_them_and_a_run_changes_nothing():
    """Two hosts of one kind (test_audit.py's, with torch): converged by this lab and saved,
    or restored from the cache; either way the deploy finds nothing to do, and each host
    keeps its own name."""
    data = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
            "rocm_users": ["alice"]}  # fmt: skip
    hosts = [HostSpec(n, data=data, converged=True) for n in ("cv1", "cv2")]
    saved = converged.path(upstreams.identity(), hosts[0], [release("6.4.3")], False)
    cached = saved.exists()
    with Lab(hosts=hosts, rocm_releases=["6.4.3"]) as lab:
        assert saved.is_dir() and ("converge" in lab.timings) is not cached, lab.timings
        result = lab.pyinfra(lab.inventory, "deploy.py", json=True)
        ops = result.json["results"]["operations"]
        assert [(op["name"], op["success"]) for op in ops if op["success"]] == []
        assert [sh(lab, n, "cat /etc/hostname").strip() for n in lab.hosts] == ["cv1", "cv2"]
        assert "rocm-hip-runtime" in sh(lab, "cv2", "dpkg-query -W -f='${Package}\\n'")
        assert sh(lab, "cv2", "/opt/rocm-fleet/venv/bin/python -c 'import torch'") == ""


@pytest.mark.lab
def test_teardown_leaves_nothing_behind_even_on_error():
    held: dict = {}
    solo = [HostSpec("solo", suite="trixie", profile="w7900")]
    with pytest.raises(RuntimeError, match="boom"), Lab(hosts=solo) as lab:
        held = lab.resources()
        assert lab.ssh("solo", "cat /etc/rocm-fleet-lab/gpus").stdout.startswith("gfx1100|")
        raise RuntimeError("boom")
    assert held["pids"] and held["netns"] and held["mounts"]
    for pid in held["pids"]:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in netns for ns in held["netns"])
    assert held["netns_etc"] and not any(Path(etc).exists() for etc in held["netns_etc"])
    mounts = Path("/proc/mounts").read_text()
    assert not any(m in mounts for m in held["mounts"])
    assert not Path(held["workdir"][0]).exists()
    workdir = held["workdir"][0]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            root = os.readlink(proc / "root")
        except OSError:
            continue
        assert workdir not in cmdline and workdir not in root, (proc.name, cmdline)


KILLED_LAB = """
import sys, time
from lab import HostSpec, Lab
with Lab(hosts=[HostSpec("k1", suite="bookworm", profile="none")]) as lab:
    print(lab.workdir, lab.run_id, flush=True)
    time.sleep(600)
"""


@needs_root
@pytest.mark.lab
def test_cleanup_stale_removes_what_a_killed_lab_left():
    from lab import cleanup_stale

    tests_dir = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_LAB],
        stdout=subprocess.PIPE,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": tests_dir},
    )
    try:
        workdir, run_id = proc.stdout.readline().split()
    finally:
        proc.kill()  # SIGKILL: no __exit__, everything is left behind
        proc.wait()
    assert (
        f"rflab-{run_id}-c"
        in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    )
    done = cleanup_stale()
    assert any(line.startswith("killed pid") for line in done), done
    assert f"removed {workdir}" in done
    assert (
        f"rflab-{run_id}"
        not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    )
    assert workdir not in Path("/proc/mounts").read_text()
    assert not Path(workdir).exists()
