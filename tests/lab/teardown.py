"""Giving back what a lab holds: every step attempted even when another failed, by PID
and by name, never by pattern; and the leftovers of labs whose process died.

`Steps` runs the teardown steps `Lab.close` lists and reports all failures at the end.
The registry (/run/rocm-fleet-lab, one small file per running lab: owner pid, run id,
workdir) lets `cleanup_stale` find what a lab killed with -9 left behind; /run is a tmpfs,
so a reboot, which also drops every netns and mount, clears it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._util import CLEAN_PATH, LabError, rmtree, run
from .network import NETNS_ETC, netns_prefix
from .upstreams import gnupghome

REGISTRY = Path("/run/rocm-fleet-lab")


def register(run_id: str, workdir: Path) -> None:
    """Record a running lab (`unregister` once it is torn down)."""
    REGISTRY.mkdir(parents=True, exist_ok=True)
    info = {"pid": os.getpid(), "run_id": run_id, "workdir": str(workdir)}
    (REGISTRY / f"{run_id}.json").write_text(json.dumps(info))


def unregister(run_id: str) -> None:
    (REGISTRY / f"{run_id}.json").unlink(missing_ok=True)


class Steps:
    """Teardown steps: each is attempted, failures are collected and raised together."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def attempt(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # keep tearing down the rest
            self.errors.append(f"{what}: {exc}")

    def raise_errors(self) -> None:
        if self.errors:
            raise LabError("lab teardown incomplete:\n  " + "\n  ".join(self.errors))


def kill_gpg_agent(gnupghome: Path) -> None:
    """Stop the gpg-agent a GNUPGHOME started (the AMD double's signing key)."""
    subprocess.run(
        ["gpgconf", "--kill", "all"],
        env={"GNUPGHOME": str(gnupghome), "PATH": CLEAN_PATH},
        check=False,
        capture_output=True,
    )


def cleanup_stale() -> list[str]:
    """Remove what labs whose owner process died left behind; returns what was done.

    Everything is found from the registry entry: processes by the workdir in their
    cmdline or chroot (killed by pid), mounts under the workdir, netns named after the
    run id, the gpg-agent of the lab's GNUPGHOME.  Labs whose owner is alive are skipped.
    """
    done: list[str] = []
    if not REGISTRY.exists():
        return done
    for entry in sorted(REGISTRY.glob("*.json")):
        info = json.loads(entry.read_text())
        try:
            os.kill(info["pid"], 0)
            continue  # still running
        except ProcessLookupError:
            pass
        workdir, run_id = info["workdir"], info["run_id"]
        for pid in _pids_using(workdir):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                done.append(f"killed pid {pid}")
        time.sleep(0.2)
        mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
        for mnt in sorted((m for m in mounts if m.startswith(workdir + "/")), reverse=True):
            run(["umount", "-l", mnt], check=False)
            done.append(f"unmounted {mnt}")
        for ns in run(["ip", "netns", "list"]).stdout.split():
            if ns.startswith(netns_prefix(run_id)):
                run(["ip", "netns", "del", ns], check=False)
                done.append(f"deleted netns {ns}")
        for etc in sorted(NETNS_ETC.glob(netns_prefix(run_id) + "*")):
            rmtree(etc)
            done.append(f"removed {etc}")
        kill_gpg_agent(gnupghome(Path(workdir)))
        rmtree(Path(workdir))
        entry.unlink()
        done.append(f"removed {workdir}")
    return done


def _pids_using(workdir: str) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            root = os.readlink(proc / "root")
        except OSError:
            continue
        if workdir in cmdline or root.startswith(workdir):
            pids.append(int(proc.name))
    return pids
