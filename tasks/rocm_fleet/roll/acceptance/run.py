"""One node's acceptance run through a ``Runner`` (``run_on`` bound to the host): the counters
read, the suite's steps, the counters read again; then the record kept on the node. The suites
(``suites.json``): each level's steps, each GPU model's thresholds (AMD's figures, cited there)
under a site's overrides, and which level a change needs."""

import json
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from rocm_fleet.assets import text
from rocm_fleet.engine.remote import Ran
from rocm_fleet.facts.health import GpuHealthFact
from rocm_fleet.model import paths
from rocm_fleet.model.acceptance import (
    LEVELS,
    AcceptanceRecord,
    RecordError,
    StepResult,
    parse_record,
    reason_words,
)
from rocm_fleet.model.health import HostHealth
from rocm_fleet.model.untrusted import visible
from rocm_fleet.roll.acceptance.parsers import NotUnderstood, parse_rccl, parse_rvs_gst, parse_torch

Runner = Callable[[Sequence[str]], Ran]


@cache
def _data() -> dict[str, Any]:
    return json.loads(resources.files(__package__).joinpath("suites.json").read_text())


@dataclass(frozen=True)
class Suite:
    """What one node runs: the level's steps and the thresholds for its GPU model."""

    level: str
    steps: tuple[str, ...]
    gfx: str | None
    rvs_conf_dir: str | None  #: AMD's configuration folder for the model; None: not known
    thresholds: dict[str, float]

    def gst_floor(self, action: str) -> float | None:
        return self.thresholds.get(f"gst:{action}")


def suite(level: str, gfx: str | None, overrides: dict[str, float] | None = None) -> Suite:
    """The suite at ``level`` for GPUs of ``gfx``, the site's ``overrides`` over AMD's figures."""
    if level not in LEVELS:
        raise ValueError(f"acceptance level {level!r} is not one of {LEVELS}")
    data = _data()
    model = data["models"].get(gfx or "", {})
    thresholds = {**data["defaults"], **model.get("thresholds", {}), **(overrides or {})}
    floats = {key: float(value) for key, value in thresholds.items()}
    return Suite(level, tuple(data["levels"][level]), gfx, model.get("rvs_conf_dir"), floats)


def needed_level(
    setting: str, last_fingerprint: dict[str, str] | None, fingerprint: dict[str, str]
) -> str | None:
    """The level a node needs: None when ``off``; ``quick`` when its fingerprint is its last
    passing run's, else ``full``; capped at the setting."""
    if setting == "off":
        return None
    wanted = "full" if last_fingerprint != fingerprint else "quick"
    return min(wanted, setting, key=LEVELS.index)


RVS = f"{paths.ROCM_ROOT}/bin/rvs"
#: where the rocm-validation-suite package puts AMD's per-GPU configurations
RVS_CONF = f"{paths.ROCM_ROOT}/share/rocm-validation-suite/conf"
#: the longest a tool may run (seconds); then it is killed and the step fails
TOOL_TIMEOUT = 3600
_FINGERPRINT = (
    f'printf "%s|%s|%s\\n" "$(cat {paths.ROCM_ROOT}/.info/version 2>/dev/null)" '
    '"$(uname -r)" "$(cat /sys/module/amdgpu/version 2>/dev/null)"'
)


#: ``sh -c _FROM_FILE sh TEXT COMMAND...``: ``COMMAND... FILE``, TEXT in a fresh private file
_FROM_FILE = (
    'f=$(mktemp --suffix=.py) || exit 1; printf "%s" "$1" > "$f"; shift; '
    '"$@" "$f"; rc=$?; rm -f "$f"; exit $rc'
)


@dataclass(frozen=True)
class Tools:
    """Where the steps' tools are on the node; None: the step is skipped, saying why."""

    rccl_tests: str | None = None  #: all_reduce_perf (AMD ships no rccl-tests package)
    python: str | None = None  #: the PyTorch venv's python (``pytorch_install``)


def _bounded(argv: Sequence[str]) -> list[str]:
    return ["timeout", str(TOOL_TIMEOUT), *argv]


class Acceptance:
    """The run on one node; ``fingerprint()`` first (the level may depend on it), then
    ``run(suite)``."""

    def __init__(self, run: Runner, tools: Tools, clock: Callable[[], float] = time.time):
        self._run, self.tools, self.clock = run, tools, clock
        self._before: HostHealth | None = None

    def counters(self) -> HostHealth:
        fact = GpuHealthFact()
        ran = self._run(["sh", "-c", fact.command()])
        return fact.process(ran.stdout.splitlines())

    def fingerprint(self) -> dict[str, str]:
        """What a change of asks for ``full``: ROCm, kernel, driver, and each GPU (its
        address and firmware, from amd-smi)."""
        said = self._run(["sh", "-c", _FINGERPRINT]).stdout.strip() + "||"
        rocm, kernel, driver = said.split("|")[:3]
        self._before = self.counters()
        gpus = ",".join(f"{g.bdf or g.gpu}={g.firmware or '?'}" for g in self._before.gpus)
        return {"rocm": rocm, "kernel": kernel, "driver": driver, "gpus": gpus}

    def last(self) -> AcceptanceRecord | None:
        """The node's last record; None when there is none or it is not one we wrote."""
        ran = self._run(["sh", "-c", '! test -f "$0" || cat "$0"', paths.ACCEPTANCE_RECORD])
        if ran.status != 0 or not ran.stdout.strip():
            return None
        try:
            return parse_record(ran.stdout)
        except RecordError:
            return None

    def run(self, suite: Suite, fingerprint: dict[str, str]) -> AcceptanceRecord:
        before = self._before or self.counters()
        steps = []
        for name in suite.steps:
            if name == "counters":
                continue  # read around the others, judged last
            kind, _, what = name.partition(":")
            step = {"rvs": self._rvs, "rccl": self._rccl, "torch": self._torch}[kind]
            steps.append(step(name, what, suite, before))
        if "counters" in suite.steps:
            steps.insert(0, counter_step(before, self.counters()))
        return AcceptanceRecord(suite.level, self.clock(), tuple(steps), fingerprint)

    def keep(self, record: AcceptanceRecord) -> Ran:
        """Write ``record`` on the node (root-only, atomically, no link followed)."""
        script = text("scripts/safe-path.sh") + text("scripts/acceptance-record.sh")
        return self._run(["sh", "-c", script, "sh", paths.ACCEPTANCE_RECORD, record.to_json()])

    def _rvs(self, name: str, conf: str, suite: Suite, before: HostHealth) -> StepResult:
        if suite.rvs_conf_dir is None:
            return StepResult(name, "skip", f"no RVS configuration for {suite.gfx or '?'}")
        actions = sorted(k[4:] for k in suite.thresholds if k.startswith("gst:"))
        ran = self._run(_bounded([RVS, "-c", f"{RVS_CONF}/{suite.rvs_conf_dir}/{conf}.conf"]))
        try:
            results = parse_rvs_gst(ran.stdout, actions)
        except NotUnderstood as exc:
            return StepResult(name, "fail", f"{exc} (exit {ran.status})")
        numbers: dict[str, float] = {}
        low = []
        for result in results:
            key = f"{result.action}_gflops"
            numbers[key] = min(numbers.get(key, result.gflops), result.gflops)
            floor = suite.gst_floor(result.action)
            if (result.gflops < floor) if floor is not None else not result.passed:
                said = f"< {floor:.0f}" if floor is not None else "FAIL"
                low.append(f"{result.action} GPU {result.gpu} {result.gflops:.0f} GFLOPS {said}")
        if low:
            return StepResult(name, "fail", "; ".join(low[:2]), numbers)
        return StepResult(name, "pass", f"{len(results)} GST results met", numbers)

    def _rccl(self, name: str, _: str, suite: Suite, before: HostHealth) -> StepResult:
        if self.tools.rccl_tests is None:
            return StepResult(name, "skip", "no all_reduce_perf (rocm_acceptance_rccl_tests)")
        gpus = str(max(len(before.gpus), 1))
        argv = [self.tools.rccl_tests, "-b", "8", "-e", "1G", "-f", "2", "-g", gpus]
        ran = self._run(_bounded(argv))
        try:
            result = parse_rccl(ran.stdout)
        except NotUnderstood as exc:
            return StepResult(name, "fail", f"{exc} (exit {ran.status})")
        numbers = {"busbw_gbps": result.avg_busbw, "wrong": float(result.wrong)}
        floor = suite.thresholds.get("rccl_busbw_gbps")
        if result.wrong:
            return StepResult(name, "fail", f"{result.wrong} wrong values", numbers)
        if floor is not None and result.avg_busbw < floor:
            detail = f"busbw {result.avg_busbw:.1f} GB/s < {floor:.1f}"
            return StepResult(name, "fail", detail, numbers)
        return StepResult(name, "pass", f"busbw {result.avg_busbw:.1f} GB/s", numbers)

    def _torch(self, name: str, _: str, suite: Suite, before: HostHealth) -> StepResult:
        if self.tools.python is None:
            return StepResult(name, "skip", "no PyTorch venv (pytorch_install false)")
        # root runs the venv's python only under the safe path rule; from a file:
        # torch.multiprocessing's spawned ranks import the script as __main__
        check = f"{text('scripts/safe-path.sh')}safe_path {shlex.quote(self.tools.python)}\n"
        ran = self._run(["sh", "-c", check + _FROM_FILE, "sh", text("scripts/acceptance-torch.py"),
                         *_bounded([self.tools.python])])  # fmt: skip
        refused = [line for line in ran.stderr.splitlines() if "refusing to write or run" in line]
        if ran.status != 0 and refused:
            return StepResult(name, "fail", visible(refused[0]))
        try:
            result = parse_torch(ran.stdout)
        except NotUnderstood as exc:
            return StepResult(name, "fail", f"{exc} (exit {ran.status})")
        numbers = {"gpus": float(result.gpus), "max_error": result.max_error}
        limit = suite.thresholds["matmul_max_error"]
        if result.error or result.gpus < len(before.gpus) or result.gpus == 0:
            detail = result.error or f"torch sees {result.gpus} of {len(before.gpus)} GPUs"
            return StepResult(name, "fail", detail, numbers)
        if result.max_error > limit:
            detail = f"matmul error {result.max_error:.2g} > {limit:g}"
            return StepResult(name, "fail", detail, numbers)
        if not result.allreduce_ok:
            return StepResult(name, "fail", "all-reduce sum wrong", numbers)
        return StepResult(name, "pass", f"{result.gpus} GPUs", numbers)


def counter_step(before: HostHealth, after: HostHealth) -> StepResult:
    """The counters around the run: an ECC count that grew, a PCIe link that narrowed, an XGMI
    link down or a GPU that came or went fails; no amd-smi skips."""
    if "no_tool" in (before.status, after.status):
        return StepResult("counters", "skip", "no amd-smi")
    for read in (before, after):
        if read.status != "ok":
            return StepResult("counters", "fail", f"amd-smi: {read.message or read.status}")
    old = {gpu.gpu: gpu for gpu in before.gpus}
    moved, numbers = [], {}
    for gpu in after.gpus:
        was = old.get(gpu.gpu)
        if was is None:
            moved.append(f"GPU {gpu.gpu} appeared")
            continue
        for what, now, then in (
            ("ECC correctable", gpu.ecc.correctable, was.ecc.correctable),
            ("ECC uncorrectable", gpu.ecc.uncorrectable, was.ecc.uncorrectable),
            ("XGMI links down", gpu.xgmi_down, was.xgmi_down),
        ):
            if now is not None and then is not None and now > then:
                moved.append(f"GPU {gpu.gpu} {what} +{now - then}")
                key = what.replace(" ", "_").lower()
                numbers[f"gpu{gpu.gpu}_{key}_delta"] = float(now - then)
        width, was_width = gpu.pcie.width, was.pcie.width
        if width and was_width and width < was_width:
            moved.append(f"GPU {gpu.gpu} PCIe x{gpu.pcie.width} (was x{was.pcie.width})")
    moved += [f"GPU {index} gone" for index in sorted(set(old) - {g.gpu for g in after.gpus})]
    if moved:
        return StepResult("counters", "fail", reason_words("; ".join(moved[:3])), numbers)
    return StepResult("counters", "pass", f"{len(after.gpus)} GPUs unchanged", numbers)
