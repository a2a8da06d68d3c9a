"""Slurm's GRES (``model.slurm``, ``facts.slurm``): the type a GPU gets, gres.conf's exact
text and its grammar, ``Gres=`` as slurm.conf and scontrol write it, and real ``scontrol
show node`` output of Debian's Slurm 22.05 (bookworm) and 24.11 (trixie)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

import pytest

from rocm_fleet.facts._shell import RC_PREFIX
from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages
from rocm_fleet.facts.files import FileDigest, Ledger
from rocm_fleet.facts.gpu import KfdNodes
from rocm_fleet.facts.round_trip import Read, Survey
from rocm_fleet.facts.slurm import SlurmNode
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.host_survey import HostSurvey
from rocm_fleet.model.slurm import (
    GresError,
    SlurmGpu,
    SlurmNodeView,
    gpu_type,
    gres_conf,
    gres_mismatch,
    node_gres,
    parse_gres,
    parse_node,
    slurm_gpus,
)
from unit.surveys import SurveyHost, changed, converged_survey, digest, fact_key, plan, script_call

FIXTURES = Path(__file__).parents[1] / "fixtures"
SLURM = FIXTURES / "slurm"
MI300X_NODES = FIXTURES / "sysfs/mi300x_x8/class/kfd/kfd/topology/nodes"


def kfd(gfx: str, device: str | None, minor: int | None) -> dict:
    return {"gfx": gfx, "device_id": device, "drm_render_minor": minor}


@pytest.mark.parametrize(
    ("gfx", "device", "expected"),
    [
        ("gfx942", "0x74a1", "mi300x"),  # Aqua Vanjaram [Instinct MI300X]
        ("gfx942", "0x74a9", "mi300x_hf"),  # [Instinct MI300X HF]
        ("gfx1100", "0x7448", "w7900"),  # Navi 31 [Radeon Pro W7900]
        ("gfx1030", "0x73a3", "w6800"),  # Navi 21 GL-XL [Radeon PRO W6800]
        ("gfx1100", "0x744c", "gfx1100"),  # [Radeon RX 7900 XT/7900 XTX/...]: several
        ("gfx90a", "0x740c", "gfx90a"),  # [Instinct MI250X/MI250]: several
        ("gfx1036", "0x164e", "gfx1036"),  # Raphael: no product named
        ("gfx1100", "0x9999", "gfx1100"),  # not in the table
        ("gfx1100", None, "gfx1100"),
    ],
)
def test_the_type_is_the_product_the_pci_id_names_else_the_gfx_target(gfx, device, expected):
    assert gpu_type(gfx, device) == expected


def test_gres_conf_lists_each_gpu_by_its_render_node():
    nodes = [kfd("gfx942", "0x74a1", 128 + i) for i in reversed(range(8))]
    gpus = slurm_gpus(nodes)
    assert node_gres(gpus) == "gpu:mi300x:8"
    assert gres_conf(gpus) == (
        "# Written by rocm-fleet (rocm_slurm_gres) from this node's GPUs; edits are replaced.\n"
        "# slurm.conf's NodeName line for this node needs: Gres=gpu:mi300x:8\n"
        + "".join(f"Name=gpu Type=mi300x File=/dev/dri/renderD{128 + i}\n" for i in range(8))
    )


def test_the_real_mi300x_topology_gives_its_render_nodes():
    """The KFD properties of a real 8 x MI300X host (tests/fixtures/sysfs), read by the
    deploy's own fact."""
    output = ["__kfd"]
    for node in sorted(MI300X_NODES.iterdir(), key=lambda p: int(p.name)):
        output += [f"__node={node.name}", *(node / "properties").read_text().splitlines()]
    gpus = slurm_gpus(KfdNodes().process(output))
    assert len(gpus) == 8
    assert {gpu.type for gpu in gpus} == {"mi300x"}
    assert len({gpu.file for gpu in gpus}) == 8
    assert all(gpu.file.startswith("/dev/dri/renderD") for gpu in gpus)


def test_mixed_gpus_and_the_sites_type():
    nodes = [kfd("gfx1036", "0x164e", 129), kfd("gfx1100", "0x744c", 128), kfd("x", None, 0)]
    gpus = slurm_gpus(nodes)
    assert [g.file for g in gpus] == ["/dev/dri/renderD128", "/dev/dri/renderD129"]
    assert node_gres(gpus) == "gpu:gfx1100:1,gpu:gfx1036:1"
    assert node_gres(slurm_gpus(nodes, "radeon")) == "gpu:radeon:2"
    assert node_gres([]) == "" and "Gres=(none)" in gres_conf([])


@pytest.mark.parametrize(
    "gpu",
    [
        SlurmGpu("mi300x File=/etc/shadow", "/dev/dri/renderD128"),
        SlurmGpu("mi300x\nName=gpu File=/dev/sda", "/dev/dri/renderD128"),
        SlurmGpu("a:b", "/dev/dri/renderD128"),
        SlurmGpu("", "/dev/dri/renderD128"),
        SlurmGpu("mi300x", "/dev/sda"),
        SlurmGpu("mi300x", "/dev/dri/renderD128 Type=x"),
        SlurmGpu("mi300x", "/dev/dri/renderD128\n"),
    ],
)
def test_gres_conf_refuses_a_value_outside_its_grammar(gpu):
    with pytest.raises(GresError):
        gres_conf([gpu])


@pytest.mark.parametrize("bad", ["mi300x File=/etc/shadow", "a:b", "a,b", "x\nName=gpu", "", 8])
def test_the_type_setting_is_checked_before_anything_runs(bad):
    with pytest.raises(ConfigError, match="rocm_slurm_gres_type"):
        load_config({"rocm_version": "6.4.3", "rocm_slurm_gres_type": bad}, "inventory.py")


def test_the_setting_is_a_real_bool():
    assert load_config({"rocm_version": "6.4.3"}, "i").rocm_slurm_gres is False
    with pytest.raises(ConfigError, match="rocm_slurm_gres"):
        load_config({"rocm_version": "6.4.3", "rocm_slurm_gres": "yes"}, "inventory.py")


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("gpu:mi300x:8", {("gpu", "mi300x"): 8}),
        ("gpu:mi300x:8(S:0-1)", {("gpu", "mi300x"): 8}),
        ("gpu:2", {("gpu", None): 2}),
        ("gpu", {("gpu", None): 1}),
        ("gpu:a:1,gpu:b:2(S:0)", {("gpu", "a"): 1, ("gpu", "b"): 2}),
        ("gpu:a:1,gpu:a:1", {("gpu", "a"): 2}),
        ("(null)", {}),
        ("", {}),
        (None, {}),
    ],
)
def test_gres_values_parse_as_slurm_writes_them(value, parsed):
    assert parse_gres(value) == parsed


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_scontrol_show_node_of_debians_slurm(version):
    """Real output (the lab's Debian slurmctld): a node whose slurm.conf line says
    Gres=gpu:mi300x:8, and one with none."""
    gres = (SLURM / f"scontrol-show-node-{version}-gres.txt").read_text()
    none = (SLURM / f"scontrol-show-node-{version}-none.txt").read_text()
    assert f"Version={version}." in gres
    assert parse_node(gres).gres == "gpu:mi300x:8"
    assert parse_node(none).gres == "(null)"
    fact = SlurmNode()
    view = fact.process(["__node=gpu01", *gres.splitlines(), f"{RC_PREFIX}0"])
    assert view == SlurmNodeView("gpu01", "gpu:mi300x:8")
    gpus = [SlurmGpu("mi300x", f"/dev/dri/renderD{128 + i}") for i in range(8)]
    assert gres_mismatch(gpus, view) is None
    assert gres_mismatch(gpus[:4], view) == (
        "Slurm's node gpu01 has Gres=gpu:mi300x:8; its GPUs need Gres=gpu:mi300x:4 (on its "
        "NodeName line in the controller's slurm.conf, then `scontrol reconfigure` and a "
        "restart of slurmd)"
    )
    other = fact.process(["__node=gpu02", *none.splitlines(), f"{RC_PREFIX}0"])
    assert "has Gres=(null); its GPUs need Gres=gpu:mi300x:8" in gres_mismatch(gpus, other)
    typed = [SlurmGpu("w7900", "/dev/dri/renderD128")] * 8
    assert "need Gres=gpu:w7900:8" in gres_mismatch(typed, view)


def test_slurm_that_cannot_be_asked_says_why():
    fact = SlurmNode()
    unknown = fact.process(["__node=gpu09", "Node gpu09 not found", f"{RC_PREFIX}1"])
    assert unknown == SlurmNodeView("gpu09", None, "scontrol show node gpu09: Node gpu09 not found")
    assert fact.process(["__node=gpu09", "__no_scontrol"]).error == "scontrol is not installed"
    garbled = fact.process(["__node=gpu09", "slurm_load_node: Zero Bytes", f"{RC_PREFIX}0"])
    assert garbled.gres is None and "not a node of scontrol show node" in garbled.error
    gpus = [SlurmGpu("mi300x", "/dev/dri/renderD128")]
    assert gres_mismatch(gpus, unknown) == (
        "Slurm could not be asked about node gpu09 (scontrol show node gpu09: Node gpu09 not "
        "found); it needs Gres=gpu:mi300x:1"
    )


def test_the_deploy_asks_slurm_by_the_configured_node_name():
    host = SurveyHost(slurm_survey())
    reads: list[Read] = []

    def recording(fact, *args, **kwargs):
        if fact is Survey:
            reads.extend(kwargs["reads"])
        return host(fact, *args, **kwargs)

    data = {**DATA, "rocm_slurm_gres": True, "rocm_slurm_node_name": "gpu-a07"}
    plan(data, recording)
    (slurm,) = [read for read in reads if read.name == "slurm_node"]
    assert slurm.kwargs == {"node": "gpu-a07"}
    assert host.extra_reads == []  # the deploy's own read of it is the survey's


# --- the deploy, planned against a converged host's survey ----------------------------------

DATA = {"rocm_version": "6.4.3", "pytorch_install": False}
WRITE = "Slurm GRES | Write /etc/slurm/gres.conf from the node's GPUs"
RECORD = "Slurm GRES | Record what rocm-fleet wrote to /etc/slurm/gres.conf"
REMOVE = "Slurm GRES | Remove rocm-fleet's /etc/slurm/gres.conf"
FORGET = "Slurm GRES | Forget what rocm-fleet wrote to /etc/slurm/gres.conf"
LEDGER = "/var/lib/rocm-fleet/slurm-gres.sha256"
GFX1100 = [SlurmGpu("gfx1100", "/dev/dri/renderD128")]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def slurm_survey(
    conf: str | None = None,
    gres: str = "gpu:gfx1100:1",
    slurm_dir: bool = True,
    recorded: str | None = None,
    **changes,
) -> HostSurvey:
    """A converged host with ``conf`` as its gres.conf and ``recorded`` as what rocm-fleet
    recorded having written there (None: no record)."""
    survey = converged_survey(DATA, "debian-12")  # one RX 7900 XTX, driven by amdgpu
    survey = changed(
        survey,
        directories={"/etc/slurm": slurm_dir},
        files={
            "/etc/slurm/gres.conf": digest(conf) if conf is not None else None,
            LEDGER: digest(sha256(recorded) + "\n") if recorded is not None else None,
        },
        ledgers={LEDGER: [sha256(recorded)] if recorded is not None else []},
        slurm_node=SlurmNodeView("node", gres),
    )
    return changed(survey, **changes)


def test_the_deploy_writes_gres_conf_once_and_reads_nothing_more():
    host = SurveyHost(slurm_survey())
    first = plan({**DATA, "rocm_slurm_gres": True}, host)
    assert first.changes == [WRITE, RECORD] and host.extra_reads == []
    (command,) = first.find(WRITE).commands
    assert script_call(command) == (
        "text-file",
        ["/etc/slurm/gres.conf", "644", gres_conf(GFX1100)],
    )
    (record,) = first.find(RECORD).commands
    assert script_call(record) == ("text-file", [LEDGER, "644", sha256(gres_conf(GFX1100)) + "\n"])
    written = gres_conf(GFX1100)
    again = plan(
        {**DATA, "rocm_slurm_gres": True}, SurveyHost(slurm_survey(written, recorded=written))
    )
    assert again.changes == []
    tampered = plan(
        {**DATA, "rocm_slurm_gres": True},
        SurveyHost(slurm_survey("Name=gpu\n", recorded=written)),
    )
    assert tampered.changes == [WRITE]


@pytest.mark.parametrize(
    ("minor", "said"),
    [
        (-1, "KFD node 1 (gfx1100): gres.conf file '/dev/dri/renderD-1' is not"),
        (123456, "KFD node 1 (gfx1100): gres.conf file '/dev/dri/renderD123456' is not"),
        ("12a", "KFD node 1 (gfx1100): drm_render_minor '12a' is not a number"),
    ],
)
def test_gpu_values_gres_conf_cannot_hold_refuse_the_host_changing_nothing(minor, said):
    """Odd values from the KFD topology are the host's refusal, saying which GPU and what,
    not a traceback that stops the whole run's planning; no change is planned for it."""
    survey = slurm_survey()
    odd = [{**survey.kfd[0], "node": 1, "drm_render_minor": minor}]
    planned = plan({**DATA, "rocm_slurm_gres": True}, SurveyHost(changed(survey, kfd=odd)))
    assert planned.refused and planned.reason is not None
    assert planned.reason.startswith(f"rocm_slurm_gres: {said}")
    assert planned.reason.endswith("/etc/slurm/gres.conf not written")
    assert planned.ops == [] and planned.changes == []


def test_the_setting_gone_removes_the_gres_conf_rocm_fleet_wrote_and_only_that(caplog):
    written = gres_conf(GFX1100)
    host = SurveyHost(slurm_survey(written, recorded=written))
    gone = plan(DATA, host)  # rocm_slurm_gres off
    assert gone.changes == [REMOVE, FORGET] and host.extra_reads == []
    (command,) = gone.find(FORGET).commands
    assert LEDGER in str(command)
    # The site changed the file since: it stays (said), only the record goes.
    with caplog.at_level(logging.WARNING, logger="pyinfra"):
        edited = plan(
            DATA, SurveyHost(slurm_survey("Name=gpu File=/dev/nvidia0\n", recorded=written))
        )
    assert edited.changes == [FORGET]
    assert "/etc/slurm/gres.conf changed since rocm-fleet wrote it: left as it is" in caplog.text
    # Never written by rocm-fleet (no record): the site's file is no concern of the deploy.
    site = plan(DATA, SurveyHost(slurm_survey("Name=gpu File=/dev/nvidia0\n")))
    assert not [n for n in site.names if n.startswith("Slurm GRES")]


def test_the_deploy_leaves_gres_conf_alone_when_off_without_slurm_or_without_a_driver():
    off = SurveyHost(slurm_survey())
    assert not [n for n in plan(DATA, off).names if n.startswith("Slurm GRES")]
    for survey in (slurm_survey(slurm_dir=False), slurm_survey(kfd=None)):
        planned = plan({**DATA, "rocm_slurm_gres": True}, SurveyHost(survey))
        assert not planned.refused and "Verify | Check rocminfo and torch" in " ".join(
            planned.names
        )
        assert not [n for n in planned.names if n.startswith("Slurm GRES")], planned.names


def test_rocm_state_absent_removes_rocm_fleets_gres_conf_before_its_record_goes():
    # The removal reads fact by fact (no preflight survey).
    written = gres_conf(GFX1100)
    other = {
        InstalledPackages: {},
        DpkgInterrupted: [],
        fact_key(Ledger, path=LEDGER): [sha256(written)],
        fact_key(FileDigest, path="/etc/slurm/gres.conf"): digest(written),
        fact_key(FileDigest, path=LEDGER): digest(sha256(written) + "\n"),
    }
    planned = plan({**DATA, "rocm_state": "absent"}, SurveyHost(HostSurvey(), other=other))
    assert REMOVE in planned.changes and FORGET in planned.changes
    assert planned.names.index(REMOVE) < planned.names.index(
        "Remove ROCm apt repository | Remove rocm-fleet's state"
    )
