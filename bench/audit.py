"""Audit benchmark: `rocm-fleet audit` vs `pyinfra INVENTORY exec -- true` on 8 lab hosts.

    PYTHONPATH=tests .venv/bin/python bench/audit.py

Builds one lab of 8 hosts (bookworm and trixie, simulated RX 7900 XTX), converges it with
deploy.py, then times, in this one invocation, the median of REPEATS interleaved runs of
each command on the same inventory and reports audit / baseline. The baseline is pyinfra
connecting to every host and running one command, so the ratio is what the audit's fact
gathering adds. Goal (issue #4): <= 1.5x.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from lab import HostSpec, Lab  # noqa: E402

HOSTS = 8
REPEATS = 5
BIN = Path(sys.executable).parent
DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip


def timed(lab: Lab, cmd: list[str], ok: tuple[int, ...] = (0,)) -> float:
    started = time.monotonic()
    result = lab.run(cmd, input="")
    elapsed = time.monotonic() - started
    if result.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout[-3000:]}"
                         f"\n{result.stderr[-3000:]}")  # fmt: skip
    return elapsed


def main() -> None:
    hosts = [
        HostSpec(f"bench{i}", suite=("bookworm", "trixie")[i % 2], profile="rx7900xtx", data=DATA)
        for i in range(1, HOSTS + 1)
    ]
    with Lab(hosts=hosts, rocm_releases=["6.4.3"]) as lab:
        inventory = str(lab.inventory)
        first = timed(lab, [str(BIN / "pyinfra"), "-y", inventory, "deploy.py"])
        audit = [str(BIN / "rocm-fleet"), "audit", inventory]
        baseline = [str(BIN / "pyinfra"), "-y", inventory, "exec", "--", "true"]
        timed(lab, audit)  # a converged fleet: exit 0, or this is not the measured case
        base, audits = [], []
        for _ in range(REPEATS):  # interleaved, so drift in machine load hits both
            base.append(timed(lab, baseline))
            audits.append(timed(lab, audit))
    b, a = statistics.median(base), statistics.median(audits)
    print(f"converging deploy on {HOSTS} hosts: {first:.1f}s")
    print(f"pyinfra exec -- true: {b:.2f}s  rocm-fleet audit: {a:.2f}s  ratio {a / b:.2f}x "
          f"(median of {REPEATS})")  # fmt: skip
    print(json.dumps({"hosts": HOSTS, "exec_true_s": round(b, 2), "audit_s": round(a, 2),
                      "ratio": round(a / b, 2), "runs_exec": [round(x, 2) for x in base],
                      "runs_audit": [round(x, 2) for x in audits]}))  # fmt: skip


if __name__ == "__main__":
    main()
