"""GPU containers as the audit judges them: what a node shows of its container side against the
inventory's engines and users and the GPUs KFD reports."""

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rocm_fleet.model import container_toolkit, paths
from rocm_fleet.model.answers import KfdNode

SPEC = paths.CDI_SPEC
DAEMON_JSON = paths.DOCKER_DAEMON_JSON
RUNTIME = container_toolkit.RUNTIME_NAME

GROUPS = paths.GPU_GROUPS  #: what a rootless Podman user needs (AMD's running-workloads.rst)


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
