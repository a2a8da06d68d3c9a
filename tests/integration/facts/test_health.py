"""rocm_fleet.facts.health: the command run under dash with a fake amd-smi serving the
fixtures of tests/fixtures/amd-smi, and what process() makes of each outcome."""

from __future__ import annotations

import os

from rocm_fleet.facts.health import ROCM_SMI_ONLY, GpuHealthFact
from rocm_fleet.facts.round_trip import Read, Survey
from unit.facts.support import FIXTURES, fake_tool, run_sh

AMD_SMI = FIXTURES / "amd-smi"


def serve(tmp_path, metric: str, static: str, xgmi: str | None, metric_rc: int = 0) -> dict:
    """A fake amd-smi on PATH: its first argument picks the fixture (as the real one's
    subcommand picks the report); an amd-smi without ``xgmi --link-status`` prints usage."""
    xgmi_cmd = f"cat {AMD_SMI / xgmi}" if xgmi else 'echo "usage: amd-smi xgmi [-h]"; exit 2'
    fake_tool(
        tmp_path,
        "amd-smi",
        f"""case "$1 $*" in
  metric*--json*) cat {AMD_SMI / metric}; exit {metric_rc} ;;
  static*--json*) cat {AMD_SMI / static} ;;
  xgmi*--link-status*--json*) {xgmi_cmd} ;;
  *) exit 9 ;;
esac
""",
    )
    return {"PATH": f"{tmp_path}:/usr/bin:/bin"}


def read(env: dict) -> object:
    fact = GpuHealthFact()
    rc, out = run_sh(fact.command(), env)
    assert rc == 0
    return fact.process(out)


def test_amd_smi_on_an_mi300x_host(tmp_path):
    env = serve(tmp_path, "metric_mi300x_ecc_errors.json", "static_mi300x.json",
                "xgmi_mi300x_link_down.json")  # fmt: skip
    health = read(env)
    assert health.status == "ok" and health.tool == f"{tmp_path}/amd-smi"
    assert len(health.gpus) == 8
    assert health.problems() == [
        "GPU 0 (0000:0c:00.0): 2 of 8 XGMI links down",
        "GPU 3 (0000:5c:00.0): 1 uncorrectable ECC errors",
        "GPU 4 (0000:9f:00.0): 1 of 8 XGMI links down",
        "GPU 6 (0000:bf:00.0): 1 of 8 XGMI links down",
    ]


def test_an_amd_smi_without_xgmi_link_status_leaves_xgmi_unknown(tmp_path):
    env = serve(tmp_path, "metric_rx7900xtx_x8.json", "static_rx7900xtx.json", None)
    health = read(env)
    assert health.status == "ok"
    (gpu,) = health.gpus
    assert gpu.xgmi is None and gpu.pcie.degraded


def test_a_failing_metric_read_is_an_error_with_its_status(tmp_path):
    env = serve(tmp_path, "metric_strixhalo_apu.json", "static_strixhalo_apu.json", None, 3)
    health = read(env)
    assert (health.status, health.message) == ("error", "amd-smi metric: exited 3")


def test_output_over_the_limit_is_refused_not_parsed(tmp_path):
    env = serve(tmp_path, "metric_mi300x_healthy.json", "static_mi300x.json", None)
    fact = GpuHealthFact()
    fact.max_bytes = 100
    _rc, out = run_sh(fact.command(), env)
    health = fact.process(out)
    assert (health.status, health.message) == ("error", "amd-smi metric: more than 100 bytes")


def test_only_rocm_smi_is_said_and_no_tool_at_all(tmp_path):
    fake_tool(tmp_path, "rocm-smi", "exit 0\n")
    health = read({"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert (health.status, health.message) == ("unsupported", ROCM_SMI_ONLY)
    os.remove(tmp_path / "rocm-smi")
    assert read({"PATH": f"{tmp_path}:/usr/bin:/bin"}).status == "no_tool"


def test_in_a_survey_it_answers_as_alone(tmp_path):
    """The audit can read it in the preflight's one round trip (engine/surveying.py)."""
    env = serve(tmp_path, "metric_mi300x_healthy.json", "static_mi300x.json",
                "xgmi_mi300x_up.json")  # fmt: skip
    fact = Survey()
    reads = [Read("gpu_health", GpuHealthFact)]
    rc, out = run_sh(fact.command(reads=reads), env)
    assert rc == 0
    assert fact.process(out) == [read(env)]
