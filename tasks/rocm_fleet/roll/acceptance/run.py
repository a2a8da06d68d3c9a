"""One node's acceptance run through a ``Runner`` (``run_on`` bound to the host): the counters
read, the suite's steps, the counters read again; then the record kept on the node. The suites
(``suites.json``): each level's steps, each GPU model's thresholds (AMD's figures, cited there)
under a site's overrides, and which level a change needs. The tools' output (RVS's GST log,
rccl-tests' table, the torch smoke's JSON line) is parsed strictly: output not recognised raises
``NotUnderstood``, never a pass."""

import json
import math
import re
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


class NotUnderstood(ValueError):
    """The tool's output is not the shape this parser knows (says which and why)."""


#: ``[RESULT] [<secs>] [<action>] gst <gpu id> GFLOPS <n> Met target stress : <t> PASS``: the
#: line gst_worker.cpp's check_target_stress logs (rvs::lp::Log prefixes level and time);
#: older RVS says ``Gflops``, and "Couldnt meet target stress" with FAIL
_GST = re.compile(
    r"^\[RESULT\]\s+\[\s*[\d.]+\s*\]\s+\[(?P<action>[^\]\s]+)\]\s+gst\s+(?P<gpu>\d+)\s+"
    r"(?:GFLOPS|Gflops)\s+(?P<gflops>[\d.]+)\s+"
    r"(?P<said>Met target stress|Couldnt meet target stress)\s*:\s*(?P<target>[\d.]+)\s+"
    r"(?P<verdict>PASS|FAIL)\s*$"
)
_RESULT = re.compile(r"^\[RESULT\]\s+\[\s*[\d.]+\s*\]\s+\[(?P<action>[^\]\s]+)\]\s+gst\s")
#: an interval's GFLOPS (``log_interval_gflops``), logged before the verdict
_INTERVAL = re.compile(
    r"^\[RESULT\]\s+\[[^\]]*\]\s+\[[^\]]+\]\s+gst\s+\d+\s+(?:GFLOPS|Gflops)\s+[\d.]+$"
)


@dataclass(frozen=True)
class GstResult:
    action: str
    gpu: str  #: RVS's GPU id
    gflops: float
    passed: bool  #: RVS's own verdict against the configuration's target_stress


def parse_rvs_gst(text: str, actions: list[str]) -> list[GstResult]:
    """The GST verdicts in an ``rvs -c gst_*.conf`` log, one per action and GPU; every action
    in ``actions`` must have one, and every GST result line must be one this reads."""
    results = []
    for line in text.splitlines():
        line = line.strip()
        if not _RESULT.match(line):
            continue
        found = _GST.match(line)
        if found is None:
            if _INTERVAL.match(line):
                continue
            raise NotUnderstood(f"rvs gst: a result line not understood: {line[:160]!r}")
        passed = found["verdict"] == "PASS"
        if passed != (found["said"] == "Met target stress"):
            raise NotUnderstood(f"rvs gst: a verdict contradicts itself: {line[:160]!r}")
        results.append(GstResult(found["action"], found["gpu"], float(found["gflops"]), passed))
    missing = sorted(set(actions) - {r.action for r in results})
    if missing:
        raise NotUnderstood(f"rvs gst: no verdict for action(s) {', '.join(missing)}")
    return results


#: a data row: size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
_ROW = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)\s+"
    r"(?P<t1>[\d.]+)\s+(?P<alg1>[\d.]+)\s+(?P<bus1>[\d.]+)\s+(?P<w1>\S+)\s+"
    r"(?P<t2>[\d.]+)\s+(?P<alg2>[\d.]+)\s+(?P<bus2>[\d.]+)\s+(?P<w2>\S+)\s*$"
)
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<busbw>[\d.]+)\s*$")
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<n>\d+)\s+(?P<ok>OK|FAILED)\s*$")


@dataclass(frozen=True)
class RcclResult:
    avg_busbw: float  #: GB/s, rccl-tests' own average over the sizes
    peak_busbw: float  #: GB/s, the largest size's in-place busbw
    wrong: int  #: values found wrong (both passes, every size)
    sizes: int


def _wrong(value: str) -> int:
    if value == "N/A":  # run with -c 0: nothing checked
        raise NotUnderstood("rccl-tests: run without checking results (#wrong N/A)")
    try:
        return int(value)
    except ValueError:
        raise NotUnderstood(f"rccl-tests: #wrong {value!r} is not a count") from None


def parse_rccl(text: str) -> RcclResult:
    """An ``all_reduce_perf`` run: its table rows, out-of-bounds line and average bus
    bandwidth; a run without them (crashed, hung, another format) is not understood."""
    rows, avg, oob = [], None, None
    for line in text.splitlines():
        if found := _ROW.match(line):
            rows.append(found)
        elif found := _AVG.match(line.strip()):
            avg = float(found["busbw"])
        elif found := _OOB.match(line.strip()):
            oob = found
    if not rows:
        raise NotUnderstood("rccl-tests: no result table")
    if avg is None or oob is None:
        raise NotUnderstood("rccl-tests: no summary (the run did not finish)")
    wrong = sum(_wrong(r["w1"]) + _wrong(r["w2"]) for r in rows) + int(oob["n"])
    return RcclResult(avg, float(rows[-1]["bus2"]), wrong, len(rows))


@dataclass(frozen=True)
class TorchResult:
    gpus: int
    max_error: float  #: the largest relative error of a GPU's matmul against the CPU's
    allreduce_ok: bool  #: every GPU's all-reduce sum was the expected one
    error: str = ""  #: what failed to run


def parse_torch(text: str) -> TorchResult:
    """The last line of files/scripts/acceptance-torch.py: one JSON object."""
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        data = json.loads(lines[-1]) if lines else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise NotUnderstood(f"torch smoke: no result line: {text[-160:]!r}")
    gpus, error, ok = data.get("gpus"), data.get("max_error"), data.get("allreduce_ok")
    if not isinstance(gpus, int) or isinstance(gpus, bool) or not isinstance(ok, bool):
        raise NotUnderstood("torch smoke: 'gpus' or 'allreduce_ok' missing")
    if not isinstance(error, (int, float)) or isinstance(error, bool) or math.isnan(error):
        raise NotUnderstood("torch smoke: 'max_error' missing")
    return TorchResult(gpus, float(error), ok, str(data.get("error", "")))


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
