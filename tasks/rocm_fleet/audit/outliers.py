"""The audit's outlier rule, pure: a host whose driver, firmware, kernel or ROCm differs from
the strict majority (more than half, of at least three reporting hosts) of its group. Hosts
that didn't report a property are neither counted nor flagged.
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
    """A host's versions from its survey and its amd-smi reading."""
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
    """Each host differing from its group's majority, per property; a host is judged in each
    of its groups, and skipped if missing from ``hosts``."""
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
