"""Simulated-fleet benchmark: the controller's cost per host at 10, 100, 1,000 hosts.

    make bench            # or: .venv/bin/python bench/simulate.py [--sizes 10,100,1000]

The lab's hosts share the controller's two cores, so past a few dozen hosts a lab run
measures the lab as much as rocm-fleet. This benchmark measures the controller alone:

1. A lab of two converged hosts (bookworm with an RX 7900 XTX, trixie with a Radeon PRO
   W7900, ROCm 7.2.1) is recorded through ``@simrec`` (pyinfra's SSH connector, writing each
   command and its answer): the deploy, ``--dry``, the audit and ``exec -- true``.
2. Fleets of N ``@sim`` hosts (bench/simconnector.py) replay that recording, alternating
   the two recorded hosts (distro, kernel, GPU), each under its own name, with
   ``--latency`` ms per command. The deploy is first checked to be a no-op on each fleet.
3. For each N, the median of ``--repeats`` interleaved runs of the floor
   (``pyinfra INVENTORY exec -- true``), the converged deploy, ``--dry`` and
   ``rocm-fleet audit``: the controller's CPU seconds per host and peak RSS.

Goals (issue 20), reported, not asserted by any test: the deploy's CPU per host within 2x
the floor's; per-host CPU at 1,000 within 1.2x of that at 10; peak RSS under 1 GiB at 1,000.
CPU per host at 10 hosts is mostly the interpreter starting (the same ~1 s at any size), so
the "flat" goal is also given on the marginal cost: the CPU each host added between the
two smallest sizes against between the two largest, and the deploy's marginal cost against
the floor's. The exit status is 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import runpy
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# bench/ is the script's own folder, first on sys.path; the lab is installed (make venv).
from fleet import _PEAK_RSS
from simconnector import register

from lab import HostSpec, Lab

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
PYINFRA, ROCM_FLEET = str(BIN / "pyinfra"), str(BIN / "rocm-fleet")
RELEASE = "7.2.1"
DATA = {"rocm_version": RELEASE, "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
RECORDED = [
    HostSpec("recbookworm", suite="bookworm", profile="rx7900xtx", data=DATA),
    HostSpec("rectrixie", suite="trixie", profile="w7900", data=DATA),
]
GOALS = {"deploy CPU/host vs floor, 1,000": 2.0, "deploy CPU/host 1,000 vs 10": 1.2,
         "deploy marginal CPU/host vs floor's": 2.0,
         "deploy marginal CPU/host, flat": 1.2,
         "deploy peak RSS at 1,000 (MiB)": 1024.0}  # fmt: skip


def commands(inventory: Path) -> dict[str, list[str]]:
    inv = str(inventory)
    return {
        "floor": [PYINFRA, "-y", inv, "exec", "--", "true"],
        "deploy": [PYINFRA, "-y", inv, "deploy.py"],
        "dry": [PYINFRA, inv, "deploy.py", "--dry"],
        "audit": [ROCM_FLEET, "audit", inv],
    }


def sim_env(site: Path, **extra: str) -> dict[str, str]:
    """PYTHONPATH with the connectors' .dist-info and their module (bench/)."""
    return {"PYTHONPATH": os.pathsep.join([str(site), str(BENCH)]), **extra}


def record(workdir: Path, site: Path) -> tuple[Path, dict[str, dict]]:
    """Converge the two lab hosts, record every command of the four runs; (file, data)."""
    recording = workdir / "recording.jsonl"
    with Lab(hosts=RECORDED, rocm_releases=[RELEASE]) as lab:
        lab.run([PYINFRA, "-y", str(lab.inventory), "deploy.py"], check=True, timeout=3600)
        text = lab.inventory.read_text()
        for spec in RECORDED:
            text = text.replace(f"({spec.name!r}, {{", f"('@simrec/{spec.name}', {{")
        recorder = workdir / "record.py"
        recorder.write_text(text)
        env = sim_env(site, RFSIM_RECORD=str(recording))
        for name, cmd in commands(recorder).items():
            done = lab.run(cmd, env=env, input="", timeout=1800)
            if done.returncode != 0:
                raise SystemExit(f"recording {name} failed:\n{done.stdout[-2000:]}{done.stderr}")
        hosts = dict(runpy.run_path(str(lab.inventory))["lab"])
    ssh = {k for data in hosts.values() for k in data if k.startswith("ssh_")}
    return recording, {n: {k: v for k, v in d.items() if k not in ssh} for n, d in hosts.items()}


def simulated_inventory(path: Path, size: int, recording: Path, recorded: dict, latency: float):
    played = sorted(recorded)
    hosts = []
    for i in range(size):
        as_ = played[i % len(played)]
        data = {**recorded[as_], "sim_recording": str(recording), "sim_as": as_,
                "sim_latency_ms": latency}  # fmt: skip
        hosts.append((f"@sim/sim{i:05d}", data))
    path.write_text(f"sim = {hosts!r}\n")


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(CPU seconds, peak RSS KiB) of the command, from a small interpreter (see fleet.py)."""
    done = subprocess.run(
        [sys.executable, "-S", "-c", _PEAK_RSS, *cmd],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, input="",
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    fields = dict(line.split("=", 1) for line in done.stderr.splitlines() if line.startswith("__"))
    return float(fields["__cpu_s"]), int(fields["__peak_rss_kib"])


def converged(inventory: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [PYINFRA, "-y", "--json", str(inventory), "deploy.py"],
        cwd=ROOT, env={**os.environ, **env}, capture_output=True, text=True, input="",
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(
            f"the simulated deploy failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    totals = json.loads(done.stdout)["results"]["totals"]
    if totals["success"] or totals["error"]:
        raise SystemExit(f"the simulated fleet is not a converged no-op: {totals}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10,100,1000", help="fleet sizes (default 10,100,1000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--latency", type=float, default=1.0, help="ms per command (default 1)")
    parser.add_argument("--recording", type=Path, help="reuse a recording (skips the lab)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    # rocm-fleet as installed: pip compiles a wheel's modules, while this editable checkout
    # under PYTHONDONTWRITEBYTECODE would be compiled again by every run (pyinfra's are).
    compileall.compile_dir(ROOT / "tasks" / "rocm_fleet", quiet=1, rx=re.compile(r"/files/"))
    workdir = Path(tempfile.mkdtemp(prefix="rfsim-"))
    site = register(workdir / "site")
    if args.recording:
        recording = args.recording
        recorded = json.loads(recording.with_suffix(".hosts.json").read_text())
    else:
        recording, recorded = record(workdir, site)
        recording.with_suffix(".hosts.json").write_text(json.dumps(recorded))
    env = sim_env(site)

    rows = []
    for size in sizes:
        inventory = workdir / f"sim{size}.py"
        simulated_inventory(inventory, size, recording, recorded, args.latency)
        converged(inventory, env)
        runs = commands(inventory)
        cpu: dict[str, list[float]] = {name: [] for name in runs}
        rss: dict[str, list[int]] = {name: [] for name in runs}
        for _ in range(args.repeats):  # interleaved, so drift in machine load hits all
            for name, cmd in runs.items():
                seconds, kib = measure(cmd, env)
                cpu[name].append(seconds)
                rss[name].append(kib)
        row = {"hosts": size}
        for name in runs:
            row[f"{name}_cpu_ms_per_host"] = round(1000 * statistics.median(cpu[name]) / size, 2)
            row[f"{name}_peak_rss_mib"] = round(max(rss[name]) / 1024, 1)
            row[f"{name}_rss_kib_per_host"] = round(max(rss[name]) / size, 1)
        for name in ("deploy", "dry", "audit"):
            row[f"{name}_vs_floor"] = round(
                row[f"{name}_cpu_ms_per_host"] / row["floor_cpu_ms_per_host"], 2
            )
        rows.append(row)
        print(f"{size} hosts: {row}", file=sys.stderr)

    print(f"simulated fleets, {args.latency} ms a command; the controller's CPU ms per host "
          "(ratio to the floor) and peak RSS")  # fmt: skip
    header = ("hosts", "floor", "deploy", "--dry", "audit", "deploy RSS")
    print("{:>6}  {:>8}  {:>15}  {:>15}  {:>15}  {:>10}".format(*header))
    for r in rows:
        cells = [f"{r[f'{n}_cpu_ms_per_host']:.2f} ({r[f'{n}_vs_floor']:.2f}x)"
                 for n in ("deploy", "dry", "audit")]  # fmt: skip
        print(f"{r['hosts']:>6}  {r['floor_cpu_ms_per_host']:>8.2f}  {cells[0]:>15}  "
              f"{cells[1]:>15}  {cells[2]:>15}  {r['deploy_peak_rss_mib']:>7.1f}MiB")  # fmt: skip
    by_size = {r["hosts"]: r for r in rows}
    results = {}
    if 1000 in by_size:
        results["deploy CPU/host vs floor, 1,000"] = by_size[1000]["deploy_vs_floor"]
        results["deploy peak RSS at 1,000 (MiB)"] = by_size[1000]["deploy_peak_rss_mib"]
        if 10 in by_size:
            results["deploy CPU/host 1,000 vs 10"] = round(
                by_size[1000]["deploy_cpu_ms_per_host"] / by_size[10]["deploy_cpu_ms_per_host"], 2
            )
    if len(rows) >= 3:
        # CPU ms each added host costs: between the two smallest and the two largest fleets
        def marginal(name: str, a: dict, b: dict) -> float:
            cost = {r["hosts"]: r[f"{name}_cpu_ms_per_host"] * r["hosts"] for r in (a, b)}
            return (cost[b["hosts"]] - cost[a["hosts"]]) / (b["hosts"] - a["hosts"])

        small, large = (rows[0], rows[1]), (rows[-2], rows[-1])
        for name in ("floor", "deploy", "dry", "audit"):
            print(f"marginal {name:<7} {marginal(name, *small):7.2f} ms/host "
                  f"({small[0]['hosts']}->{small[1]['hosts']}),  {marginal(name, *large):7.2f} "
                  f"ms/host ({large[0]['hosts']}->{large[1]['hosts']})")  # fmt: skip
        results["deploy marginal CPU/host vs floor's"] = round(
            marginal("deploy", *large) / marginal("floor", *large), 2
        )
        results["deploy marginal CPU/host, flat"] = round(
            marginal("deploy", *large) / marginal("deploy", *small), 2
        )
    missed = [g for g, v in results.items() if v > GOALS[g]]
    for goal, limit in GOALS.items():
        value = results.get(goal)
        verdict = "-" if value is None else "MISSED" if goal in missed else "met"
        print(f"{goal:<34} {value if value is not None else '-':>8}  goal <= {limit}  {verdict}")
    print(json.dumps({"latency_ms": args.latency, "sizes": rows, "goals": GOALS,
                      "results": results, "missed": missed}))  # fmt: skip
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
