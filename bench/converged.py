"""Converged-fleet benchmark: the full deploy's no-op run vs `pyinfra ... exec -- true`.

    make bench            # or: PYTHONPATH=tests .venv/bin/python bench/converged.py

Builds one lab of 8 hosts (bookworm and trixie, simulated RX 7900 XTX), converges it, then
for fleets of 1, 4 and 8 hosts (--limit) times, in this one invocation, the median of
REPEATS runs of each command and reports the ratio deploy / baseline. The baseline is the
cost of connecting and running one command, so the ratio is what rocm-fleet's fact
gathering and checks add on a converged fleet. Goal (issue #2): <= 2x on 8 hosts.
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

SIZES = (1, 4, 8)
REPEATS = 5
PYINFRA = str(Path(sys.executable).parent / "pyinfra")
DATA = {"rocm_version": "7.2.1", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip


def timed(lab: Lab, *args: str) -> float:
    started = time.monotonic()
    result = lab.run([PYINFRA, "-y", *args], input="")
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise SystemExit(f"pyinfra {' '.join(args)} failed:\n{result.stderr[-3000:]}")
    return elapsed


def main() -> None:
    hosts = [
        HostSpec(f"bench{i}", suite=("bookworm", "trixie")[i % 2], profile="rx7900xtx", data=DATA)
        for i in range(1, max(SIZES) + 1)
    ]
    with Lab(hosts=hosts, rocm_releases=["7.2.1"]) as lab:
        inventory = str(lab.inventory)
        first = timed(lab, inventory, "deploy.py")
        rows = []
        for size in SIZES:
            # One --limit per host: pyinfra reads "--limit a,b" as one pattern.
            limit = [arg for h in hosts[:size] for arg in ("--limit", h.name)]
            check = lab.run([PYINFRA, "-y", "--json", *limit, inventory, "deploy.py"], input="")
            report = json.loads(check.stdout)["results"]
            hosts_seen = {h for op in report["operations"] for h in op["no_change"]}
            if len(hosts_seen) != size or report["totals"]["success"] or report["totals"]["error"]:
                raise SystemExit(f"not a converged no-op on {size} hosts: {report['totals']}")
            base, full = [], []
            for _ in range(REPEATS):  # interleaved, so drift in machine load hits both
                base.append(timed(lab, *limit, inventory, "exec", "--", "true"))
                full.append(timed(lab, *limit, inventory, "deploy.py"))
            b, f = statistics.median(base), statistics.median(full)
            rows.append({"hosts": size, "exec_true_s": round(b, 2), "deploy_noop_s": round(f, 2),
                         "ratio": round(f / b, 2)})  # fmt: skip
    print(f"first (converging) run on {len(hosts)} hosts: {first:.1f}s")
    print(f"{'hosts':>5}  {'exec -- true':>12}  {'deploy (no-op)':>14}  {'ratio':>6}")
    for r in rows:
        print(f"{r['hosts']:>5}  {r['exec_true_s']:>11.2f}s  {r['deploy_noop_s']:>13.2f}s  "
              f"{r['ratio']:>5.2f}x")  # fmt: skip
    print(json.dumps({"first_run_s": round(first, 1), "converged": rows}))


if __name__ == "__main__":
    main()
