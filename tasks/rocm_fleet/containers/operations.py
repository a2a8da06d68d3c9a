"""The GPU containers' operations: the commands that close the gap, or ``host.noop`` with why."""

import json
import re

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

from rocm_fleet.containers.engines import (
    NotJson,
    SubIds,
    daemon_json,
    docker_fragment,
    docker_mode,
    version_of,
)
from rocm_fleet.containers.facts import ContainerEngines, ImagePresent, RunningContainers
from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.engine.refuse import warn_host
from rocm_fleet.facts.apt import InstalledPackages
from rocm_fleet.facts.files import FileLines, Ledger
from rocm_fleet.facts.gpu import KfdNodes
from rocm_fleet.facts.system import AmdgpuModule
from rocm_fleet.model.container_toolkit import cdi_spec_state
from rocm_fleet.model.gpu_containers import others_subids, recorded_fragment
from rocm_fleet.operations._script import failure, script
from rocm_fleet.operations.files import stamp_is_current


@operation()
def toolkit_package(package: str, version: str = "", present: bool = True):
    """Install ``package`` at upstream release ``version`` (apt's pin picks it), or purge it."""
    installed = read_fact(InstalledPackages).get(package)
    if not present:
        if installed is None:
            host.noop(f"{package} is not installed")
            return
        yield script("apt-get", "purge", package)
        return
    # A Debian version (1.3.0, 1:1.3.0-1) of upstream release ``version``.
    if installed and re.match(rf"(?:[0-9]+:)?{re.escape(version)}(?:[-~+]|$)", installed):
        host.noop(f"{package} {installed} installed")
        return
    if not read_fact(AmdgpuModule)["loaded"]:  # its preinst refuses to install without amdgpu
        host.noop(f"{package} not installed: amdgpu is not loaded")
        return
    yield script("packages-install", "", package)


@operation()
def cdi_spec(path: str, package: str, record: str):
    """Generate the CDI spec ``path`` (``amd-ctk cdi generate``, from ``package``) when there is
    none or it names other GPUs than KFD reports, writing ``record`` (the spec is ours)."""
    lines = read_fact(Ledger, path=path)  # JSON: its lines' blanks don't matter
    kfd = read_fact(KfdNodes)
    if kfd is None or not read_fact(AmdgpuModule)["loaded"]:
        host.noop(f"{path} waits for amdgpu (its KFD, and {package}'s installer)")
        return
    state = cdi_spec_state("\n".join(lines), kfd)
    if state == "current":
        host.noop(f"{path} names the node's GPUs")
        return
    yield script("cdi-generate", path, record)


@operation()
def docker_gpus(path: str, ledger: str, stamp: str, allow_running: bool, install: bool = True,
                present: bool = True):  # fmt: skip
    """daemon.json with the keys Docker's version needs for the GPUs, merged with the site's and
    recorded in ``ledger`` (or taken out again); Docker restarted for a change (``stamp``) unless
    it runs containers and ``allow_running`` is false. ``install``: apt's candidate's version."""
    recorded_lines = read_fact(Ledger, path=ledger)
    recorded = recorded_fragment(recorded_lines)
    if not present and recorded is None:
        host.noop(f"{path} holds none of rocm-fleet's keys")
        return
    lines = read_fact(FileLines, path=path)
    current = None if lines is None else "\n".join(lines) + "\n"
    fragment = None
    if present:
        version = version_of("docker", read_fact(ContainerEngines), install)
        if version is None:
            yield failure("Docker is not installed and apt offers no docker.io")
            return
        fragment = docker_fragment(docker_mode(version))
    try:
        wanted = daemon_json(current, recorded, fragment)
    except NotJson as exc:
        yield failure(f"{exc}: fix it (rocm-fleet merges its keys into the site's file)")
        return
    record = json.dumps(fragment, sort_keys=True) if fragment is not None else None
    changing = wanted.text != current
    restart = changing or (current is not None and not stamp_is_current(stamp, [path]))
    running = read_fact(RunningContainers) if restart else 0
    if not changing and recorded_lines == ([record] if record else []) and not restart:
        host.noop(f"{path} gives Docker the GPUs; Docker runs with it")
        return
    if changing:
        if wanted.text is None:
            yield StringCommand("rm", "-f", QuoteString(path))
        else:
            if present:  # Docker's directory, before Docker made it
                yield StringCommand("mkdir", "-p", "-m", "755", QuoteString(path.rsplit("/", 1)[0]))
            yield script("text-file", path, "644", wanted.text)
    if record is None:
        yield StringCommand("rm", "-f", QuoteString(ledger))
    elif recorded_lines != [record]:
        yield script("text-file", ledger, "600", record + "\n")
    if not restart:
        return
    if running and not allow_running:
        warn_host(f"docker runs {running} container(s): its changed configuration ({path}) waits "
                  "for its next restart (set rocm_containers_restart_running: true to restart it "
                  "now)")  # fmt: skip
        return
    yield script("engine-restart", "docker", stamp)


@operation()
def subordinate_ids(needed: list[SubIds], ledger: str, keep: list[str]):
    """Take back the ranges ``ledger`` records for users not in ``keep``; give the ``needed``
    ones, recording each in ``ledger``."""
    gone = others_subids(read_fact(Ledger, path=ledger), keep)
    if gone:
        yield script("subids", "del", ledger, *gone)
    if needed:
        yield script("subids", "add", ledger, *(ids.line for ids in needed))
    if not gone and not needed:
        host.noop("rootless users have their subordinate IDs; none recorded for others")


@operation()
def images_pulled(engine: str, refs: list[str]):
    """Pull each image of ``refs`` that ``engine`` (as root) doesn't have."""
    missing = [ref for ref in refs if not read_fact(ImagePresent, engine=engine, ref=ref)]
    if not missing:
        host.noop(f"{engine} has {', '.join(refs)}")
        return
    for ref in missing:
        yield StringCommand(QuoteString(engine), "pull", "--quiet", QuoteString(ref))
