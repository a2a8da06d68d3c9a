"""GPU containers as the audit judges them: what a node shows of its container side
(``ContainerView``, read by ``facts.containers``) against the inventory's engines and users and
the GPUs KFD reports (the spec's render nodes against KFD's: ``model.container_toolkit``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rocm_fleet.model import container_toolkit, paths
from rocm_fleet.model.answers import KfdNode

SPEC = paths.CDI_SPEC
KIND = container_toolkit.CDI_KIND

GROUPS = paths.GPU_GROUPS  #: what a rootless Podman user needs (AMD's running-workloads.rst)


@dataclass(frozen=True)
class ContainerView:
    """What the node shows: the engines whose command is there, the spec's text (None: no
    file), and the members of each of ``GROUPS`` (a group missing: absent)."""

    installed: tuple[str, ...] = ()
    spec: str | None = None
    members: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class ContainersVerdict:
    """``problems``: why GPU containers would not work as the inventory wants (empty: they
    would); ``spec``: ``current``, ``stale``, ``missing`` or ``unknown`` (no KFD to compare);
    ``gone``/``missed``: render nodes the spec names that KFD doesn't / the other way round."""

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
    named = container_toolkit.cdi_render_nodes(view.spec)
    found = container_toolkit.survey_render_nodes(list(kfd) if kfd is not None else None)
    gone: list[str] = []
    missed: list[str] = []
    if named is None:
        state = "missing"
        problems.append(f"no CDI spec ({SPEC})" if view.spec is None else f"{SPEC} is no AMD spec")
    elif found is None:
        state = "unknown"
    else:
        gone = [n for n in named if n not in found]
        missed = [n for n in found if n not in named]
        state = "stale" if gone or missed else "current"
        if gone:
            problems.append(f"the CDI spec names GPUs that are gone ({', '.join(gone)})")
        if missed:
            problems.append(f"the CDI spec misses GPUs ({', '.join(missed)})")
    if "podman" in engines:
        for user in rootless:
            lacking = [g for g in GROUPS if user not in view.members.get(g, ())]
            if lacking:
                problems.append(f"rootless user {user} is not in {' and '.join(lacking)}")
    return ContainersVerdict(tuple(problems), state, tuple(gone), tuple(missed))
