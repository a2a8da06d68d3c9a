"""The tests of tests/unit/facts/test_gpu.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import json

import pytest

from rocm_fleet.facts._shell import print_file
from rocm_fleet.facts.gpu import (
    KfdNodes,
    PciGpus,
    RocmAgents,
    RocmVersion,
)
from rocm_fleet.model.pci_ids import AMD_VENDOR
from unit.facts.support import FIXTURES, fake_tool, fixture, run_sh
from unit.facts.test_gpu import agents


def test_rocminfo_command_runs_the_releases_own_and_always_exits_zero(tmp_path):
    """The release's rocminfo (its path comes from the matrix), never one on PATH: that may
    be Debian's, which would vouch for AMD's packages it isn't."""
    rocminfo = tmp_path / "core 10.1's" / "bin" / "rocminfo"
    command = RocmAgents().command(rocminfo=str(rocminfo))
    assert "command -v" not in command
    fake_tool(tmp_path, "rocminfo", "echo Debian\n")  # on PATH, never run
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    assert run_sh(command, env) == (0, ["__absent"])
    rocminfo.parent.mkdir(parents=True)
    fake_tool(rocminfo.parent, "rocminfo", 'cat "$FIXTURE"; exit 1\n')
    env["FIXTURE"] = str(FIXTURES / "rocminfo" / "not_loaded.txt")
    rc, out = run_sh(command, env)
    assert rc == 0
    assert out[-1] == "__rc=1"
    assert RocmAgents().process(out)["status"] == "not_loaded"


def test_rocm_version_command_idiom_and_quoting(tmp_path):
    # Both streams' files, the classic one first (/opt/rocm is a link to the release there,
    # a directory of links with core -> core-X.Y under the Core SDK).
    show = print_file('"$f"')  # cat "$f" as builtins
    assert RocmVersion().command() == (
        "for f in /opt/rocm/.info/version /opt/rocm/core/.info/version; do "
        f'if [ -r "$f" ]; then {show}; break; fi; done; true'
    )
    odd = tmp_path / "rocm 6.4 's"
    assert RocmVersion().command(rocm_path=str(odd) + "/") == (
        f"for f in '{tmp_path}/rocm 6.4 '\"'\"'s/.info/version'; do "
        f'if [ -r "$f" ]; then {show}; break; fi; done; true'
    )
    assert run_sh(RocmVersion().command(rocm_path=str(odd))) == (0, [])  # absent: exit 0
    (odd / ".info").mkdir(parents=True)
    (odd / ".info" / "version").write_text(fixture("rocm", "version-6.4.3"))
    rc, out = run_sh(RocmVersion().command(rocm_path=str(odd)))
    assert (rc, RocmVersion().process(out)) == (0, "6.4.3-128")


def sysfs_command(command: str, host: str) -> str:
    root = FIXTURES / "sysfs" / host
    assert " " not in str(root)
    return command.replace("/sys/", f"{root}/")


def run_fact(fact, host: str):
    rc, out = run_sh(sysfs_command(fact.command(), host))
    assert rc == 0
    return fact.process(out) if out else fact.default()


def amd(
    slot: str,
    device: str,
    pci_class: str = "0x030000",
    driver: str | None = "amdgpu",
    vram_total: int | None = None,
    gtt_total: int | None = None,
):
    return {"slot": slot, "vendor": "0x1002", "device": device, "class": pci_class,
            "driver": driver, "vram_total": vram_total, "gtt_total": gtt_total}  # fmt: skip


# Every display and accelerator device, whatever its vendor (the MI300X server's ASPEED BMC
# VGA too: preflight says what a host has when it has no AMD GPU); audio functions and the
# host bridge are not read.
@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("rx7900xtx", [amd("0000:03:00.0", "0x744c")]),
        ("rx9070xt_igpu",
         [amd("0000:03:00.0", "0x7550"), amd("0000:76:00.0", "0x164e", driver=None)]),
        (
            "mi300x_x8",
            [{"slot": "0000:02:00.0", "vendor": "0x1a03", "device": "0x2000",
              "class": "0x030000", "driver": "ast", "vram_total": None, "gtt_total": None}]
            + [amd(f"0000:{bus}:00.0", "0x74a1", "0x120000")
               for bus in ("1b", "3d", "4e", "5f", "9d", "bd", "cd", "dd")],
        ),
    ],
)  # fmt: skip
def test_pci_gpus_from_sysfs(host, expected):
    assert run_fact(PciGpus(), host) == expected


def test_an_apus_memory_totals_are_read_from_amdgpus_files_in_bytes():
    # A Strix Halo's iGPU with amdgpu bound: mem_info_vram_total is the firmware's 4 GiB
    # carve-out, mem_info_gtt_total the 96 GiB of system memory it may map (tests/fixtures/
    # README.md, sysfs/strixhalo); a discrete card's tree without the files reads None.
    (gpu,) = run_fact(PciGpus(), "strixhalo")
    assert gpu == amd("0000:c6:00.0", "0x1586", "0x038000", vram_total=4 * 2**30,
                      gtt_total=96 * 2**30)  # fmt: skip
    # the form before the totals were read (5 fields) still parses
    old = PciGpus().process(["0000:03:00.0 0x1002 0x744c 0x030000 amdgpu"])
    assert old == [amd("0000:03:00.0", "0x744c")]


def test_pci_gpus_without_devices(tmp_path):
    command = PciGpus().command().replace("/sys/bus/pci/devices", str(tmp_path))
    assert run_sh(command) == (0, [])
    assert PciGpus().default() == []


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("rx7900xtx", [(1, "gfx1100", "0x744c", "0000:03:00.0", 128)]),
        (
            "rx9070xt_igpu",
            [
                (1, "gfx1201", "0x7550", "0000:03:00.0", 128),
                (2, "gfx1036", "0x164e", "0000:76:00.0", 129),
            ],
        ),
        (
            "mi300x_x8",
            [
                (node, "gfx942", "0x74a1", f"0000:{bus}:00.0", 128 + 8 * (node - 2))
                for node, bus in zip(
                    range(2, 10), ("1b", "3d", "4e", "5f", "9d", "bd", "cd", "dd"), strict=True
                )
            ],
        ),
    ],
)
def test_kfd_nodes_skip_cpu_nodes_and_decode_gfx(host, expected):
    nodes = run_fact(KfdNodes(), host)
    got = [(n["node"], n["gfx"], n["device_id"], n["slot"], n["drm_render_minor"]) for n in nodes]
    assert got == expected
    json.dumps(nodes)


def test_kfd_slots_match_pci_and_rocminfo():
    kfd = {n["slot"] for n in run_fact(KfdNodes(), "mi300x_x8")}
    pci = {g["slot"] for g in run_fact(PciGpus(), "mi300x_x8") if g["vendor"] == AMD_VENDOR}
    rocm = {"0000:" + g["pci_bdf"] for g in agents("mi300x_x8.txt", 0)["gpus"]}
    assert kfd == pci == rocm


def test_kfd_nodes_sorted_numerically_and_absent_tree(tmp_path):
    output = ["__kfd"]
    for node in (10, 2, 0):
        output += [f"__node={node}", f"gfx_target_version {90402 if node else 0}", "simd_count 4"]
    assert [n["node"] for n in KfdNodes().process(output)] == [2, 10]
    assert KfdNodes().process([]) is None
    command = KfdNodes().command().replace("/sys/class/kfd/kfd/topology/nodes", str(tmp_path / "x"))
    assert run_sh(command) == (0, [])
