"""`make demo`: a 2-host lab provisioned by the real deploy, then checked by `rocm-fleet check`.

    PYTHONPATH=tests python -m lab.demo [--keep]

What a newcomer should see in a few minutes: a Debian 12 host with a simulated Radeon RX
7900 XTX and a Debian 13 host with eight simulated MI300X converge from minimal roots with
the production URLs, a second run changes nothing, and the node checks pass.  With
--keep the lab stays up until Enter is pressed (its inventory and ssh_config are printed).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time

from .fleet import Lab
from .hosts import HostSpec

HOSTS = [
    HostSpec(
        "node1",
        suite="bookworm",
        profile="rx7900xtx",
        data={"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
              "rocm_users": ["alice"]},
    ),
    HostSpec(
        "node2",
        suite="trixie",
        profile="mi300x-8",
        data={"rocm_version": "7.2.1", "expected_gfx": "gfx942", "expected_gpu_count": 8,
              "rocm_users": ["alice"]},
    ),
]  # fmt: skip


def tail(text: str, count: int) -> str:
    """The last ``count`` whole lines of ``text`` (never a cut line), after a line saying how
    many came before."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= count:
        return "\n".join(lines)
    return "\n".join([f"    ... ({len(lines) - count} earlier lines)", *lines[-count:]])


def _step(title: str) -> float:
    print(f"\n==> {title}", flush=True)
    return time.monotonic()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.demo")
    parser.add_argument("--keep", action="store_true", help="keep the lab up until Enter")
    args = parser.parse_args(argv)
    releases = sorted({h.data["rocm_version"] for h in HOSTS})
    t = _step(f"Bringing up the lab: {', '.join(h.name for h in HOSTS)} (ROCm {releases})")
    with Lab(hosts=HOSTS, rocm_releases=releases) as lab:
        print(f"    up in {time.monotonic() - t:.1f}s; inventory {lab.inventory}")
        t = _step("pyinfra deploy.py (first run)")
        first = lab.pyinfra(lab.inventory, "deploy.py", check=False)
        print(tail(first.stderr, 60))
        print(f"    exit {first.returncode} in {time.monotonic() - t:.1f}s")
        if first.returncode != 0:
            return first.returncode
        t = _step("pyinfra deploy.py (second run: expect no changes)")
        second = lab.pyinfra(lab.inventory, "deploy.py", json=True, check=False)
        totals = (second.json or {}).get("results", {}).get("totals", {})
        print(f"    exit {second.returncode} in {time.monotonic() - t:.1f}s; totals {totals}")
        t = _step("rocm-fleet check (testinfra over SSH)")
        checks = lab.run(
            [sys.executable, "-m", "rocm_fleet.cli", "check", str(lab.inventory)],
            env={"COLUMNS": str(shutil.get_terminal_size().columns)},  # this terminal's
        )  # fmt: skip
        print(checks.stdout.rstrip())  # a line per host and check: all of it
        print(f"    exit {checks.returncode} in {time.monotonic() - t:.1f}s")
        ok = second.returncode == 0 and not totals.get("success") and checks.returncode == 0
        _step("Outcome")
        for spec in HOSTS:
            d = spec.data
            what = f"{spec.suite}, ROCm {d['rocm_version']}, {d['expected_gpu_count']} x "
            state = "verified" if ok else "NOT verified"
            print(f"    {spec.name} ({what}{d['expected_gfx']}): {state}")
        print("    second run: no change" if ok else "    see the output above")
        if args.keep:
            print(
                f"\nLab kept up. ssh -F {lab.ssh_config} node1   (from: ip netns exec "
                f"{lab.client_netns} ...)\nPress Enter to tear it down."
            )
            input()
        return second.returncode or checks.returncode


if __name__ == "__main__":
    sys.exit(main())
