"""The acceptance tools' output, parsed strictly (RVS's GST log, rccl-tests' table, the torch
smoke's JSON line): output not recognised raises ``NotUnderstood``, never a pass."""

import json
import math
import re
from dataclasses import dataclass


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
