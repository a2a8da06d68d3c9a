"""Fleet mirror benchmark (P4): what a cold 8-host install fetches from upstream, with and
without the fleet mirror, and how long it takes.

    make bench            # or: PYTHONPATH=tests .venv/bin/python bench/mirror.py

One lab of 2 x HOSTS fresh hosts (bookworm, a simulated RX 7900 XTX each, ROCm 6.4.3 with
its torch). In this one invocation:

* the **direct** fleet (HOSTS hosts) converges the usual way, each host fetching AMD's
  repository and the wheels from the upstream doubles itself;
* the **mirrored** fleet (the other HOSTS hosts) converges with its first host as the fleet
  mirror (``rocm_mirror``, a live nginx cache), every other host's route to the doubles
  closed (``lab.close_upstreams``), so whatever reaches upstream goes through the mirror.

The lab server logs the body bytes of every answer and who asked. One host's bytes: what
each host of the direct fleet fetched from repo.radeon.com and download.pytorch.org (the
smallest of them, the strictest yardstick). The mirrored fleet's bytes: everything those
two doubles sent while it converged. Goal (issue #9, P4): mirrored fleet <= 1.2 x one
host's. Also reported: each fleet's cold converge time and their ratio (mirrored /
direct), for context; no absolute time is judged. Exit status 1 when P4 is missed or a
fleet doesn't converge.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from lab import HostSpec, Lab

UPSTREAMS = ("repo.radeon.com", "download.pytorch.org")
DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
GOAL = 1.2


def converge(lab: Lab, names: list[str], data: list[str]) -> float:
    """Seconds for one cold ``pyinfra -y INVENTORY deploy.py`` on ``names``; it must succeed."""
    options = [a for item in data for a in ("--data", item)]
    started = time.monotonic()
    result = lab.pyinfra(lab.inventory, "deploy.py", *options, json=True, check=False,
                         limit=names)  # fmt: skip
    elapsed = time.monotonic() - started
    failed = (result.json or {}).get("results", {}).get("failed_hosts")
    if result.returncode != 0 or failed:
        raise SystemExit(
            f"{names} did not converge:\n{result.stdout[-3000:]}{result.stderr[-3000:]}"
        )
    return elapsed


def upstream_bytes(lab: Lab, since: int) -> dict[str, int]:
    """Bytes the upstream doubles sent since request number ``since``, per client address."""
    sent: dict[str, int] = {}
    for request in lab.server.requests()[since:]:
        if request["host"] in UPSTREAMS:
            sent[request["client"]] = sent.get(request["client"], 0) + int(request["bytes"])
    return sent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=8, help="hosts per fleet (default 8)")
    args = parser.parse_args()
    direct = [f"direct{i}" for i in range(1, args.hosts + 1)]
    mirrored = [f"mirrored{i}" for i in range(1, args.hosts + 1)]
    specs = [HostSpec(name, suite="bookworm", profile="rx7900xtx", data=DATA)
             for name in direct + mirrored]  # fmt: skip
    with Lab(hosts=specs, rocm_releases=["6.4.3"]) as lab:
        since = len(lab.server.requests())
        direct_s = converge(lab, direct, [])
        per_host = upstream_bytes(lab, since)
        hosts_bytes = [per_host.get(lab.address(name), 0) for name in direct]

        lab.close_upstreams(hosts=mirrored[1:])
        since = len(lab.server.requests())
        mirrored_s = converge(lab, mirrored, [f"rocm_mirror={mirrored[0]}"])
        fleet = upstream_bytes(lab, since)
        others = sorted(set(fleet) - {lab.address(mirrored[0])})
        if others:
            raise SystemExit(f"hosts other than the mirror reached upstream: {others}")
    one_host = min(hosts_bytes)
    mirrored_bytes = sum(fleet.values())
    if one_host <= 0 or mirrored_bytes <= 0:  # a ratio of nothing would pass P4
        raise SystemExit(f"the server counted no upstream bytes: {hosts_bytes}, {fleet}")
    ratio = mirrored_bytes / one_host
    report = {
        "hosts": args.hosts,
        "one_host_bytes": one_host,
        "direct_hosts_bytes": {"min": min(hosts_bytes), "max": max(hosts_bytes)},
        "direct_fleet_bytes": sum(hosts_bytes),
        "mirrored_fleet_bytes": mirrored_bytes,
        "P4_mirrored_over_one_host": round(ratio, 3),
        "P4_goal": GOAL,
        "cold_converge_s": {"direct": round(direct_s, 1), "mirrored": round(mirrored_s, 1)},
        "cold_converge_mirrored_over_direct": round(mirrored_s / direct_s, 2),
    }
    print(f"upstream bytes, one host (least of the {args.hosts} direct): {one_host:>10}")
    print(f"upstream bytes, {args.hosts} hosts without mirror:        {sum(hosts_bytes):>10} "
          f"({sum(hosts_bytes) / one_host:.2f}x one host)")  # fmt: skip
    print(f"upstream bytes, {args.hosts} hosts with mirror:           {mirrored_bytes:>10} "
          f"({ratio:.2f}x one host; P4 goal <= {GOAL}x)")  # fmt: skip
    print(f"cold converge, {args.hosts} hosts: {direct_s:.1f}s without mirror, {mirrored_s:.1f}s "
          f"with it ({mirrored_s / direct_s:.2f}x)")  # fmt: skip
    print(json.dumps(report))
    met = ratio <= GOAL
    print("P4 met" if met else "P4 NOT met")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
