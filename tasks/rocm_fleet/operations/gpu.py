"""The GPU check: rocminfo and torch see the expected GPUs, torch computes on them."""

import hashlib
from typing import Any

from pyinfra import host
from pyinfra.api import StringCommand, operation

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.run import executing
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.gpu import KfdNodes, RocmAgents
from rocm_fleet.facts.python import TorchInfo
from rocm_fleet.facts.round_trip import Read, Survey
from rocm_fleet.facts.system import RebootRequired, RunningKernel
from rocm_fleet.model import paths
from rocm_fleet.model.untrusted import visible
from rocm_fleet.operations._script import failure, script


def gpu_problems(
    agents: dict[str, Any] | None,
    torch: dict[str, Any] | None,
    expected_gfx: list[str],
    expected_count: int | None,
    check_torch: bool,
    rocminfo: str = "rocminfo",
) -> tuple[list[str], str]:
    """(problems, summary) of rocminfo's and torch's view against the inventory; no problems: the
    node is as expected."""
    problems: list[str] = []
    found = [gpu["name"] for gpu in (agents or {}).get("gpus") or []]
    found_text = ", ".join(found) or "no GPU agent"
    wanted = [g for g in found if g in expected_gfx] if expected_gfx else found

    if expected_count == 0:
        summary = f"GPU-less host as configured (rocminfo: {found_text})"
    else:
        if agents is None:
            problems.append(f"{rocminfo} is not installed")
        elif agents.get("status") != "ok":
            status, message = agents.get("status"), agents.get("message", "")
            problems.append(f"{rocminfo} did not run cleanly ({status}: {message})".strip())
        expected_text = "/".join(expected_gfx) if expected_gfx else "any AMD GPU"
        if expected_count is not None and len(wanted) != expected_count:
            problems.append(
                f"expected {expected_count} x {expected_text}, rocminfo found {len(wanted)} "
                f"({found_text})"
            )
        elif not wanted:
            problems.append(f"expected {expected_text}, rocminfo found {found_text}")
        summary = f"rocminfo: {found_text}"

    if check_torch:
        problems += _torch_problems(torch, wanted, expected_count)
        if torch and not torch.get("error"):
            summary += (
                f"; torch {torch.get('torch')} (hip {torch.get('hip')}) sees "
                f"{torch.get('device_count')} device(s) {_archs(torch)}"
            )
    return problems, summary


def _torch_problems(torch: dict[str, Any] | None, wanted: list[str], count: int | None):
    if torch is None:
        return ["torch is not installed in the venv"]
    if torch.get("error"):
        return [f"torch failed to import: {torch['error']}"]
    if not torch.get("hip"):
        cuda = torch.get("cuda")
        return [f"torch {torch.get('torch')} is not a ROCm build (torch.version.cuda={cuda})"]
    if count == 0:
        return []
    problems = []
    if not torch.get("available"):
        problems.append("torch.cuda.is_available() is False")
    archs = _archs(torch)
    missing = [g for g in set(wanted) if archs.count(g) < wanted.count(g)]
    if missing:
        problems.append(f"torch sees {archs}, expected {wanted}")
    if torch.get("device_error"):
        problems.append(f"querying the devices failed: {torch['device_error']}")
    if torch.get("available") and torch.get("matmul") != "ok":
        problems.append(f"a matmul on cuda:0 failed: {torch.get('matmul')}")
    return problems


def _archs(torch: dict[str, Any]) -> list[str]:
    return [device.get("arch") or "?" for device in torch.get("devices") or []]


def verified_stack(installed: str, expected_gfx: list[str], expected_count: int | None) -> str:
    """What a passed check vouches for, as text: the expectation, ``installed``, the running
    kernel and KFD's GPUs (from the survey)."""
    gpus = sorted(f"{node['gfx']}@{node['slot']}" for node in read_fact(KfdNodes) or [])
    return (
        f"expected {expected_count if expected_count is not None else '>=1'} x "
        f"{'/'.join(expected_gfx) or 'any'}\n{installed.rstrip()}\n"
        f"kernel {read_fact(RunningKernel)}\ngpus {' '.join(gpus) or 'none'}\n"
    )


@operation()
def gpu_verified(
    rocminfo: str,
    expected_gfx: list[str],
    expected_count: int | None,
    python: str | None,
    installed: str,
):
    """Fail the host unless ``rocminfo`` and the venv's torch (``python``; None: not checked) see
    ``expected_count`` (None: >=1, 0: GPU-less) x ``expected_gfx`` (empty: any), a noop while a
    reboot is pending; a pass is recorded in /run (``verified_stack``) and skips the next check."""
    stack = verified_stack(installed, expected_gfx, expected_count)
    recorded = read_fact(FileDigest, path=paths.VERIFIED)
    if recorded and recorded["sha256"] == hashlib.sha256(stack.encode()).hexdigest():
        host.noop("verified in this boot, and nothing it checked has changed since")
        return
    record = [
        StringCommand("mkdir", "-p", paths.parent(paths.VERIFIED)),
        script("text-file", paths.VERIFIED, "644", stack),
    ]
    if not executing():
        yield from record  # planning: the check will run (it needs what the run installs)
        return
    reads = [Read("rocminfo", RocmAgents, {"rocminfo": rocminfo})]
    if python:
        reads.append(Read("torch", TorchInfo, {"python": python}))
    answers = host.get_fact(Survey, reads=reads)  # both in one round trip, in their order
    agents, torch = answers[0], answers[1] if python else None
    problems, summary = gpu_problems(
        agents, torch, expected_gfx, expected_count, bool(python), rocminfo
    )
    if not problems:
        host.log_styled(visible(summary), fg="green")
        yield from record
        return
    # What this run installed works only after the reboot it wasn't allowed: report.
    pending = read_fact(RebootRequired)["reasons"]
    if pending:
        host.noop(f"GPU check waits for a reboot ({'; '.join(pending)}): " + "; ".join(problems))
        return
    yield failure(f"GPU verification failed on {host.name}: " + "; ".join(problems))
