"""Fleet benchmark: what rocm-fleet costs on a converged fleet, as ratios to pyinfra's floor.

    make bench            # or: PYTHONPATH=tests .venv/bin/python bench/fleet.py [--hosts 32]

One lab of N hosts (bookworm and trixie alternating, a simulated RX 7900 XTX each) is
converged once; then, in this one invocation, for fleets of 1, 8, 16 and N hosts (--limit,
one per host), the median of REPEATS interleaved runs of each command is taken:

* the floor: ``pyinfra INVENTORY exec -- true`` (connect to every host, run one command);
* the converged deploy (``pyinfra -y INVENTORY deploy.py``, checked to change nothing);
* on 8 hosts also ``pyinfra INVENTORY deploy.py --dry`` and ``rocm-fleet audit``.

Reported as ratio = median(command) / median(floor) on the same hosts, with the goals:

* P1: the converged deploy on 8 hosts <= 2.0x the floor;
* P2: the deploy's ratio on N hosts <= 1.25x its ratio on 1 host (per-host cost flat);
* --dry on 8 hosts <= 1.5x; audit on 8 hosts <= 1.5x;

and the controller's peak memory (max RSS of the pyinfra process) for the deploy on N
hosts. Absolute seconds are printed for context only; nothing is judged on them. The exit
status is 1 when a goal is missed.

The lab's hosts run on the controller's own cores, so the wall-clock ratios also count the
hosts' work (sshd, the survey's processes), which on a real fleet each host does on its
own CPU. For that reason the controller's CPU time (user + system of the pyinfra process)
is reported beside them, as a ratio to the floor's, with P2 computed on it too (context,
not a goal).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from lab import HostSpec, Lab

REPEATS = 5
BIN = Path(sys.executable).parent
# 7.2.1: Debian 13 (every other host) refuses the SHA-1-bound key AMD signed 6.x and
# 7.0.0-7.0.1 with (rocm-fleet refuses those releases there, issue 16).
DATA = {"rocm_version": "7.2.1", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
GOALS = {"P1 deploy/floor, 8 hosts": 2.0, "P2 ratio N / ratio 1": 1.25,
         "dry/floor, 8 hosts": 1.5, "audit/floor, 8 hosts": 1.5}  # fmt: skip


# Runs the command and prints its peak RSS: measured from a small interpreter, because a
# child's max RSS starts at its parent's (Linux keeps it across fork and exec), and the
# benchmark's own process holds the lab.
_PEAK_RSS = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "print(f'__peak_rss_kib={usage.ru_maxrss}', file=sys.stderr)\n"
    "print(f'__cpu_s={usage.ru_utime + usage.ru_stime}', file=sys.stderr)\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def run(lab: Lab, cmd: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, int, float]:
    """(seconds, peak RSS in KiB, CPU seconds) of one command in the lab's client netns."""
    wrapped = [sys.executable, "-S", "-c", _PEAK_RSS, *cmd]
    started = time.monotonic()
    result = lab.run(wrapped, input="")
    elapsed = time.monotonic() - started
    if result.returncode not in ok:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
            f"{result.stderr[-3000:]}"
        )
    match = re.search(r"__peak_rss_kib=(\d+)", result.stderr)
    cpu = re.search(r"__cpu_s=([\d.]+)", result.stderr)
    return elapsed, int(match.group(1)) if match else 0, float(cpu.group(1)) if cpu else 0.0


def limit(hosts: list[HostSpec]) -> list[str]:
    return [arg for h in hosts for arg in ("--limit", h.name)]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=32, help="the largest fleet (default 32)")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    sizes = sorted({1, 8, 16, args.hosts} & set(range(1, args.hosts + 1)))
    specs = [
        HostSpec(f"bench{i}", suite=("bookworm", "trixie")[i % 2], profile="rx7900xtx", data=DATA)
        for i in range(1, args.hosts + 1)
    ]
    pyinfra, audit = str(BIN / "pyinfra"), str(BIN / "rocm-fleet")
    with Lab(hosts=specs, rocm_releases=["7.2.1"]) as lab:
        inventory = str(lab.inventory)
        converge, _, _ = run(lab, [pyinfra, "-y", inventory, "deploy.py"])
        rows = []
        for size in sizes:
            chosen = limit(specs[:size])
            report = json.loads(
                lab.run([pyinfra, "-y", "--json", *chosen, inventory, "deploy.py"], input="").stdout
            )["results"]
            if report["totals"]["success"] or report["totals"]["error"]:
                raise SystemExit(f"not a converged no-op on {size} hosts: {report['totals']}")
            commands = {
                "floor": [pyinfra, "-y", *chosen, inventory, "exec", "--", "true"],
                "deploy": [pyinfra, "-y", *chosen, inventory, "deploy.py"],
            }
            if size == 8:
                commands["dry"] = [pyinfra, *chosen, inventory, "deploy.py", "--dry"]
                commands["audit"] = [audit, "audit", inventory, *chosen]
            times: dict[str, list[float]] = {name: [] for name in commands}
            cpu: dict[str, list[float]] = {name: [] for name in commands}
            peak = 0
            for _ in range(args.repeats):  # interleaved, so drift in machine load hits all
                for name, cmd in commands.items():
                    seconds, rss, cpu_seconds = run(lab, cmd)
                    times[name].append(seconds)
                    cpu[name].append(cpu_seconds)
                    if name == "deploy":
                        peak = max(peak, rss)
            medians = {name: statistics.median(values) for name, values in times.items()}
            row = {"hosts": size, **{f"{n}_s": round(v, 2) for n, v in medians.items()}}
            row.update({f"{n}_ratio": round(v / medians["floor"], 2)
                        for n, v in medians.items() if n != "floor"})  # fmt: skip
            cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
            row.update({f"{n}_cpu_s": round(v, 2) for n, v in cpu_medians.items()})
            row["deploy_cpu_ratio"] = round(cpu_medians["deploy"] / cpu_medians["floor"], 2)
            row["deploy_peak_rss_mib"] = round(peak / 1024, 1)
            rows.append(row)
            print(f"{size} hosts: {row}", file=sys.stderr)

    by_size = {row["hosts"]: row for row in rows}
    results = {}
    if 8 in by_size:
        results["P1 deploy/floor, 8 hosts"] = by_size[8]["deploy_ratio"]
        results["dry/floor, 8 hosts"] = by_size[8]["dry_ratio"]
        results["audit/floor, 8 hosts"] = by_size[8]["audit_ratio"]
    largest = max(by_size)
    results["P2 ratio N / ratio 1"] = round(
        by_size[largest]["deploy_ratio"] / by_size[1]["deploy_ratio"], 2
    )
    context = {
        "P2 on the controller's CPU": round(
            by_size[largest]["deploy_cpu_ratio"] / by_size[1]["deploy_cpu_ratio"], 2
        )
    }
    print(f"converging deploy on {args.hosts} hosts: {converge:.1f}s (context only)")
    header = ("hosts", "floor", "deploy", "ratio", "CPU ratio", "peak RSS")
    print("{:>5}  {:>7}  {:>7}  {:>6}  {:>9}  {:>9}".format(*header))
    for r in rows:
        print(f"{r['hosts']:>5}  {r['floor_s']:>6.2f}s  {r['deploy_s']:>6.2f}s  "
              f"{r['deploy_ratio']:>5.2f}x  {r['deploy_cpu_ratio']:>8.2f}x  "
              f"{r['deploy_peak_rss_mib']:>6.1f}MiB")  # fmt: skip
    missed = []
    for goal, limit_value in GOALS.items():
        value = results.get(goal)
        verdict = "-" if value is None else "met" if value <= limit_value else "MISSED"
        if verdict == "MISSED":
            missed.append(goal)
        print(
            f"{goal:<28} {value if value is not None else '-':>6}  goal <= {limit_value}  {verdict}"
        )
    for name, value in context.items():
        print(f"{name:<28} {value:>6}  (context, not a goal)")
    print(json.dumps({"hosts": args.hosts, "converge_s": round(converge, 1), "sizes": rows,
                      "goals": GOALS, "results": results, "missed": missed,
                      "context": context}))  # fmt: skip
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
