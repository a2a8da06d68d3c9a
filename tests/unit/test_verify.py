"""operations.gpu.gpu_problems: what counts as a working node, and the messages when it
isn't; and the verify step's plan."""

import pytest
from pyinfra.facts.server import KernelVersion

from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.gpu import KfdNodes, RocmAgents
from rocm_fleet.facts.python import TorchInfo
from rocm_fleet.facts.system import RebootRequired
from rocm_fleet.model import paths
from rocm_fleet.operations.gpu import gpu_problems, gpu_verified
from unit.opcases import run_op
from unit.surveys import SurveyHost, converged_survey, fact_key, fresh_survey, plan


def agents(*names, status="ok"):
    return {"status": status, "message": "", "gpus": [{"name": n} for n in names]}


def torch(*archs, hip="6.4.43484-123", available=True, matmul="ok"):
    return {
        "torch": "2.9.1+rocm6.4", "hip": hip, "cuda": None, "available": available,
        "device_count": len(archs), "devices": [{"arch": a} for a in archs],
        "matmul": matmul, "error": None,
    }  # fmt: skip


def test_one_radeon_as_expected():
    problems, summary = gpu_problems(agents("gfx1100"), torch("gfx1100"), ["gfx1100"], 1, True)
    assert problems == []
    assert "gfx1100" in summary and "2.9.1+rocm6.4" in summary


def test_igpu_beside_the_expected_dgpu_is_fine():
    problems, _ = gpu_problems(
        agents("gfx1036", "gfx1100"), torch("gfx1036", "gfx1100"), ["gfx1100"], 1, True
    )
    assert problems == []


def test_wrong_gpu():
    problems, _ = gpu_problems(
        agents(*["gfx942"] * 8), torch(*["gfx942"] * 8), ["gfx1100"], 1, True
    )
    assert problems[0] == (
        "expected 1 x gfx1100, rocminfo found 0 (gfx942, gfx942, gfx942, gfx942, gfx942, "
        "gfx942, gfx942, gfx942)"
    )


def test_too_few_gpus():
    problems, _ = gpu_problems(agents(*["gfx942"] * 7), torch(*["gfx942"] * 7), ["gfx942"], 8, True)
    assert any("expected 8 x gfx942, rocminfo found 7" in p for p in problems)


@pytest.mark.parametrize(
    ("torch_info", "needle"),
    [
        (None, "torch is not installed"),
        ({"error": "ModuleNotFoundError: No module named 'torch'"}, "failed to import"),
        (torch("gfx1100", hip=None), "not a ROCm build"),
        (torch("gfx1100", available=False), "is_available() is False"),
        (torch("gfx1100", matmul="RuntimeError: HIP error"), "matmul on cuda:0 failed"),
        (torch(), "torch sees []"),
    ],
)
def test_torch_problems(torch_info, needle):
    problems, _ = gpu_problems(agents("gfx1100"), torch_info, ["gfx1100"], 1, True)
    assert any(needle in p for p in problems), problems


def test_rocminfo_not_loaded():
    problems, _ = gpu_problems(agents(status="not_loaded"), None, ["gfx1100"], None, False)
    assert problems[0].startswith("rocminfo did not run cleanly (not_loaded")
    assert "expected gfx1100, rocminfo found no GPU agent" in problems[1]


def test_gpu_less_host_only_needs_a_rocm_torch():
    assert gpu_problems(agents(status="not_loaded"), torch(), [], 0, True)[0] == []
    assert gpu_problems(None, torch(hip=None), [], 0, True)[0] != []


PYTHON = paths.venv_python(paths.DEFAULT_VENV)
ROCMINFO = "/opt/rocm/core-10.1/bin/rocminfo"  # the release's own (matrix.Release.rocminfo)
# A host the check hasn't vouched for yet (what the survey says of it).
UNCHECKED = {
    KfdNodes: [{"node": 1, "gfx": "gfx1201", "slot": "0000:03:00.0"}],
    KernelVersion: "6.1.0-50-amd64",
    fact_key(FileDigest, path=paths.VERIFIED): None,
}


def test_a_pending_reboot_defers_a_failing_check_instead_of_failing_the_host():
    facts = {
        **UNCHECKED,
        RocmAgents: agents(status="not_loaded"),
        fact_key(TorchInfo, python=PYTHON): torch(available=False),
        RebootRequired: {"required": True, "packages": [], "reasons": ["new kernel 6.12"]},
    }
    kwargs = {"rocminfo": ROCMINFO, "expected_gfx": ["gfx1201"], "expected_count": 1,
              "python": PYTHON, "installed": "rocm 6.4.3\n"}  # fmt: skip
    result = run_op(gpu_verified, facts, executing=True, **kwargs)
    assert result.commands == []
    assert result.noops[0].startswith("GPU check waits for a reboot (new kernel 6.12): ")
    assert f"{ROCMINFO} did not run cleanly (not_loaded" in result.noops[0]

    # Only a reason this deploy recorded defers it: a package's own reboot flag doesn't.
    facts[RebootRequired] = {"required": True, "packages": ["libc6"], "reasons": []}
    result = run_op(gpu_verified, facts, executing=True, **kwargs)
    assert result.noops == [] and "GPU verification failed on node" in result.texts[0]


def test_without_pytorch_only_rocminfo_is_read_and_recorded():
    facts = {**UNCHECKED, RocmAgents: agents("gfx942", "gfx942")}
    kwargs = {"rocminfo": ROCMINFO, "expected_gfx": ["gfx942"], "expected_count": 2,
              "python": None, "installed": "rocm 6.4.3\n"}  # fmt: skip
    result = run_op(gpu_verified, facts, executing=True, **kwargs)
    assert result.reads[-1] == fact_key(RocmAgents, rocminfo=ROCMINFO)
    assert not any("Torch" in fact.__name__ for fact in result.facts_read)
    ((name, (path, _mode, stack)),) = result.scripts
    assert (name, path) == ("text-file", paths.VERIFIED)
    assert stack.startswith("expected 2 x gfx942\nrocm 6.4.3\nkernel ") and "torch" not in stack


def test_a_missing_rocminfo_is_named_by_its_path():
    problems, _ = gpu_problems(None, None, ["gfx1100"], None, False, ROCMINFO)
    assert problems[0] == f"{ROCMINFO} is not installed"


def test_the_verify_step_is_planned_to_check_a_fresh_host_and_not_a_converged_one():
    data = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
    fresh = plan(data, SurveyHost(fresh_survey("ubuntu-24.04")))
    assert fresh.find("Check rocminfo and torch").meta._maybe_is_change  # it will check
    converged = plan(data, SurveyHost(converged_survey(data, "ubuntu-24.04")))
    assert not converged.find("Check rocminfo and torch").meta._maybe_is_change
