"""verify.gpu_problems: what counts as a working node, and the messages when it isn't."""

import pytest

from rocm_fleet.operations.gpu import gpu_problems


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


def test_rocminfo_not_loaded_or_not_installed():
    problems, _ = gpu_problems(agents(status="not_loaded"), None, ["gfx1100"], None, False)
    assert problems[0].startswith("rocminfo did not run cleanly (not_loaded")
    rocminfo = "/opt/rocm/core-10.1/bin/rocminfo"
    problems, _ = gpu_problems(None, None, ["gfx1100"], None, False, rocminfo)
    assert problems[0] == f"{rocminfo} is not installed"
    assert "expected gfx1100, rocminfo found no GPU agent" in problems[1]


def test_gpu_less_host_only_needs_a_rocm_torch():
    assert gpu_problems(agents(status="not_loaded"), torch(), [], 0, True)[0] == []
    assert gpu_problems(None, torch(hip=None), [], 0, True)[0] != []


def run_gpu_verified(facts: dict, **kwargs):
    """Run the operation body as pyinfra's execute phase would, with fixture facts."""
    from pyinfra.api import Config, Inventory, State
    from pyinfra.context import ctx_host, ctx_state

    from rocm_fleet.facts.survey import Survey
    from rocm_fleet.operations.gpu import gpu_verified

    def get_fact(fact, *args, **kw):
        if fact is Survey:  # the operation's one read of rocminfo and torch
            return {read.key: facts[read.fact.__name__] for read in kw["reads"]}
        return facts[fact.__name__]

    inventory = Inventory((["node"], {}))
    state = State(inventory, Config())
    state.is_executing = True
    host = inventory.get_host("node")
    host.get_fact = get_fact
    noops = []
    host.noop = noops.append
    with ctx_state.use(state), ctx_host.use(host):
        commands = [str(c) for c in gpu_verified._inner(**kwargs)]
    return commands, noops


def test_a_pending_reboot_defers_a_failing_check_instead_of_failing_the_host():
    facts = {
        "RocmAgents": agents(status="not_loaded"),
        "TorchInfo": torch(available=False),
        "RebootRequired": {"required": True, "packages": [], "reasons": ["new kernel 6.12"]},
    }
    kwargs = {"rocminfo": "/opt/rocm/core-10.1/bin/rocminfo", "expected_gfx": ["gfx1201"],
              "expected_count": 1, "python": "/v/bin/python"}  # fmt: skip
    commands, noops = run_gpu_verified(facts, **kwargs)
    assert commands == [] and noops[0].startswith("GPU check waits for a reboot (new kernel")

    facts["RebootRequired"] = {"required": True, "packages": ["libc6"], "reasons": []}
    commands, noops = run_gpu_verified(facts, **kwargs)
    assert noops == [] and "GPU verification failed on node" in commands[0]
