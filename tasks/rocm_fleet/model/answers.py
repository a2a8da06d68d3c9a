"""The facts' answers as types, without pyinfra; each docstring names its fact."""

from dataclasses import dataclass
from typing import TypedDict


class DistroReleaseDict(TypedDict):
    id: str | None
    id_like: list[str]
    version_id: str | None
    codename: str | None
    point_release: str | None
    pretty_name: str | None


class IdentityDict(TypedDict):
    uid: int | None
    user: str | None


# "class" is a keyword, hence the functional TypedDict syntax.
PciGpu = TypedDict(
    "PciGpu",
    {
        "slot": str,
        "vendor": str,
        "device": str,
        "class": str,
        "driver": "str | None",
        "vram_total": "int | None",
        "gtt_total": "int | None",
    },
)


class KfdNode(TypedDict):
    node: int
    gfx: str
    gfx_target_version: int
    device_id: str | None
    slot: str | None
    drm_render_minor: int | None
    simd_count: int | None
    properties: dict[str, int]


class AmdgpuModuleDict(TypedDict):
    loaded: bool
    version: str | None
    initstate: str | None


class ApuMemoryDict(TypedDict):
    mem_total: int | None
    gttsize: list[tuple[str, str]]
    pages_limit: list[tuple[str, str]]


class RebootRequiredDict(TypedDict):
    required: bool
    packages: list[str]
    reasons: list[str]


class FreeSpaceDict(TypedDict):
    path: str
    mount: str
    avail: int


class PurgeDict(TypedDict):
    removes: list[str]  # every package apt would take off, the asked ones included
    errors: list[str]  # apt's "E:" lines: it could not work the removal out


class PackagePurgeDict(TypedDict):
    packages: dict[str, str]
    purge: PurgeDict


class DistroRocmDict(TypedDict):
    packages: dict[str, str]
    needed_by: dict[str, list[str]]
    tools: dict[str, str]
    conflicting: list[str]
    purge_conflicting: PurgeDict | None
    purge_kept: PurgeDict | None


class SecureBootDict(TypedDict):
    state: str
    shim_validation_disabled: bool
    setup_mode: bool
    message: str


class MokKeyStateDict(TypedDict):
    state: str
    message: str


class MokPendingDict(TypedDict):
    pending: bool
    fingerprint: str | None
    requests: list[str]


class FileDigestDict(TypedDict):
    mode: str
    sha256: str
    mtime: int


class GroupMembershipDict(TypedDict):
    groups: list[str]
    users: dict[str, list[str] | None]


@dataclass(frozen=True)
class InstallSize:
    """What apt says installing the release's packages adds (``facts.apt.AptInstallSize``)."""

    need: int | None  # bytes; 0 when all are installed already, None when apt couldn't tell
    message: str  # apt's own words, for the finding that quotes them


@dataclass(frozen=True)
class LastPull:
    """What the last pull did, as the node recorded it (``facts.files.PullStatus``)."""

    result: str  # rocm-fleet-pull.sh's result word ("converged", "bad-signature", ...)
    started: int  # when it started, seconds since the epoch (0: not recorded)
