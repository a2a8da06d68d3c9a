"""rocm_fleet.facts.apt: dpkg's listing, keyrings and apt's sources, with fake tools on
PATH and /etc/apt trees built in tmp_path.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rocm_fleet.facts.apt import (
    AptSourceLines,
    CandidateVersions,
    DebianMirror,
    DpkgInterrupted,
    InstalledPackages,
    KeyringFingerprints,
)
from rocm_fleet.model.versions import kernel_releases
from unit.facts.support import fake_tool, run_sh


def test_keyring_fingerprints_reads_the_file_itself(tmp_path):
    # Keys gpg made are read against gpg in test_matrix_check; here the fact's plumbing.
    fact = KeyringFingerprints()
    assert fact.process(["__missing"]) is None
    assert fact.process([]) == []  # an empty file holds no key
    assert fact.process(["not base64!"]) == []
    assert "'/etc/apt/keyrings/my keys.gpg'" in fact.command("/etc/apt/keyrings/my keys.gpg")
    assert fact.process(run_sh(fact.command(str(tmp_path / "none")))[1]) is None
    garbage = tmp_path / "garbage.gpg"
    garbage.write_bytes(bytes(range(256)) * 8)  # not OpenPGP packets: no fingerprint
    assert fact.process(run_sh(fact.command(str(garbage)))[1]) == []


# dpkg-query's listing parsed: tests/unit/facts/cases/apt.InstalledPackages/.


def test_installed_packages_command_under_dash(tmp_path):
    fake_tool(tmp_path, "dpkg-query", 'printf "%s\\n" "ii |curl|7.88.1" "rc |gone|1"; exit 1\n')
    rc, out = run_sh(InstalledPackages().command(), {"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert (rc, InstalledPackages().process(out)) == (0, {"curl": "7.88.1"})
    if shutil.which("dpkg-query"):  # this machine's own listing
        packages = InstalledPackages().process(run_sh(InstalledPackages().command())[1])
        bash = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "bash"], capture_output=True,
                              text=True, check=False).stdout  # fmt: skip
        assert packages["bash"] == bash


def test_kernel_releases_from_the_image_packages():
    packages = {
        "linux-image-6.1.0-31-amd64": "6.1.128-1",
        "linux-image-6.12.38+deb12-amd64": "6.12.38-1~bpo12+1",
        "linux-image-amd64": "6.12.38-1~bpo12+1",  # meta package
        "linux-image-unsigned-6.8.0-50-generic": "6.8.0-50.51",
        "linux-image-generic-hwe-24.04": "6.14.0-37.37~24.04.1",  # meta package
        "linux-headers-6.1.0-31-amd64": "6.1.128-1",
        "curl": "7.88.1-10+deb12u14",
    }
    assert kernel_releases(packages) == [
        "6.1.0-31-amd64", "6.12.38+deb12-amd64", "6.8.0-50-generic"
    ]  # fmt: skip
    assert kernel_releases({}) == []


def test_dpkg_interrupted_command_under_dash(tmp_path):
    fake_tool(
        tmp_path,
        "dpkg-query",
        r"""printf '%s\n' 'ii |curl|7.88.1-10+deb12u14' 'iF |rocm-core|6.4.3.60403-128~22.04' \
'iU |rocminfo|1.0.0.60403-128~22.04' 'rc |old|1.0' 'un |never|' \
'iiR|hipcc|1.1.1.60403-128~22.04'
""",
    )
    fact = DpkgInterrupted()
    # dpkg's journal directory as a fixture, never this machine's own (which apt changes).
    updates = tmp_path / "dpkg" / "updates"
    updates.mkdir(parents=True)
    command = fact.command.replace("/var/lib/dpkg/updates", str(updates))
    assert command != fact.command
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    rc, out = run_sh(command, env)
    # hipcc: installed, flagged reinstall-required
    interrupted = ["half-configured rocm-core", "unpacked rocminfo", "installed hipcc"]
    assert (rc, fact.process(out)) == (0, interrupted)
    # An unapplied journal entry (dpkg names them 0000, 0001, ...) and a hidden one.
    for name in ("0003", ".0004"):
        (updates / name).write_text("Package: rocm-core\n")
        rc, out = run_sh(command, env)
        assert (rc, fact.process(out)) == (0, ["journal", *interrupted])
        (updates / name).unlink()


APT_SOURCES = {
    "sources.list": "# deb cdrom:[Debian GNU/Linux 12.9.0 _Bookworm_]/ bookworm main\n"
    "deb http://deb.debian.org/debian/ bookworm main non-free-firmware\n",
    "sources.list.d/rocm.list": "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
    "https://repo.radeon.com/rocm/apt/6.2 jammy main\n",
    "sources.list.d/amdgpu.list": "#deb [arch=amd64] https://repo.radeon.com/amdgpu/6.2/ubuntu "
    "jammy main\n",
    "sources.list.d/rocm.sources": "Types: deb\n"
    "URIs: https://repo.amd.com/rocm/packages/ubuntu2404\nSuites: noble\nComponents: main\n",
}


def etc_apt(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        (root / "apt" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "apt" / name).write_text(content)
    return root


def test_apt_source_lines_of_amds_hosts_one_line_and_deb822(tmp_path):
    etc = etc_apt(tmp_path, APT_SOURCES)
    fact = AptSourceLines()
    command = fact.command(hosts=["repo.radeon.com", "repo.amd.com"]).replace("/etc/", f"{etc}/")
    rc, out = run_sh(command)
    assert rc == 0
    assert sorted(fact.process(out)) == [
        [f"{etc}/apt/sources.list.d/rocm.list", APT_SOURCES["sources.list.d/rocm.list"].strip()],
        [f"{etc}/apt/sources.list.d/rocm.sources",
         "URIs: https://repo.amd.com/rocm/packages/ubuntu2404"],
    ]  # fmt: skip
    (tmp_path / "none").mkdir()
    assert run_sh(command.replace(str(etc), str(tmp_path / "none"))) == (0, [])
    assert fact.default() == []


DEBIAN_SOURCES_822 = """\
Types: deb deb-src
URIs: http://ftp.de.debian.org/debian/
Suites: trixie trixie-updates
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.pgp

Types: deb deb-src
URIs: http://security.debian.org/debian-security
Suites: trixie-security
Components: main non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.pgp
"""
SECURITY_FIRST = """\
deb http://security.debian.org/debian-security bookworm-security main non-free-firmware
deb-src http://deb.debian.org/debian bookworm main

# bookworm-updates, to get updates before a point release is made;
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] https://mirror.example.org/debian bookworm main non-free-firmware
"""  # noqa: E501 - a sources.list line as written


@pytest.mark.parametrize(
    ("files", "mirror"),
    [
        ({"sources.list.d/debian.sources": DEBIAN_SOURCES_822}, "http://ftp.de.debian.org/debian"),
        ({"sources.list": SECURITY_FIRST}, "https://mirror.example.org/debian"),
        ({"sources.list": APT_SOURCES["sources.list"]}, "http://deb.debian.org/debian"),
        ({"sources.list.d/debian.sources": DEBIAN_SOURCES_822,
          "sources.list": "# moved to debian.sources\n"}, "http://ftp.de.debian.org/debian"),
        ({"sources.list": "deb http://archive.ubuntu.com/ubuntu noble main\n"}, None),
        ({}, None),
    ],
    ids=["deb822", "one-line with options", "one-line", "both", "ubuntu", "no sources"],
)  # fmt: skip
def test_debian_mirror_from_deb822_and_one_line_sources(tmp_path, files, mirror):
    etc = etc_apt(tmp_path, files)
    (etc / "apt").mkdir(exist_ok=True)
    fact = DebianMirror()
    rc, out = run_sh(fact.command().replace("/etc/", f"{etc}/"))
    assert rc == 0
    assert fact.process(out) == mirror


def test_candidate_versions_asks_this_machines_apt_cache():
    """--diff's new versions from this machine's real apt-cache: the candidate (bash, dash: in
    every Debian), the first version madison lists matching a pattern; a package apt has no
    version of is left out."""
    fact = CandidateVersions()
    rc, out = run_sh(fact.command(["bash", "dash", "rocm-fleet-no-such-package"]))
    found = fact.process(out)
    assert rc == 0 and sorted(found) == ["bash", "dash"], out
    exact = "^" + re.escape(found["bash"]) + "$"
    rc, out = run_sh(fact.command(["bash"], version_regex=exact))
    assert fact.process(out) == {"bash": found["bash"]}
    rc, out = run_sh(fact.command(["bash"], version_regex="^no-such-version$"))
    assert fact.process(out) == {}
