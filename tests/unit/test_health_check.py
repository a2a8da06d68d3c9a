"""rocm_fleet.model.health_check: the Slurm health program's decisions, over recorded tool
output: amd-smi's JSON (tests/fixtures/amd-smi, README there cites each file) and Debian
Slurm's ``scontrol show node`` (tests/fixtures/slurm, recorded by its record.py from 22.05.8
and 24.11.5)."""

from __future__ import annotations

import pytest

from rocm_fleet.model.health import gpu_health
from rocm_fleet.model.health_check import (
    MAX_REASON,
    PREFIX,
    Action,
    SlurmView,
    decide,
    next_baseline,
    problems,
    reason,
    slurm_view,
)
from unit.facts.support import fixture

STATIC = "static_mi300x.json"


def mi300x(metric="metric_mi300x_healthy.json", xgmi="xgmi_mi300x_up.json"):
    return gpu_health(fixture("amd-smi", metric), fixture("amd-smi", STATIC),
                      fixture("amd-smi", xgmi))  # fmt: skip


def slurm(name: str) -> str:
    return fixture("slurm", name)


# --- the counters -----------------------------------------------------------------------------


def test_a_healthy_node_has_no_problem_and_its_first_counts_are_the_baseline():
    gpus = mi300x()
    baseline = next_baseline(gpus, {})
    assert baseline == {gpu.bdf: 0 for gpu in gpus} and len(baseline) == 8
    assert problems(gpus, baseline, expected_gpus=8) == []


def test_an_uncorrectable_count_that_grew_is_a_problem_and_the_baseline_keeps_the_old_count():
    before = next_baseline(mi300x(), {})
    sick = mi300x("metric_mi300x_ecc_errors.json")  # GPU 3: 1 uncorrectable
    assert problems(sick, before) == ["GPU 3 (0000:5c:00.0): uncorrectable ECC errors 0 -> 1"]
    assert next_baseline(sick, before) == before  # never raised: the next run fails too


def test_counts_seen_first_are_the_baseline_not_a_failure():
    # The program started on a GPU that had already counted one: no delta, no drain (the
    # audit's health cell reports the count).
    sick = mi300x("metric_mi300x_ecc_errors.json")
    assert problems(sick, next_baseline(sick, {})) == []


def test_a_counter_that_fell_is_a_reset_and_lowers_the_baseline():
    sick = mi300x("metric_mi300x_ecc_errors.json")
    high = next_baseline(sick, {})
    healthy = mi300x()  # the driver reloaded (a reboot): the counts start again at 0
    assert problems(healthy, high) == []
    assert next_baseline(healthy, high) == next_baseline(healthy, {})


def test_a_narrowed_link_xgmi_down_missing_gpus_and_devices_are_problems():
    radeon = gpu_health(fixture("amd-smi", "metric_rx7900xtx_x8.json"),
                        fixture("amd-smi", "static_rx7900xtx.json"))  # fmt: skip
    (gpu,) = radeon
    assert problems(radeon, {}) == [f"GPU 0 ({gpu.bdf}): PCIe x8 of x16"]
    down = mi300x(xgmi="xgmi_mi300x_link_down.json")
    found = problems(down, next_baseline(down, {}))
    assert found[0] == "GPU 0 (0000:0c:00.0): 2 XGMI links down"
    assert problems(radeon[:0], {}, ["/dev/kfd", "/dev/dri/renderD128"], expected_gpus=1) == [
        "/dev/kfd missing", "/dev/dri/renderD128 missing", "amd-smi sees 0 of 1 GPUs",
    ]  # fmt: skip


def test_an_apu_without_counters_is_healthy_and_has_no_baseline():
    apu = gpu_health(fixture("amd-smi", "metric_strixhalo_apu.json"),
                     fixture("amd-smi", "static_strixhalo_apu.json"),
                     fixture("amd-smi", "xgmi_strixhalo_apu.json"))  # fmt: skip
    assert next_baseline(apu, {}) == {} and problems(apu, {}) == []


# --- the reason Slurm shows -------------------------------------------------------------------


def test_the_reason_is_prefixed_cut_to_a_safe_charset_and_bounded():
    assert reason(["GPU 3 (0000:5c:00.0): uncorrectable ECC errors 0 -> 1"]) == (
        f"{PREFIX} GPU 3 (0000:5c:00.0): uncorrectable ECC errors 0 -> 1"
    )
    # node text (a bdf amd-smi printed) is untrusted: no newline, quote, $ or ; of its own
    hostile = reason(['GPU 0 (0000:0c:00.0\nReason=ok $(reboot) `x` "q" [a@b]): PCIe x8 of x16'])
    assert hostile == (
        f"{PREFIX} GPU 0 (0000:0c:00.0?Reason=ok ?(reboot) ?x? ?q? ?a?b?): PCIe x8 of x16"
    )
    long = reason([f"GPU {i} (0000:{i:02x}:00.0): PCIe x8 of x16" for i in range(20)])
    assert len(long) == MAX_REASON and long.endswith("...")


# --- Slurm's state, as scontrol prints it -------------------------------------------------------


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_scontrol_show_node_is_read_for_its_drain_and_reason(release):
    assert slurm_view(slurm(f"scontrol-show-node-idle-{release}.txt")) == SlurmView(False, "")
    admin = slurm_view(slurm(f"scontrol-show-node-draining-admin-{release}.txt"))
    assert admin == SlurmView(True, "PSU swap, see ticket 4411") and not admin.ours
    roll = slurm_view(slurm(f"scontrol-show-node-drained-{release}.txt"))
    assert roll.drain and roll.reason.startswith("rocm-fleet: rolling maintenance")
    assert not roll.ours  # the roll's drain is not the health program's
    assert slurm_view(slurm(f"scontrol-controller-down-{release}.txt")) is None


def ours(text: str) -> SlurmView:
    return SlurmView(True, text)


ECC = ["GPU 3 (0000:5c:00.0): uncorrectable ECC errors 0 -> 1"]


@pytest.mark.parametrize(
    ("found", "view", "kind"),
    [
        (ECC, SlurmView(False, ""), "drain"),  # unhealthy, in service: drained
        (ECC, ours(reason(ECC)), "none"),  # drained already with the same reason
        (ECC, ours(reason(["/dev/kfd missing"])), "drain"),  # its own reason, brought up to date
        (ECC, SlurmView(True, "PSU swap"), "none"),  # an administrator's drain: left alone
        (ECC, SlurmView(True, "rocm-fleet: rolling maintenance"), "none"),  # the roll's
        ([], ours(reason(ECC)), "resume"),  # healthy again: its own drain resumed
        ([], SlurmView(True, "PSU swap"), "none"),  # never resumes another's drain
        ([], SlurmView(False, ""), "none"),
        (ECC, None, "none"),  # Slurm did not answer: nothing done
    ],
)
def test_the_action_drains_and_resumes_only_its_own(found, view, kind):
    action = decide(found, view)
    assert action.kind == kind
    assert (action.reason is not None) == (kind == "drain")


def test_a_drain_carries_the_reason_and_says_why():
    assert decide(ECC, SlurmView(False, "")) == Action("drain", "unhealthy", reason(ECC))
    left = decide(ECC, SlurmView(True, "PSU swap"))
    assert left.why == "unhealthy; drained by someone else (PSU swap): left so"


# --- the deploy, planned against a converged host's survey ----------------------------------

DATA = {"rocm_version": "6.4.3", "pytorch_install": False, "expected_gpu_count": 1}
ON = {**DATA, "rocm_slurm_health_check": True}
PROGRAM = "/usr/local/sbin/rocm-fleet-health-check"
BASELINE = "/var/lib/rocm-fleet/health-baseline.json"
PYTHON = "Slurm health check | Install python3 for the health program"
WRITE = f"Slurm health check | Write Slurm's health program {PROGRAM}"


def health_survey(program: str | None = None, baseline: bool = False, python: bool = True):
    """A converged host (one RX 7900 XTX, renderD128) with ``program`` at the program's path."""
    from unit.surveys import changed, converged_survey, digest

    survey = converged_survey(DATA, "debian-12")
    if python:
        survey.packages["python3"] = "3.11.2-1+b1"
    files = {PROGRAM: digest(program, "755") if program is not None else None,
             BASELINE: digest("{}\n", "600") if baseline else None}  # fmt: skip
    return changed(survey, files=files)


def written(node_name=None, expected=1) -> str:
    from rocm_fleet.deploy.slurm import health_program

    return health_program(node_name, ["/dev/dri/renderD128"], expected)


def test_the_deploy_writes_the_program_once_root_owned_and_reads_nothing_more():
    from unit.surveys import SurveyHost, plan, script_call

    host = SurveyHost(health_survey(python=False))
    first = plan(ON, host)
    assert first.changes == [PYTHON, WRITE] and host.extra_reads == []
    (command,) = first.find(WRITE).commands
    assert script_call(command) == ("text-file", [PROGRAM, "755", written()])
    assert plan(ON, SurveyHost(health_survey(written()))).changes == []  # idempotent
    assert plan(ON, SurveyHost(health_survey("#!/bin/sh\nexit 0\n"))).changes == [WRITE]
    named = plan({**ON, "rocm_slurm_node_name": "gpu-a07"}, SurveyHost(health_survey(written())))
    assert named.changes == [WRITE]
    (command,) = named.find(WRITE).commands
    assert "NODE_NAME = 'gpu-a07'" in script_call(command)[1][2]


def test_the_program_carries_the_decisions_verbatim_and_searches_no_path():
    from pathlib import Path

    from rocm_fleet.model import health, health_check

    text = written()
    assert text.startswith("#!/usr/bin/python3 -I\n")  # isolated: no PYTHON* env, no user site
    for module in (health, health_check):
        assert repr(Path(module.__file__).read_text()) in text
    assert "AMD_SMI = ['/opt/rocm/bin/amd-smi', '/usr/bin/amd-smi']" in text
    assert "RENDER_NODES = ['/dev/dri/renderD128']" in text and "EXPECTED_GPUS = 1" in text
    assert "shell=True" not in text and "os.system" not in text
    compile(text, "rocm-fleet-health-check", "exec")


def test_the_setting_gone_removes_the_program_and_its_baseline():
    from unit.surveys import SurveyHost, plan

    host = SurveyHost(health_survey(written(), baseline=True))
    gone = plan(DATA, host)
    assert gone.changes == [
        f"Slurm health check | Remove {PROGRAM}",
        f"Slurm health check | Remove {BASELINE}",
    ]
    assert host.extra_reads == []
    never = plan(DATA, SurveyHost(health_survey()))
    assert not [n for n in never.names if n.startswith("Slurm health check")]


def test_rocm_state_absent_removes_the_program():
    from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages
    from rocm_fleet.facts.files import FileDigest
    from rocm_fleet.model.host_survey import HostSurvey
    from unit.surveys import SurveyHost, digest, fact_key, plan

    other = {InstalledPackages: {}, DpkgInterrupted: [],
             fact_key(FileDigest, path=PROGRAM): digest(written(), "755")}  # fmt: skip
    planned = plan({**DATA, "rocm_state": "absent"}, SurveyHost(HostSurvey(), other=other))
    assert f"Slurm health check | Remove {PROGRAM}" in planned.changes


def test_the_setting_is_checked_at_load():
    from rocm_fleet.model.config import ConfigError, load_config

    with pytest.raises(ConfigError) as bad:
        load_config({**ON, "rocm_slurm_health_check": "yes"}, "gpu1")
    assert str(bad.value) == (
        "gpu1: inventory key 'rocm_slurm_health_check' has value 'yes'; expected true or false"
    )
    with pytest.raises(ConfigError) as gpuless:
        load_config({**ON, "expected_gpu_count": 0}, "gpu1")
    assert "expected False on a host with expected_gpu_count 0" in str(gpuless.value)


def test_the_programs_drain_is_not_the_rolls_and_the_rolls_is_not_the_programs():
    from rocm_fleet.model.slurm import parse_node

    text = slurm("scontrol-show-node-drained-24.11.txt").replace(
        "rocm-fleet: rolling maintenance: drained to be changed, resumed once checked", reason(ECC)
    )
    assert slurm_view(text).ours
    assert parse_node(text).drained_by_others  # the roll leaves it drained


def _reason_lines(text: str, *more: str) -> str:
    """``text`` (recorded) with the reason given further lines as Slurm prints a reason that
    holds newlines: each on its own line, indented by its line end's 3 spaces and 7 more, the
    ``[user@time]`` on the first line only (SchedMD/slurm src/api/node_info.c,
    slurm_sprint_node_table, the same in 22.05.8 and 24.11.5; ``scontrol update`` keeps a
    reason's newlines, src/scontrol/update_node.c)."""
    head, found, tail = text.partition("]\n")
    assert found, text
    return head + "]" + "".join(f"\n{' ' * 10}{line}" for line in more) + "\n" + tail


@pytest.mark.parametrize("release", ["22.05", "24.11"])
def test_a_reason_with_more_lines_is_read_whole_by_both_readers(release):
    from rocm_fleet.model.slurm import parse_node

    admin = slurm(f"scontrol-show-node-draining-admin-{release}.txt")
    # an administrator's reason whose second line looks like the program's or the roll's
    for fake in (reason(ECC), "rocm-fleet: rolling maintenance"):
        text = _reason_lines(admin, f"Reason={fake}", "ask ops")
        whole = f"PSU swap, see ticket 4411\nReason={fake}\nask ops"
        assert slurm_view(text) == SlurmView(True, whole) and not slurm_view(text).ours
        node = parse_node(text)
        assert node.reason == whole and node.drained_by_others, node
        assert decide(ECC, slurm_view(text)).kind == "none"  # someone else's drain: left so
        assert decide([], slurm_view(text)).kind == "none"  # never resumed by the program


@pytest.mark.parametrize(
    "name",
    [name for release in ("22.05", "24.11") for name in (
        f"scontrol-show-node-idle-{release}.txt", f"scontrol-show-node-{release}-gres.txt",
        f"scontrol-show-node-{release}-none.txt", f"scontrol-show-node-drained-{release}.txt",
        f"scontrol-show-node-draining-admin-{release}.txt",
        f"scontrol-controller-down-{release}.txt")],
)  # fmt: skip
def test_both_readers_read_slurms_recorded_text_alike(name):
    from rocm_fleet.model.slurm import SlurmOutputError, parse_node

    view = slurm_view(slurm(name))
    try:
        node = parse_node(slurm(name))
    except SlurmOutputError:
        assert view is None
    else:
        assert view == SlurmView(node.drain, node.reason)
