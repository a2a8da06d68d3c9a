"""Command line for manual checks:  rocm-fleet-lab <command>  (or python -m lab <command>;
the Makefile's venv installs the lab: pip install -e tests/lab)

selftest        bring up a 3-host lab, probe every double over SSH, tear down, time it
build-cache     build (or verify) the cached roots and mirrors for every suite
rocminfo NAME   print the rocminfo double's output for a hardware profile
cleanup         remove leftovers of labs whose owning process died (kill -9, power loss)
demo [--keep]   see lab.demo (provision a 2-host lab with the product and check it)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rocm_fleet.model.matrix import release

from . import amd_repo, converged, mirror, profiles, roots, upstreams
from ._util import cache_dir, debian_mirror, rmtree, run
from .fleet import Lab
from .hosts import HostSpec
from .teardown import cleanup_stale


def selftest() -> int:
    hosts = [
        HostSpec("node1", suite="bookworm", profile="rx7900xtx"),
        HostSpec("node2", suite="trixie", profile="mi300x-8"),
        HostSpec("node3", suite="bookworm", profile="apu+rx7900xtx"),
    ]
    start = time.monotonic()
    with Lab(hosts=hosts, rocm_releases=["6.4.3", "7.2.1"]) as lab:
        up = time.monotonic() - start
        print(f"lab up in {up:.1f}s  {lab.timings}")
        print(f"inventory: {lab.inventory}\nssh_config: {lab.ssh_config}")
        print(f"lab key fingerprint: {lab.lab_key_fingerprint}")
        probe = (
            "hostname; . /etc/os-release; echo $VERSION_CODENAME; "
            "cut -d'|' -f1,2 /etc/rocm-fleet-lab/gpus | sort | uniq -c; "
            "apt-get update -q >/dev/null 2>&1 && echo apt-update-ok"
        )
        for name in lab.hosts:
            proc = lab.ssh(name, probe)
            print(f"--- {name} ({lab.address(name)}) rc={proc.returncode}")
            print(proc.stdout.rstrip() or proc.stderr.rstrip())
        for url in (
            "https://repo.radeon.com/rocm/rocm.gpg.key",
            "https://repo.radeon.com/rocm/apt/6.4.3/dists/jammy/InRelease",
            "https://download.pytorch.org/whl/rocm6.4/torch/",
            f"{debian_mirror().url}/dists/trixie/InRelease",
        ):
            proc = lab.run(  # the client netns resolves the upstreams to the lab (network.py)
                ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert",
                 str(lab.ca_cert), url]
            )  # fmt: skip
            print(f"{proc.stdout or proc.stderr.strip():>4}  {url}")
        down_start = time.monotonic()
    print(
        f"lab down in {time.monotonic() - down_start:.1f}s, total {time.monotonic() - start:.1f}s"
    )
    return 0


def build_cache() -> int:
    for suite in roots.SUITES:
        start = time.monotonic()
        base = roots.sshbase_dir(suite)
        mir = mirror.mirror_dir(suite)
        print(f"{suite}: {base.name}, {mir.name} ({time.monotonic() - start:.1f}s)")
    return 0


def prune_cache() -> int:
    current = set()
    for suite in roots.SUITES:
        current |= {
            f"minbase-{suite}-{roots.minbase_key(suite)}.tar.zst",
            f"sshbase-{suite}-{roots.sshbase_key(suite)}.tar.zst",
            f"sshbase-{suite}-{roots.sshbase_key(suite)}.d",
            f"slurmbase-{suite}-{roots.slurmbase_key(suite)}.tar.zst",
            f"slurmbase-{suite}-{roots.slurmbase_key(suite)}.d",
            f"mirror-{suite}-{mirror.mirror_key(suite)}",
        }
    for entry in sorted(cache_dir().iterdir()):
        ours = entry.name.startswith(("minbase-", "sshbase-", "slurmbase-", "mirror-"))
        if entry.name.startswith("converged-"):
            ours = not converged.is_current(entry.name, upstreams.identity())
        # build-* dirs are in-progress builds of other labs unless old (a killed build).
        stale_build = entry.name.startswith("build-") and entry.stat().st_mtime < time.time() - 3600
        if (ours and entry.name not in current) or stale_build:
            print(f"removing {entry}")
            rmtree(entry)
    return 0


def rocminfo(profile: str, version: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        gpus = Path(tmp) / "gpus"
        gpus.write_text(profiles.render(profile))
        script = amd_repo.rocminfo_script(release(version))
        script = script.replace("/" + profiles.PROFILE_PATH, str(gpus))
        proc = run(["sh", "-c", script], check=False)
        sys.stdout.write(proc.stdout)
        return proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rocm-fleet-lab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("selftest")
    sub.add_parser("build-cache")
    sub.add_parser("prune-cache")
    p = sub.add_parser("rocminfo")
    p.add_argument("profile", choices=sorted(profiles.PROFILES))
    p.add_argument("--rocm", default="6.4.3")
    sub.add_parser("cleanup")
    demo = sub.add_parser("demo")
    demo.add_argument("--keep", action="store_true", help="keep the lab up until Enter")
    args = parser.parse_args(argv)
    if args.cmd == "selftest":
        return selftest()
    if args.cmd == "build-cache":
        return build_cache()
    if args.cmd == "prune-cache":
        return prune_cache()
    if args.cmd == "rocminfo":
        return rocminfo(args.profile, args.rocm)
    if args.cmd == "cleanup":
        for line in cleanup_stale():
            print(line)
        return 0
    from .demo import main as demo_main

    return demo_main(["--keep"] if args.keep else [])


if __name__ == "__main__":
    sys.exit(main())
