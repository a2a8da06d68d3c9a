"""The audit's outlier rule: a host whose driver, firmware, kernel or ROCm differs from the
majority of its inventory group.

Drift admins otherwise find only when a job fails on the one node with another VBIOS or
kernel. Pure: the caller passes what the survey read, per host and per group.

* The majority is more than half of the group's hosts that reported the property; a host
  that didn't report it (unreachable, tool missing) is neither counted nor flagged.
* A tie, or no value held by more than half, is no majority: nobody is flagged (two halves
  of a group in the middle of a rolling upgrade are not outliers of each other).
* A group of fewer than three reporting hosts has no majority to differ from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from rocm_fleet.model.health import HostHealth
from rocm_fleet.model.host_survey import HostSurvey

#: what the rule compares, in report order
PROPERTIES = ("driver", "firmware", "kernel", "rocm")


@dataclass(frozen=True)
class HostVersions:
    """What one host runs; ``None`` where the survey could not tell."""

    driver: str | None = None  #: amdgpu's version (``/sys/module/amdgpu/version``, DKMS)
    firmware: str | None = None  #: GPU firmware (VBIOS / IFWI), joined if several GPUs differ
    kernel: str | None = None  #: running kernel release
    rocm: str | None = None  #: ``/opt/rocm/.info/version``

    def get(self, prop: str) -> str | None:
        return getattr(self, prop)


def versions_from_survey(survey: HostSurvey, health: HostHealth | None) -> HostVersions:
    """A host's versions from the preflight survey (``kernel``, ``rocm_version``, ``amdgpu``)
    and its amd-smi reading (the GPUs' firmware; several GPUs' differing ones joined)."""
    amdgpu = survey.amdgpu or {}
    firmware = sorted({gpu.firmware for gpu in health.gpus if gpu.firmware} if health else ())
    return HostVersions(
        driver=amdgpu.get("version") or None,  # AMD's DKMS amdgpu; the inbox one has none
        firmware="/".join(firmware) or None,
        kernel=survey.kernel or None,
        rocm=survey.rocm_version or None,
    )


@dataclass(frozen=True)
class Outlier:
    group: str
    host: str
    property: str  #: one of PROPERTIES
    value: str
    majority: str
    hosts_with_majority: int
    hosts_reporting: int

    def sentence(self) -> str:
        return (
            f"{self.host}: {self.property} {self.value}, but {self.hosts_with_majority} of "
            f"{self.hosts_reporting} hosts in group {self.group} have {self.majority}"
        )


def majority(values: list[str]) -> str | None:
    """The value more than half of ``values`` hold, or None (a tie, a plurality, < 3)."""
    if len(values) < 3:
        return None
    value, count = Counter(values).most_common(1)[0]
    return value if count * 2 > len(values) else None


def outliers(groups: Mapping[str, list[str]], hosts: Mapping[str, HostVersions]) -> list[Outlier]:
    """Each host that differs from its group's majority, per property. ``groups``: group name
    -> its hosts' names (a host in two groups is judged in each); ``hosts``: what each
    reported. Hosts missing from ``hosts`` are skipped."""
    found = []
    for group in sorted(groups):
        members = [name for name in groups[group] if name in hosts]
        for prop in PROPERTIES:
            reported = {name: hosts[name].get(prop) for name in members}
            values = [value for value in reported.values() if value is not None]
            common = majority(values)
            if common is None:
                continue
            count = values.count(common)
            found += [
                Outlier(group, name, prop, value, common, count, len(values))
                for name, value in sorted(reported.items())
                if value is not None and value != common
            ]
    return found
