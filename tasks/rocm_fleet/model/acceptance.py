"""A node's last acceptance run (``rocm-fleet roll``'s burn-in), as the JSON record kept on the
node (``paths.ACCEPTANCE_RECORD``) and read back strictly by the audit, pure."""

import json
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

LEVELS = ("quick", "full")  # lightest first
STATUSES = ("pass", "fail", "skip")
FORMAT = 1  # a record of another format is refused
# a step's name: its kind and what it ran ("rvs:gst_single"); a metric label
STEP_NAME = re.compile(r"[a-z]+(?::[A-Za-z0-9_.-]{1,80})?")


class RecordError(ValueError):
    """The record is not one this rocm-fleet wrote."""


@dataclass(frozen=True)
class StepResult:
    """One step's outcome (``pass``, ``fail`` or ``skip``) and the numbers it measured."""

    name: str
    status: str
    detail: str = ""
    numbers: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class AcceptanceRecord:
    level: str
    finished_at: float  # seconds since the epoch
    steps: tuple[StepResult, ...]
    # what the node was when it ran (rocm, kernel, driver, gpus): a change asks for ``full``
    fingerprint: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(step.status != "fail" for step in self.steps)

    @property
    def failed(self) -> list[StepResult]:
        return [step for step in self.steps if step.status == "fail"]

    def summary(self) -> str:
        """One line: the failing steps and their numbers, or that it passed."""
        if self.passed:
            ran = sum(step.status == "pass" for step in self.steps)
            return f"acceptance {self.level} passed ({ran} step{'s' if ran != 1 else ''})"
        return f"acceptance {self.level} failed: " + "; ".join(
            f"{step.name} {step.detail}" for step in self.failed
        )

    def to_json(self) -> str:
        return json.dumps({"format": FORMAT, **asdict(self), "passed": self.passed}, sort_keys=True)


def _check(ok: bool, why: str) -> None:
    if not ok:
        raise RecordError(f"acceptance record: {why}")


def _field(data: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(key)
    ok = isinstance(value, kind) and not isinstance(value, bool)
    _check(ok, f"{key!r} is missing or not a {kind}")
    return value


def _numbers(value: Any) -> dict[str, float]:
    numbers = isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
        for k, v in value.items()
    )
    _check(numbers, "a step's 'numbers' is not names to numbers")
    return {k: float(v) for k, v in value.items()}


def parse_record(text: str) -> AcceptanceRecord:
    """The record in ``text``; RecordError (naming the field) when not one this module writes."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordError(f"acceptance record: not JSON ({exc})") from None
    _check(isinstance(data, dict) and data.get("format") == FORMAT, f"not format {FORMAT}")
    level = _field(data, "level", str)
    _check(level in LEVELS, f"level {level!r} is not one of {LEVELS}")
    finished = float(_field(data, "finished_at", (int, float)))
    _check(math.isfinite(finished), "'finished_at' is not a time")
    steps = []
    for raw in _field(data, "steps", list):
        _check(isinstance(raw, dict), "a step is not an object")
        status = _field(raw, "status", str)
        _check(status in STATUSES, f"step status {status!r} is not known")
        name = _field(raw, "name", str)
        _check(bool(STEP_NAME.fullmatch(name)), f"step name {name[:80]!r} is not one")
        detail = _field(raw, "detail", str)
        steps.append(StepResult(name, status, detail, _numbers(raw.get("numbers", {}))))
    fingerprint = _field(data, "fingerprint", dict)
    strings = all(isinstance(k, str) and isinstance(v, str) for k, v in fingerprint.items())
    _check(strings, "'fingerprint' is not names to strings")
    record = AcceptanceRecord(level, finished, tuple(steps), fingerprint)
    _check(data.get("passed") is record.passed, "'passed' disagrees with its steps")
    return record


@dataclass(frozen=True)
class AcceptanceRead:
    """A node's record as read: none, one, or why not."""

    record: AcceptanceRecord | None = None
    error: str | None = None


def read_record(text: str) -> AcceptanceRead:
    try:
        return AcceptanceRead(parse_record(text))
    except RecordError as exc:
        return AcceptanceRead(error=str(exc))


# Slurm prints a drain reason unquoted: a quote, '=' or newline would be read back wrong.
_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9 .,:;/<>()%+_-]")


def reason_words(text: str) -> str:
    """``text`` (which quotes a node's tools) as plain words for a drain reason."""
    return _REASON_UNSAFE.sub("?", " ".join(text.split()))


ACCEPTANCE_FAMILIES = {
    "rocm_fleet_acceptance_passed": "1 when the node's last acceptance run passed",
    "rocm_fleet_acceptance_last_run_timestamp_seconds": "when the last acceptance run ended",
    "rocm_fleet_acceptance_step_passed": "1 when the step passed in the last run, 0 when failed",
}


def acceptance_samples(
    host: str, record: AcceptanceRecord
) -> list[tuple[str, dict[str, str], float]]:
    """(family, labels, value) for one host's last run; skipped steps are left out."""
    labels = {"host": host, "level": record.level}
    samples = [
        ("rocm_fleet_acceptance_passed", labels, float(record.passed)),
        ("rocm_fleet_acceptance_last_run_timestamp_seconds", labels, record.finished_at),
    ]
    step = "rocm_fleet_acceptance_step_passed"
    ran = [s for s in record.steps if s.status != "skip"]
    return samples + [(step, {**labels, "step": s.name}, float(s.status == "pass")) for s in ran]
