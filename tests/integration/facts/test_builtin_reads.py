"""The survey's reads done with shell builtins instead of a process (grep, sed, cat, id -u,
a pipeline stage) answer as the command they replaced did: both run under dash on the
same files (missing, empty, no trailing newline, CRLF, a long line, backslashes, comments,
blanks), compared line by line as pyinfra hands lines to the fact (lines split at newline)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rocm_fleet import assets
from rocm_fleet.facts.apt import AptSourceLines, DebianMirror
from rocm_fleet.facts.boot import BootKernels, sections
from rocm_fleet.facts.gpu import PciGpus, RocmVersion
from rocm_fleet.facts.python import TorchBuildStrings
from rocm_fleet.facts.system import ApuMemory, Identity
from rocm_fleet.model import paths
from unit.facts.support import DASH, FIXTURES, fake_tool

LONG = "x" * 20000

# Each file's contents, on top of a missing file: what the old and new commands must agree on.
TEXTS = {
    "empty": "",
    "plain": "one\ntwo\n",
    "no_newline": "deb http://deb.debian.org/debian bookworm main",
    "crlf": "deb http://deb.debian.org/debian bookworm main\r\nURIs: http://a/debian\r\n",
    "long": f"{LONG} repo.radeon.com\ndeb {LONG}\n",
    "backslash": "deb [a=\\b] http://x\\y/debian b\\\nhip = '6.2\\n'\\\n",
    "sources": (
        "# deb http://repo.radeon.com/rocm/apt/6.4 jammy main\n"
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/rocm "
        "jammy main\n"
        "  deb\thttp://deb.debian.org/debian  bookworm main\n"
        "deb\t [broken http://x/debian b\n"
        "deb [x] \t http://y/debian\tb\n"
        "deb-src http://deb.debian.org/debian bookworm main\n"
        "deb \n"
        "deb [only\n"
        "Types: deb\nURIs:   http://deb.debian.org/debian  http://m/debian\nURIs:\nuris: x\n"
        " URIs: http://z/debian\nhttps://repo.amd.com/rocm/packages/debian12 stable main\n"
    ),
    "torch": (
        "__version__ = '2.6.0+rocm6.4'\n"
        "debug = False\ncuda: Optional[str] = None\nhip: Optional[str] = '6.4.43482'\n"
        "hip = '6.2'\ncudart = 1\n hip = 'indented'\nhipify='x'\nhip='6.3'\ncuda='12.4'"
    ),
    "grub": (
        "GRUB_DEFAULT=0\n  GRUB_DEFAULT=saved\n#GRUB_DEFAULT=1\nGRUB_TIMEOUT=5\n"
        '\tGRUB_DEFAULT="1>2"\r\nGRUB_DEFAULTS=x\nGRUB_DEFAULT=last'
    ),
}


def run(command: str, env: dict[str, str] | None = None) -> list[bytes]:
    """``command``'s output under dash, split into lines at newline as pyinfra splits it."""
    out = subprocess.run(
        [DASH, "-c", command], capture_output=True, env=env, timeout=60, check=False
    ).stdout
    return out.removesuffix(b"\n").split(b"\n") if out else []


def agree(old: str, new: str, env: dict[str, str] | None = None) -> list[bytes]:
    before, after = run(old, env), run(new, env)
    assert after == before
    return after


def each_text(tmp_path: Path):
    """(name, path) of each of TEXTS written to a file, and of a missing one."""
    yield "missing", tmp_path / "missing"
    for name, text in TEXTS.items():
        path = tmp_path / name
        path.write_bytes(text.encode())
        yield name, path


def test_apt_source_lines_as_grep_found_them(tmp_path):
    hosts = ["repo.radeon.com", "repo.amd.com"]
    new = AptSourceLines().command(hosts=hosts)
    old = "grep -Hs -e 'repo\\.radeon\\.com' -e 'repo\\.amd\\.com' {list} {parts}/* || true"
    parts = tmp_path / "sources.list.d"
    parts.mkdir()
    (parts / "a directory").mkdir()
    seen = []
    for name, path in each_text(tmp_path):
        (parts / f"{name}.list").write_bytes(path.read_bytes() if path.exists() else b"x")
        swap = {paths.APT_SOURCES_LIST: str(path), paths.APT_SOURCES_PARTS: str(parts)}
        seen += agree(old.format(list=path, parts=parts), replaced(new, swap))
    assert any(b"https://repo.radeon.com/rocm" in line for line in seen)
    assert any(b"repo.amd.com" in line for line in seen)
    empty = tmp_path / "empty.d"  # nothing in the folder: the glob stays a word
    empty.mkdir()
    swap = {paths.APT_SOURCES_LIST: str(tmp_path / "missing"), paths.APT_SOURCES_PARTS: str(empty)}
    assert agree(old.format(list=tmp_path / "missing", parts=empty), replaced(new, swap)) == []


def test_debian_mirror_as_sed_found_it(tmp_path):
    deb822, one_line = paths.DEBIAN_SOURCES
    old = (
        "! test -r {a} || sed -n 's/^URIs:[[:space:]]*//p' {a}; ! test -r {b} || sed -n "
        "'s/^deb[[:space:]]\\+\\(\\[[^]]*\\][[:space:]]*\\)\\?\\([^[:space:]]*\\).*/\\2/p' {b}"
    )
    seen = []
    for _, path in each_text(tmp_path):
        for a, b in ((path, tmp_path / "missing"), (tmp_path / "missing", path), (path, path)):
            new = replaced(DebianMirror().command(), {deb822: str(a), one_line: str(b)})
            seen += agree(old.format(a=a, b=b), new)
    for uri in (b"http://deb.debian.org/debian  http://m/debian", b"[broken", b"http://y/debian"):
        assert uri in seen


def test_torch_build_strings_as_grep_found_them(tmp_path):
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.12" / "site-packages" / "torch"
    site.mkdir(parents=True)
    old = (
        f'for f in {venv}/lib/python3*/site-packages/torch/version.py; do [ -r "$f" ] '
        "&& grep -E '^(hip|cuda)[ :=]' \"$f\" && echo __torch; done; true"
    )
    new = TorchBuildStrings().command(venv=str(venv))
    assert agree(old, new) == []  # no version.py
    seen = []
    for _, path in each_text(tmp_path):
        if path.exists():
            (site / "version.py").write_bytes(path.read_bytes())
            seen += agree(old, new)
    assert seen.count(b"__torch") == 2  # the backslash and torch texts
    assert b"hip: Optional[str] = '6.4.43482'" in seen and b"cuda='12.4'" in seen


def test_rocm_version_as_cat_printed_it(tmp_path):
    rocm = tmp_path / "rocm"
    (rocm / ".info").mkdir(parents=True)
    old = f'for f in {rocm}/.info/version; do if [ -r "$f" ]; then cat "$f"; break; fi; done; true'
    new = RocmVersion().command(rocm_path=str(rocm))
    assert agree(old, new) == []
    for _, path in each_text(tmp_path):
        if path.exists():
            (rocm / ".info" / "version").write_bytes(path.read_bytes())
            agree(old, new)
    (rocm / ".info" / "version").unlink()
    (rocm / ".info" / "version").mkdir()  # unreadable as a file: nothing, as cat printed
    assert agree(old, new) == []


def test_grub_default_lines_as_grep_and_sed_gave_them(tmp_path):
    new = BootKernels().command()
    start = new.index("echo __section=default")
    new = new[start : new.index("\n", new.index("\n", start) + 1)]
    grub = paths.DEFAULT_GRUB
    old = "grep -sh '^[[:space:]]*GRUB_DEFAULT=' {a} {a}.d/*.cfg | sed 's/^/|/'"
    seen = []
    for _, path in each_text(tmp_path):
        for dropin in ("", "GRUB_DEFAULT=7", "GRUB_DEFAULT=8\n"):
            drop = tmp_path / f"{path.name}.d"
            drop.mkdir(exist_ok=True)
            if dropin:
                (drop / "x.cfg").write_text(dropin)
            before = run("echo __section=default; " + old.format(a=path))
            after = run(replaced(new, {grub: str(path)}))
            # The lines the fact reads (sections() keeps those starting with "|").
            assert sections([line.decode() for line in after]) == sections(
                [line.decode() for line in before]
            )
            seen += after
    assert b'|\tGRUB_DEFAULT="1>2"\r' in seen and b"|GRUB_DEFAULT=last" in seen


def test_installed_matching_filters_as_grep_cut_grep_did(tmp_path):
    listing = (
        "ii |rocm-core|7.2.1.70201-81~22.04\n"
        "iF |rocm-smi-lib|7.0.0-1\n"
        "rc |rocminfo|6.1.2-1\n"
        "un |rocm-cmake|\n"
        "hi |rocm-device-libs|6.1.2-1|x\n"
        "iU |hipcc|5.7.1-3\n"
        "ii |libamdhip64-5|5.2.3-12\n"
    )
    (tmp_path / "listing").write_text(listing)
    fake_tool(tmp_path, "dpkg-query", f"cat {tmp_path / 'listing'}\n")
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    new = assets.text("scripts/apt-query.sh")
    pipeline = "sed -n 's/^.[^nc][^|]*|//p' | grep -Ev \"$not_line\""
    assert pipeline in new
    old = new.replace(pipeline, "grep -E '^.[^nc]' | cut -d'|' -f2- | grep -Ev \"$not_line\"")
    not_amd = "^[^|]*\\|([0-9]+:)?[0-9]+\\.[0-9]+\\.[0-9]+\\.([0-9]{5})-"
    found = {}
    for args in (f"'' '{not_amd}' 'rocm*' hipcc", "'' '' '*'", "'hip*' '' '*'"):
        call = f"set -f; installed_matching {args}"
        found[args] = agree(f"{old}\n{call}", f"{new}\n{call}", env)
    assert list(found.values()) == [
        [b"rocm-smi-lib|7.0.0-1", b"rocm-device-libs|6.1.2-1|x", b"hipcc|5.7.1-3",
         b"libamdhip64-5|5.2.3-12"],
        [b"rocm-core|7.2.1.70201-81~22.04", b"rocm-smi-lib|7.0.0-1",
         b"rocm-device-libs|6.1.2-1|x", b"hipcc|5.7.1-3", b"libamdhip64-5|5.2.3-12"],
        [b"rocm-core|7.2.1.70201-81~22.04", b"rocm-smi-lib|7.0.0-1",
         b"rocm-device-libs|6.1.2-1|x", b"libamdhip64-5|5.2.3-12"],
    ]  # fmt: skip


def test_pci_drivers_as_readlink_named_them(tmp_path):
    new = PciGpus().command()
    readlink = 'drv=-; if [ -e "$d/driver" ]; then drv=$(readlink "$d/driver"); fi; '
    start, end = new.index("drv=-;"), new.index("vram=-;")
    old = new[:start] + readlink + new[end:]
    hosts = sorted(p.name for p in (FIXTURES / "sysfs").iterdir() if (p / "bus").is_dir())
    drivers = set()
    for host in hosts:
        root = FIXTURES / "sysfs" / host
        found = agree(old.replace("/sys/", f"{root}/"), new.replace("/sys/", f"{root}/"))
        drivers |= {line.split()[4] for line in found}
    assert {b"amdgpu", b"ast", b"-"} <= drivers
    # the shell's working directory is where it was
    assert (
        run(f"cd {tmp_path} && {new.replace('/sys/', f'{FIXTURES}/sysfs/mi300x_x8/')}; pwd")[-1]
        == str(tmp_path).encode()
    )


def test_identity_as_id_said(tmp_path):
    missing = str(tmp_path / "missing")
    assert run(Identity().command()) == run("id -u; id -un")
    assert run(Identity().command().replace("/proc/self/status", missing)) == run("id -u; id -un")


def test_mem_total_read_up_to_its_line(tmp_path):
    old_loop = (
        'while read -r _k _v _; do [ "$_k" != MemTotal: ] || echo "mem_total $_v"; '
        "done 2>/dev/null </proc/meminfo"
    )
    new = ApuMemory().command()
    assert run(new)[0] == run(old_loop)[0] and run(new)[0].startswith(b"mem_total ")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       65536 kB\nMemFree: 1 kB\n")
    swap = {"/proc/meminfo": str(meminfo)}
    assert run(replaced(new, swap))[:1] == run(replaced(old_loop, swap)) == [b"mem_total 65536"]


def replaced(command: str, swaps: dict[str, str]) -> str:
    """``command`` with each path of ``swaps`` (longest first) swapped for a test's own."""
    for path in sorted(swaps, key=len, reverse=True):
        assert path in command
        command = command.replace(path, swaps[path])
    return command


@pytest.fixture(autouse=True)
def _dash():
    if not DASH or not DASH.endswith("dash"):
        pytest.skip("dash not installed")
