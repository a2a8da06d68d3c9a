"""Acceptance (``rocm_fleet.roll.acceptance``, ``model.acceptance``): the parsers on recorded
and cited tool output (tests/fixtures/acceptance/README.md), the suites and levels, a node's
run through a simulated node's tools, and the roll holding a node that fails drained with the
failing step and its numbers as Slurm's reason."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from rocm_fleet.cli.exits import Exit
from rocm_fleet.engine.remote import Ran
from rocm_fleet.facts._shell import RC_PREFIX
from rocm_fleet.facts.health import SECTION, TOOL
from rocm_fleet.model import paths
from rocm_fleet.model.acceptance import (
    AcceptanceRecord,
    RecordError,
    StepResult,
    acceptance_samples,
    parse_record,
    reason_words,
)
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.slurm import REASON_PREFIX
from rocm_fleet.roll.acceptance import run as tool_output
from rocm_fleet.roll.acceptance.run import (
    RVS,
    Acceptance,
    NotUnderstood,
    Tools,
    counter_step,
    needed_level,
    suite,
)
from rocm_fleet.roll.waves import Outcome, Roll, SlurmNode, Steps, Target
from unit.roll.test_roll import Clock, Cluster, Node, Recorder

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NV31 = [
    "gpustress-10000-sgemm-false",
    "gpustress-10000-sgemm-true",
    "gpustress-4096-hgemm-false",
    "gpustress-4096-hgemm-true",
    "gpustress-8000-device-false",
]


def fixture(name: str) -> str:
    return (FIXTURES / "acceptance" / name).read_text()


# --- the parsers ------------------------------------------------------------------------


def test_rvs_gst_verdicts_are_read_per_action_and_gpu():
    results = tool_output.parse_rvs_gst(fixture("rvs_gst_nv31_pass.log"), NV31)
    assert [(r.action, r.gpu, r.passed) for r in results] == [(a, "28851", True) for a in NV31]
    assert results[0].gflops == pytest.approx(22014.553091)


def test_rvs_gst_below_its_target_is_rvss_own_fail():
    low = {
        r.action: r for r in tool_output.parse_rvs_gst(fixture("rvs_gst_nv31_hgemm_low.log"), NV31)
    }
    assert not low["gpustress-4096-hgemm-false"].passed
    assert low["gpustress-4096-hgemm-false"].gflops == pytest.approx(41233.907114)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (fixture("rvs_gst_missing_target.log"), "no verdict for action"),
        ("", "no verdict for action"),
        # a result line of another shape is refused, never skipped
        ("[RESULT] [  1.2] [gpustress-10000-sgemm-false] gst 1 GFLOPS 9 target met: TRUE\n",
         "not understood"),
        # the words and the verdict disagree
        ("[RESULT] [  1.2] [gpustress-10000-sgemm-false] gst 1 GFLOPS 9 Met target stress : "
         "10 FAIL\n", "contradicts"),
    ],
)  # fmt: skip
def test_rvs_output_not_understood_is_refused(text, said):
    with pytest.raises(NotUnderstood, match=said):
        tool_output.parse_rvs_gst(text, NV31)


def test_rccl_all_reduce_table_and_summary():
    result = tool_output.parse_rccl(fixture("rccl_all_reduce_mi300x_8gpu.txt"))
    assert (result.avg_busbw, result.peak_busbw, result.wrong, result.sizes) == (
        142.652, 360.56, 0, 3,
    )  # fmt: skip
    assert tool_output.parse_rccl(fixture("rccl_all_reduce_wrong_values.txt")).wrong == 3


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (fixture("rccl_all_reduce_cut_off.txt"), "no summary"),
        ("segfault\n", "no result table"),
        (fixture("rccl_all_reduce_mi300x_8gpu.txt").replace("      0\n", "    N/A\n"),
         "without checking"),
    ],
)  # fmt: skip
def test_rccl_output_not_understood_is_refused(text, said):
    with pytest.raises(NotUnderstood, match=said):
        tool_output.parse_rccl(text)


def test_torch_smoke_line():
    ok = tool_output.parse_torch("some warning\n" + fixture("torch_smoke_8gpu.json"))
    assert (ok.gpus, ok.allreduce_ok, ok.error) == (8, True, "")
    failed = tool_output.parse_torch(fixture("torch_smoke_no_gpu.json"))
    assert failed.error.startswith("RuntimeError") and failed.gpus == 0
    for text in ("", "Traceback (most recent call last):\n", '{"gpus": "8"}'):
        with pytest.raises(NotUnderstood):
            tool_output.parse_torch(text)


# --- suites and levels ------------------------------------------------------------------


def test_suites_hold_amds_gst_targets_and_a_site_overrides_them():
    quick = suite("quick", "gfx1100")
    assert quick.steps == ("counters", "rvs:gst_single", "torch")
    assert quick.rvs_conf_dir == "nv31" and quick.gst_floor("gpustress-4096-hgemm-false") == 65000
    mi300x = suite(
        "full", "gfx942", {"gst:gst-1000Tflops-8K-fp8_r": 900000, "rccl_busbw_gbps": 300}
    )
    assert "rccl:all_reduce_perf" in mi300x.steps
    assert mi300x.gst_floor("gst-1000Tflops-8K-fp8_r") == 900000  # the site's
    assert mi300x.gst_floor("gst-70Tflops-8K-dgemm") == 70000  # AMD's
    assert suite("quick", "gfx1030").rvs_conf_dir is None  # no AMD configuration known
    with pytest.raises(ValueError):
        suite("burn", "gfx942")


def test_the_level_follows_the_change_capped_by_the_setting():
    node = {"rocm": "6.4.3-128", "kernel": "6.1.0-28-amd64", "driver": "6.10.5", "gpus": "a=1"}
    moved = {**node, "rocm": "7.2.1-81"}
    assert needed_level("off", None, node) is None
    assert needed_level("full", node, node) == "quick"  # a configuration change
    assert needed_level("full", node, moved) == "full"  # ROCm moved
    assert needed_level("full", None, node) == "full"  # never passed here
    assert needed_level("full", node, {**node, "gpus": "a=2"}) == "full"  # a card swapped
    assert needed_level("quick", None, moved) == "quick"  # quick never runs full


@pytest.mark.parametrize(
    "data",
    [
        {"rocm_acceptance": "yes"},
        {"rocm_acceptance": True},
        {"rocm_acceptance_thresholds": {"gst:x": 0}},
        {"rocm_acceptance_thresholds": {"busbw": 300}},
        {"rocm_acceptance_thresholds": {"rccl_busbw_gbps": "300"}},
        {"rocm_acceptance_thresholds": [300]},
        {"rocm_acceptance_rccl_tests": "all_reduce_perf"},
    ],
)
def test_bad_acceptance_settings_are_refused_naming_key_and_file(data):
    (key,) = data
    with pytest.raises(ConfigError, match=f"group_data/gpu.py: inventory key '{key}'"):
        load_config({"rocm_version": "6.4.3", **data}, "group_data/gpu.py")


def test_rvs_is_installed_only_where_acceptance_is_on_and_the_release_ships_it():
    assert load_config({"rocm_version": "6.4.3"}).acceptance_packages == []
    on = {"rocm_version": "6.4.3", "rocm_acceptance": "quick"}
    assert load_config(on).acceptance_packages == ["rocm-validation-suite"]
    assert load_config({**on, "rocm_version": "7.14.1"}).acceptance_packages == []


# --- the record ---------------------------------------------------------------------------


def record(*steps: StepResult) -> AcceptanceRecord:
    return AcceptanceRecord("quick", 1765000000.0, steps, {"rocm": "6.4.3-128"})


def test_a_record_round_trips_and_says_what_failed():
    failed = record(
        StepResult("counters", "pass"),
        StepResult("rvs:gst_single", "fail", "gpustress-4096-hgemm-false GPU 1 41234 < 65000",
                   {"gpustress-4096-hgemm-false_gflops": 41233.9}),
        StepResult("torch", "skip", "no PyTorch venv"),
    )  # fmt: skip
    assert parse_record(failed.to_json()) == failed
    assert not failed.passed
    assert failed.summary() == (
        "acceptance quick failed: rvs:gst_single gpustress-4096-hgemm-false GPU 1 41234 < 65000"
    )
    assert record(StepResult("counters", "pass")).summary() == "acceptance quick passed (1 step)"


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(passed=True),  # says passed, a step failed
        lambda d: d.update(format=2),
        lambda d: d["steps"][0].update(status="ok"),
        lambda d: d["steps"][0].update(numbers={"x": "1"}),
        lambda d: d.update(level="burn"),
        lambda d: d.pop("finished_at"),
        lambda d: d["steps"][0].update(name='rvs"} 1\nrocm_fleet_audit_success{} 0'),
    ],
)
def test_a_record_this_rocm_fleet_did_not_write_is_refused(edit):
    data = json.loads(record(StepResult("rvs:gst_single", "fail", "low")).to_json())
    edit(data)
    with pytest.raises(RecordError):
        parse_record(json.dumps(data))


def test_reason_words_keep_no_quote_equals_or_control():
    assert reason_words('GPU 1 "x"=\x1b[31m1\nState=IDLE') == "GPU 1 ?x????31m1 State?IDLE"


def test_metrics_of_a_record_name_host_level_and_step():
    samples = acceptance_samples(
        "gpu1", record(StepResult("counters", "pass"), StepResult("torch", "skip"))
    )
    assert ("rocm_fleet_acceptance_passed", {"host": "gpu1", "level": "quick"}, 1.0) in samples
    steps = [s for s in samples if s[0] == "rocm_fleet_acceptance_step_passed"]
    labels = {"host": "gpu1", "level": "quick", "step": "counters"}
    assert steps == [("rocm_fleet_acceptance_step_passed", labels, 1.0)]


# --- one node's run, through a simulated node ----------------------------------------------


class FakeNode:
    """A node's tools as the run calls them; every command is kept."""

    def __init__(
        self, rvs: str = "rvs_gst_nv31_pass.log", metric_after: str | None = None,
        torch: str = "torch_smoke_8gpu.json", torch_ran: Ran | None = None,
    ):  # fmt: skip
        self.rvs = fixture(rvs)
        self.torch = fixture(torch)
        self.torch_ran = torch_ran
        self.metric = self.metric_before = (
            FIXTURES / "amd-smi" / "metric_rx7900xtx_x8.json"
        ).read_text()
        self.metric_after = metric_after
        self.commands: list[list[str]] = []
        self.kept: str | None = None

    def __call__(self, argv: Sequence[str]) -> Ran:
        argv = list(argv)
        self.commands.append(argv)
        if argv[:2] == ["timeout", "3600"] and argv[2] == RVS:
            return Ran(0, self.rvs, "")
        if argv[:2] == ["sh", "-c"] and argv[-3:] == ["timeout", "3600", VENV_PYTHON]:
            assert argv[4].startswith('"""rocm-fleet acceptance: a torch smoke')  # the script
            assert f"safe_path {VENV_PYTHON}" in argv[2]  # root runs it under the safe path rule
            return self.torch_ran or Ran(0, self.torch, "")
        if argv[:2] == ["sh", "-c"] and "__health_section" in argv[2]:
            return Ran(0, self.amd_smi(), "")
        if argv[:2] == ["sh", "-c"] and "uname -r" in argv[2]:
            return Ran(0, "6.4.3-128|6.1.0-28-amd64|6.10.5\n", "")
        if argv[:2] == ["sh", "-c"] and argv[3:5] == ["sh", paths.ACCEPTANCE_RECORD]:
            self.kept = argv[5]
            return Ran(0, "", "")
        if argv[:2] == ["sh", "-c"] and argv[-1] == paths.ACCEPTANCE_RECORD:
            return Ran(0, self.kept or "", "")
        raise AssertionError(f"unexpected command {argv}")

    def amd_smi(self) -> str:
        metric = self.metric
        if self.metric_after is not None and any(
            "uname" not in c[-1] for c in self.commands[:-1] if "__health_section" in c[-1]
        ):
            metric = self.metric_after
        static = (FIXTURES / "amd-smi" / "static_rx7900xtx.json").read_text()
        return "\n".join([
            f"{TOOL}/opt/rocm/bin/amd-smi",
            f"{SECTION}metric", metric, f"{RC_PREFIX}0",
            f"{SECTION}static", static, f"{RC_PREFIX}0",
            f"{SECTION}xgmi", "usage: amd-smi", f"{RC_PREFIX}2",
        ])  # fmt: skip


VENV_PYTHON = "/opt/rocm-fleet/venv/bin/python"


def run_node(node: FakeNode, level="quick", thresholds=None, tools=None) -> AcceptanceRecord:
    acceptance = Acceptance(node, tools or Tools(), clock=lambda: 1765000000.0)
    fingerprint = acceptance.fingerprint()
    made = acceptance.run(suite(level, "gfx1100", thresholds), fingerprint)
    acceptance.keep(made)
    return made


def test_a_healthy_node_passes_and_its_record_is_kept():
    node = FakeNode()
    made = run_node(node)
    assert made.passed, made
    assert [(s.name, s.status) for s in made.steps] == [
        ("counters", "pass"), ("rvs:gst_single", "pass"), ("torch", "skip"),
    ]  # fmt: skip
    assert made.fingerprint["rocm"] == "6.4.3-128" and made.fingerprint["gpus"]
    assert parse_record(node.kept or "") == made
    rvs = next(c for c in node.commands if RVS in c)
    assert rvs[-1] == "/opt/rocm/share/rocm-validation-suite/conf/nv31/gst_single.conf"
    # read back by the next run: the last passing fingerprint
    assert Acceptance(node, Tools()).last() == made


def test_gst_below_amds_target_fails_with_the_action_gpu_and_numbers():
    made = run_node(FakeNode("rvs_gst_nv31_hgemm_low.log"))
    assert not made.passed
    step = made.failed[0]
    assert step.name == "rvs:gst_single"
    assert step.detail == "gpustress-4096-hgemm-false GPU 28851 41234 GFLOPS < 65000"
    assert step.numbers["gpustress-4096-hgemm-false_gflops"] == pytest.approx(41233.907114)


def test_a_site_floor_below_the_measured_value_passes():
    made = run_node(FakeNode("rvs_gst_nv31_hgemm_low.log"),
                    thresholds={"gst:gpustress-4096-hgemm-false": 40000})  # fmt: skip
    assert made.passed, made


def test_rvs_output_not_understood_fails_the_step_never_passes_it():
    made = run_node(FakeNode("rvs_gst_missing_target.log"))
    assert made.failed[0].name == "rvs:gst_single"
    assert "no verdict" in made.failed[0].detail


def test_counters_that_move_during_the_run_fail_it():
    before = (FIXTURES / "amd-smi" / "metric_rx7900xtx_x8.json").read_text()
    data = json.loads(before)
    records = data["gpu_data"] if isinstance(data, dict) else data
    records[0]["pcie"]["width"] = 4  # x8 before
    made = run_node(FakeNode(metric_after=json.dumps(data)))
    counters = made.steps[0]
    assert (counters.name, counters.status) == ("counters", "fail")
    assert "PCIe x4" in counters.detail


def test_a_venv_python_breaking_the_safe_path_rule_fails_the_torch_step_saying_which_directory():
    said = (
        "rocm-fleet: refusing to write or run /opt/rocm-fleet/venv/bin/python as root: "
        "/opt/rocm-fleet is owned by alice (mode 755); every directory above a path root "
        "writes or runs must be root's and writable by no one else (the safe path rule)"
    )
    node = FakeNode(torch_ran=Ran(1, "", said + "\x1b[2J\n"))
    refused = run_node(node, tools=Tools(python=VENV_PYTHON))
    assert refused.failed[0] == StepResult("torch", "fail", said + "\\x1b[2J")


def test_the_torch_smoke_passes_on_every_gpu_and_fails_saying_why():
    tools = Tools(python=VENV_PYTHON)
    passed = run_node(FakeNode(), tools=tools)
    assert passed.steps[-1] == StepResult("torch", "pass", "8 GPUs",
                                          {"gpus": 8.0, "max_error": 1.4e-07})  # fmt: skip
    failed = run_node(FakeNode(torch="torch_smoke_no_gpu.json"), tools=tools)
    assert failed.failed[0].name == "torch"
    assert failed.failed[0].detail == "RuntimeError: No HIP GPUs are available"
    loose = run_node(FakeNode(), tools=tools, thresholds={"matmul_max_error": 1e-9})
    assert loose.failed[0].detail == "matmul error 1.4e-07 > 1e-09"


def test_no_amd_smi_skips_the_counters_and_unreadable_output_fails_them():
    from rocm_fleet.model.health import HostHealth

    assert counter_step(HostHealth("no_tool"), HostHealth("no_tool")).status == "skip"
    broken = HostHealth("error", message="amd-smi metric: exited 1")
    assert counter_step(HostHealth("ok"), broken).status == "fail"


# --- the roll ------------------------------------------------------------------------------


def roll_with(cluster, recorder, hosts, accepted, max_failed=0, max_unavailable=1):
    clock = Clock()
    targets = [Target(h, SlurmNode(h, cluster.runner(h)), drain_timeout=60) for h in hosts]
    steps = Steps(recorder.deploy, recorder.check, accept=lambda h: accepted.get(h))
    out = io.StringIO()
    made = Roll(
        targets, steps, max_unavailable, out, 5.0, clock, clock.sleep, clock, max_failed=max_failed
    )
    return made.run(), out.getvalue()


FAILED = Outcome(False, "acceptance quick failed: rvs:gst_single gpustress-4096-hgemm-false "
                 "GPU 28851 41234 GFLOPS < 65000")  # fmt: skip
PASSED = Outcome(True, "acceptance quick passed (2 steps)")


def test_a_node_that_fails_acceptance_stays_drained_with_the_step_and_numbers():
    cluster = Cluster(Node("gpu1"), Node("gpu2"), Node("gpu3"))
    status, out = roll_with(cluster, Recorder(cluster), ["gpu1", "gpu2", "gpu3"],
                            {"gpu1": PASSED, "gpu2": FAILED, "gpu3": PASSED})  # fmt: skip
    assert status == Exit.FINDINGS, out
    assert cluster.drained() == {"gpu2"}
    assert cluster.nodes["gpu2"].reason == f"{REASON_PREFIX} {FAILED.why}"
    assert "gpu1: node checks passed; acceptance quick passed (2 steps)" in out
    assert "stopped after wave 2; not rolled: gpu3" in out  # no failure allowed by default
    assert "roll: 1 changed; failed: gpu2; left drained: gpu2\n  gpu2: acceptance quick" in out


def test_the_wave_goes_on_until_more_than_max_failed_fail():
    cluster = Cluster(*(Node(f"gpu{n}") for n in range(1, 5)))
    accepted = {"gpu1": FAILED, "gpu2": PASSED, "gpu3": FAILED, "gpu4": PASSED}
    status, out = roll_with(cluster, Recorder(cluster), list(accepted), accepted, max_failed=1)
    assert status == Exit.FINDINGS
    assert "stopped after wave 3 (2 failed, more than --max-failed 1); not rolled: gpu4" in out
    assert cluster.drained() == {"gpu1", "gpu3"}


def test_without_acceptance_the_roll_is_unchanged():
    cluster = Cluster(Node("gpu1"))
    status, out = roll_with(cluster, Recorder(cluster), ["gpu1"], {})
    assert status == Exit.OK and "acceptance" not in out and not cluster.drained()
