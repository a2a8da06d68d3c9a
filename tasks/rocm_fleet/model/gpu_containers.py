"""GPU containers as the audit judges them: what a node shows of its container side against the
inventory's engines and users and the GPUs KFD reports, and what rocm-fleet set up for them that
the inventory no longer wants (the feature's ledgers, read by its deploy and the audit alike)."""

import json
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocm_fleet.model import container_toolkit, grammar, paths
from rocm_fleet.model.answers import KfdNode

SPEC = paths.CDI_SPEC
DAEMON_JSON = paths.DOCKER_DAEMON_JSON
RUNTIME = container_toolkit.RUNTIME_NAME

GROUPS = paths.GPU_GROUPS  #: what a rootless Podman user needs (AMD's running-workloads.rst)
STATE_DIR = paths.CONTAINERS_STATE_DIR
#: the daemon.json keys rocm-fleet merged (one JSON object)
DAEMON_LEDGER = f"{STATE_DIR}/daemon-json"
#: the subordinate ID ranges rocm-fleet gave, ``USER uid|gid START COUNT`` a line
SUBID_LEDGER = f"{STATE_DIR}/subids"


@dataclass(frozen=True)
class ContainerView:
    """What the node shows: engines whose command is there, texts of the spec, ``dockerd
    --version``, daemon.json (None: no file) and ``podman --version``, and the members of each
    of ``GROUPS``."""

    installed: tuple[str, ...] = ()
    spec: str | None = None
    members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    docker_version: str | None = None
    daemon_json: str | None = None
    podman_version: str | None = None


def docker_problem(version_text: str | None, daemon_text: str | None) -> str | None:
    """Why Docker would not give containers the GPUs: its daemon.json lacks ``features.cdi``
    (from ``DOCKER_CDI``) or else ``runtimes.amd``; None when fine or the version is unknown."""
    found = re.search(r"(\d+)\.(\d+)", version_text or "")
    if found is None:
        return None
    try:
        config = json.loads(daemon_text) if daemon_text is not None else {}
    except ValueError:
        return f"{DAEMON_JSON} is not JSON"
    config = config if isinstance(config, dict) else {}
    features, runtimes = config.get("features"), config.get("runtimes")
    if (int(found[1]), int(found[2])) >= container_toolkit.DOCKER_CDI:
        if isinstance(features, dict) and features.get("cdi") is True:
            return None
        return f"Docker reads no CDI spec ({DAEMON_JSON} lacks features.cdi)"
    if isinstance(runtimes, dict) and RUNTIME in runtimes:
        return None
    return f"Docker has no AMD runtime ({DAEMON_JSON} lacks runtimes.{RUNTIME})"


@dataclass(frozen=True)
class ContainersVerdict:
    """Why GPU containers would not work as the inventory wants; ``spec``: as
    ``container_toolkit.cdi_spec_state``; ``gone``/``missed``: render nodes only the spec names /
    only KFD names."""

    problems: tuple[str, ...]
    spec: str
    gone: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()


def judge(
    engines: Sequence[str],
    rootless: Sequence[str],
    view: ContainerView,
    kfd: Sequence[KfdNode] | None,
) -> ContainersVerdict:
    """Whether GPU containers work on the node as ``engines`` and ``rootless`` users want."""
    problems = [f"{engine} is not installed" for engine in engines if engine not in view.installed]
    if "docker" in engines and "docker" in view.installed:
        docker = docker_problem(view.docker_version, view.daemon_json)
        problems += [docker] if docker else []
    podman = container_toolkit.engine_version(view.podman_version)
    if "podman" in engines and "podman" in view.installed and podman is not None:
        problems += [p] if (p := container_toolkit.podman_problem(podman)) else []
    named = container_toolkit.cdi_render_nodes(view.spec)
    found = container_toolkit.survey_render_nodes(list(kfd) if kfd is not None else None)
    both = named is not None and found is not None
    gone = [n for n in named or () if both and n not in found]  # type: ignore[operator]
    missed = [n for n in found or () if both and n not in named]  # type: ignore[operator]
    if named is None:
        state = "missing"
        problems.append(f"no CDI spec ({SPEC})" if view.spec is None else f"{SPEC} is no AMD spec")
    else:
        state = "unknown" if found is None else "stale" if gone or missed else "current"
    if gone:
        problems.append(f"the CDI spec names GPUs that are gone ({', '.join(gone)})")
    if missed:
        problems.append(f"the CDI spec misses GPUs ({', '.join(missed)})")
    if "podman" in engines:
        for user in rootless:
            if lacking := [g for g in GROUPS if user not in view.members.get(g, ())]:
                problems.append(f"rootless user {user} is not in {' and '.join(lacking)}")
    return ContainersVerdict(tuple(problems), state, tuple(gone), tuple(missed))


def set_up(packages: Mapping[str, str], sources: Sequence[Sequence[str]]) -> bool:
    """Whether rocm-fleet's container setup is on the node, as its survey shows it: AMD's
    toolkit installed, or its apt source (written first, removed last)."""
    source = paths.CONTAINER_TOOLKIT_SOURCE
    return container_toolkit.PACKAGE in packages or any(path == source for path, _ in sources)


def recorded_fragment(lines: list[str] | None) -> dict[str, Any] | None:
    """The daemon.json keys a ledger records as rocm-fleet's (None: none, or not a record)."""
    try:
        value = json.loads("\n".join(lines)) if lines else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def others_subids(ledger: Sequence[str], keep: Collection[str]) -> list[str]:
    """The lines of ``SUBID_LEDGER`` giving ranges to users not in ``keep``: what the deploy
    takes back."""
    found = []
    for line in ledger:
        parts = line.split()
        if (
            len(parts) == 4
            and parts[1] in ("uid", "gid")
            and all(p.isdigit() for p in parts[2:])
            and grammar.full(grammar.ROOTLESS_USER, parts[0])
            and parts[0] not in keep
        ):
            found.append(" ".join(parts))
    return found  # fmt: skip


def leftovers(
    engines: Sequence[str],
    rootless: Sequence[str],
    setup: bool,
    daemon_ledger: Sequence[str],
    subid_ledger: Sequence[str],
) -> tuple[str, ...]:
    """What rocm-fleet set up for GPU containers that the inventory no longer wants, as its deploy
    decides what to take back: with no ``engines``, its whole setup (``setup``: ``set_up``);
    else its daemon.json keys without Docker and the ranges of users no longer ``rootless``."""
    if not engines:
        return ("rocm-fleet's GPU container setup is still there (AMD's toolkit or its apt "
                "source)",) if setup else ()  # fmt: skip
    found = []
    if "docker" not in engines and recorded_fragment(list(daemon_ledger)) is not None:
        found.append(f"rocm-fleet's keys are still in {DAEMON_JSON} (docker is not wanted)")
    if gone := sorted({line.split()[0] for line in others_subids(subid_ledger, rootless)}):
        found.append(f"subordinate IDs rocm-fleet gave {', '.join(gone)} are still there")
    return tuple(found)
