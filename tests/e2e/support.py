"""What every end-to-end test module shares: the lab fixture, the one deploy runner, and
readers of its results and of the hosts. Nothing here knows a test's hosts."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import runpy
import stat
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lab import HostSpec, Lab
from lab._util import cache_dir

# Every operation of the deploy runs inside the node deploy (tasks/rocm_fleet/deploy/node.py).
OP_PREFIX = "rocm-fleet | "
VENV_PYTHON = "/opt/rocm-fleet/venv/bin/python"
CHECKOUT = Path(__file__).resolve().parents[2]


def build_product_wheel(directory: Path) -> Path:
    """rocm-fleet's wheel, built from this checkout into ``directory``. pip builds a local
    project in its own tree (setuptools' build/ and egg-info), so two builds at once (two
    xdist workers, two runs) break each other: one lock in the lab's cache serialises them."""
    with open(cache_dir() / "product-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps",
             "-q", "-w", str(directory), str(CHECKOUT)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    (built,) = directory.glob("rocm_fleet-*.whl")
    return built


def running_lab(hosts: list[HostSpec], releases: Iterable[str], **options: Any) -> Iterator[Lab]:
    """A lab for a module's fixture: ``yield from running_lab(HOSTS, ["6.4.3"])`` (``options``:
    Lab's, e.g. ``catalog=True``). Skips without root; tears everything down when the
    module is done (also on failure)."""
    if os.geteuid() != 0:
        pytest.skip("the lab needs root (debootstrap, network namespaces)")
    with Lab(hosts=hosts, rocm_releases=list(releases), **options) as lab:
        yield lab


def deploy(
    lab: Lab,
    *args: str,
    limit: str | Iterable[str] | None = None,
    data: Iterable[str] = (),
    inventory: Path | None = None,
    dry: bool = False,
    env: dict[str, str] | None = None,
) -> Any:
    """``pyinfra --json [-y|--dry] INVENTORY deploy.py`` in the lab, never raising.

    ``data`` items become ``--data`` options, ``env`` the environment pyinfra runs in
    (secrets travel there, never in an argv). The result has ``.json`` (None when pyinfra
    printed none), ``.output`` (stdout + stderr) and ``.seconds``."""
    options = [a for item in data for a in ("--data", item)] + (["--dry"] if dry else [])
    started = time.monotonic()
    result = lab.pyinfra(
        inventory or lab.inventory, "deploy.py", *options, *args,
        json=True, check=False, limit=limit, env=env,
    )  # fmt: skip
    result.seconds = time.monotonic() - started
    result.output = result.stdout + result.stderr
    return result


def inventory_with(lab: Lab, path: Path, change: dict[str, Any]) -> Path:
    """A copy of the lab's inventory at ``path`` with ``change`` in every host's data."""
    hosts = runpy.run_path(str(lab.inventory))["lab"]
    path.write_text(f"lab = {[(name, {**data, **change}) for name, data in hosts]!r}\n")
    return path


def changed(result: Any) -> dict[str, list[str]]:
    """Operation name (without the node deploy's prefix) -> the hosts it changed; for a dry
    run, the hosts it would change."""
    report = result.json or {}
    if report.get("results"):
        ops = [(op["name"], op["success"]) for op in report["results"]["operations"]]
    else:
        ops = [(op["name"], op["hosts_with_change"]) for op in report.get("plan", [])]
    return {name.removeprefix(OP_PREFIX): sorted(hosts) for name, hosts in ops if hosts}


def failed_hosts(result: Any) -> list[str]:
    """From the JSON report of a run; for a dry run (whose report has no results), or when
    every host failed and pyinfra stopped without one ("No hosts remaining"), from the
    hosts' error and refusal lines."""
    if result.json and result.json.get("results"):
        return sorted(result.json["results"]["failed_hosts"])
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.output)
    lines = r"^\s*\[(\S+)\]\s+(?:Error|refused:)"
    return sorted(set(re.findall(lines, plain, re.M)))


def succeeded(result: Any) -> None:
    assert result.returncode == 0, result.output[-4000:]
    assert failed_hosts(result) == [], result.output[-4000:]


def sh(lab: Lab, host: str, command: str) -> str:
    """A command's stdout on a lab host over SSH; it must succeed."""
    result = lab.ssh(host, command)
    assert result.returncode == 0, (command, result.stderr)
    return result.stdout


def wheels(lab: Lab, host: str) -> dict[str, str | None]:
    """torch, torchvision and torchaudio in the host's venv (None: not installed)."""
    script = (
        "from importlib import metadata as m\n"
        "for n in ('torch', 'torchvision', 'torchaudio'):\n"
        "    try: print(n, m.version(n))\n"
        "    except m.PackageNotFoundError: print(n, None)\n"
    )
    out = sh(lab, host, f'{VENV_PYTHON} -c "{script}"')
    return {n: (None if v == "None" else v) for n, v in (line.split() for line in out.splitlines())}


def rocm_fleet(lab: Lab, *args: str, env: dict[str, str] | None = None) -> Any:
    """The dev venv's ``rocm-fleet`` in the lab's client netns."""
    cli = str(Path(lab.env()["PATH"].split(":")[0]) / "rocm-fleet")
    return lab.run([cli, *args], env=env, timeout=1800)


def audit(lab: Lab, *args: str, inventory: Path | None = None) -> Any:
    """``rocm-fleet audit --json`` in the lab; ``.json`` holds its report."""
    result = rocm_fleet(lab, "audit", str(inventory or lab.inventory), "--json", *args)
    result.json = json.loads(result.stdout) if result.stdout.strip().startswith("{") else None
    return result


def as_drift(operation: str) -> str:
    """An operation as ``--dry`` names it ("ROCm packages | Install ...") as the audit's
    JSON lists it in a row's ``drift`` ("rocm_packages: Install ...": the concern's id)."""
    from rocm_fleet.audit.rows import concern_id

    concern, _, name = operation.partition(" | ")
    return f"{concern_id(concern)}: {name}"


def dry_names(row: dict[str, Any]) -> list[str]:
    """The operations an audit row says would change the host, as ``--dry`` names them."""
    concerns = row["concerns"].values()
    return [f"{c['name']} | {operation}" for c in concerns for operation in c["operations"]]


# The lab's mokutil double (hardware simulation, tests/lab/machine.py) logs every call,
# read-only queries included, which the real mokutil doesn't: not a change to the host.
DOUBLE_LOGS = {"etc/rocm-fleet-lab/machine/efi/mokutil.log"}


def root_hashes(root: Path) -> dict[str, tuple]:
    """Every path under a host root -> (mode, owner, group, size, sha256 or link target),
    the double's own log left out; compare two with ``differences``."""
    seen = {}
    for directory, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        if rel_dir in ("proc", "sys", "dev/pts"):
            dirs[:] = []
            continue
        for name in dirs + files:
            path = os.path.join(directory, name)
            key = os.path.normpath(os.path.join(rel_dir, name))
            if key in DOUBLE_LOGS:
                continue
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                content = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    content = hashlib.file_digest(fh, "sha256").hexdigest()
            else:
                content = None
            seen[key] = (st.st_mode, st.st_uid, st.st_gid, st.st_size, content)
    return seen


def differences(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """The paths that differ between two ``root_hashes``."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def host_line(result: Any, host: str, start: str) -> str:
    """The first line pyinfra printed for ``host`` that starts with ``start`` (e.g.
    "warning: "), without its colours; "" when there is none."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.output)
    match = re.search(rf"^\s*\[{re.escape(host)}\]\s+({re.escape(start)}.*)$", plain, re.M)
    return match.group(1) if match else ""


def refusal(result: Any, host: str) -> str | None:
    """The reason printed on a host's line when preflight refused it, else None."""
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.output)
    match = re.search(rf"^\s*\[{re.escape(host)}\]\s+refused: (.*)$", plain, re.M)
    return match.group(1) if match else None
