"""The recorded upstream facts (tests/fixtures/upstream/*.toml), read for the lab's doubles and
for the unit test that holds the product's matrix to them.

The records are written from AMD's and PyTorch's own sources (each fact's source beside it in
the TOML), not from ``rocm_fleet.model.matrix``: a double built from them serves what the real
host serves, so a wrong matrix row fails in the lab as it would on a real machine.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from ._util import REPO_ROOT

DIRECTORY = REPO_ROOT / "tests" / "fixtures" / "upstream"


@cache
def load(name: str) -> dict:
    """One record file, e.g. ``load("repo.radeon.com")``."""
    with (DIRECTORY / f"{name}.toml").open("rb") as f:
        return tomllib.load(f)


def source(name: str) -> Path:
    return DIRECTORY / f"{name}.toml"


# --- repo.radeon.com ---------------------------------------------------------------------


@dataclass(frozen=True)
class ClassicRelease:
    version: str
    folder: str  # rocm/apt/<folder>
    driver_folder: str  # amdgpu/<driver_folder>/ubuntu
    date: str
    binding: str  # "sha1" or "modern": the radeon key's binding valid when AMD signed it
    signed: str | None  # the InRelease signature time where a log printed it

    @property
    def signature_time(self) -> datetime:
        """When the double signs the release: the recorded signature time, else noon of the
        release date (UTC)."""
        if self.signed:
            return datetime.fromisoformat(self.signed.replace("Z", "+00:00"))
        return datetime.fromisoformat(self.date).replace(hour=12, tzinfo=UTC)


def classic_releases() -> dict[str, ClassicRelease]:
    return {
        row["version"]: ClassicRelease(
            row["version"], row["folder"], row["driver_folder"], row["date"], row["binding"],
            row.get("signed"),
        )
        for row in load("repo.radeon.com")["release"]
    }  # fmt: skip


def classic_suites(version: str) -> dict[str, str]:
    """distro key -> repo.radeon.com suite for the distros the release's folder serves."""
    data = load("repo.radeon.com")["suites"]
    noble_from = tuple(int(p) for p in data["noble_from"].split("."))
    has_noble = tuple(int(p) for p in version.split(".")) >= noble_from
    return {
        key: suite for key, suite in data.items() if " " in key and (suite != "noble" or has_noble)
    }


def classic_packages(version: str) -> dict | None:
    """The recorded package sample of a release (build, upstream versions), None if none."""
    return load("repo.radeon.com")["packages"].get(version)


def package_depends() -> dict[str, list[str]]:
    packages = load("repo.radeon.com")["packages"]
    return {**packages["libraries"], **packages["meta"]}


# --- keys ----------------------------------------------------------------------------------


def sha1_binding_until() -> datetime:
    """The latest time AMD's classic key is recorded bound only by a SHA-1 self-signature."""
    first = load("keys")["radeon"]["bindings"][0]
    assert first["digest"] == "SHA1"
    return datetime.fromisoformat(first["until"].replace("Z", "+00:00"))


# --- repo.amd.com / stable.repo.amd.com ------------------------------------------------------


@dataclass(frozen=True)
class CoreRelease:
    version: str
    repository: str  # "multi-arch" or "stable"
    driver_folder: str  # "" when unknown


def core_releases() -> dict[str, CoreRelease]:
    return {
        row["version"]: CoreRelease(row["version"], row["repository"], row["driver_folder"])
        for row in load("repo.amd.com")["release"]
    }


def core_directories() -> dict[str, str]:
    return {k: v for k, v in load("repo.amd.com")["directories"].items() if " " in k}


def core_gfx_packages() -> tuple[str, ...]:
    return tuple(load("repo.amd.com")["packages"]["gfx"])


def core_build(version: str) -> int:
    """The Debian revision of a Core SDK release's packages (1 where none was recorded)."""
    return load("repo.amd.com")["packages"]["builds"].get(version, 1)


# --- download.pytorch.org ---------------------------------------------------------------------


def torch_indexes() -> dict[str, tuple[tuple[str, str, str | None], ...]]:
    """index -> (torch, torchvision, torchaudio or None) per build it lists: the index's
    record, and each stable torch PyTorch's build matrix (stored/pytorch-rocm-builds.toml,
    pytorch/test-infra) built for its ROCm, paired as another index's record pairs it."""
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for name, row in load("download.pytorch.org")["index"].items():
        if isinstance(row, dict):
            out[name] = [(t, v, a or None) for t, v, a in row["builds"]]
    paired = {build[0]: build for builds in out.values() for build in builds}
    with (DIRECTORY / "stored" / "pytorch-rocm-builds.toml").open("rb") as f:
        built = tomllib.load(f)["stable"]
    for torch, entry in built.items():
        for rocm in entry["rocm"]:
            builds = out.get(f"rocm{rocm}")
            if builds is not None and torch in paired and paired[torch] not in builds:
                builds.append(paired[torch])
    key = lambda build: tuple(int(p) for p in build[0].split("."))  # noqa: E731
    return {name: tuple(sorted(builds, key=key)) for name, builds in out.items()}


def torch_runtime(index: str) -> str | None:
    row = load("download.pytorch.org")["index"].get(index)
    return row.get("runtime") if isinstance(row, dict) else None


def release_index(version: str) -> str | None:
    """The download.pytorch.org index for a ROCm release (exact patch first, then minor);
    None when PyTorch publishes none."""
    table = load("download.pytorch.org")["release_index"]
    major, minor, patch = version.split(".")
    for key in (f"{major}.{minor}.{patch}", f"{major}.{minor}"):
        if key in table:
            return table[key] or None
    return None


# --- GPUs -------------------------------------------------------------------------------------


def gpu_targets() -> dict[str, dict]:
    return {k: v for k, v in load("gpus").items() if k.startswith("gfx")}


# --- AMD's wheel indexes for the Core SDK -------------------------------------------------------


def rocm_build_requires() -> list[str]:
    """What building TheRock's ``rocm`` sdist requires (its pyproject's ``[build-system]``)."""
    return list(load("repo.amd.com-whl")["runtime"]["rocm_build_requires"])


def amd_wheel_record() -> dict:
    """The whole record of AMD's wheel indexes (``[stable]``, ``[runtime]``, the others)."""
    return load("repo.amd.com-whl")


@dataclass(frozen=True)
class AmdWheelRelease:
    """What AMD's stable index serves a Core SDK release, as recorded."""

    version: str  # "10.0.0"
    label: str  # "rocm10.0.0"
    builds: tuple[tuple[str, str, str], ...]  # (torch, torchvision, torchaudio), exact
    targets: tuple[str, ...]  # gfx targets with a device extra
    target_builds: dict[str, tuple[str, ...]]  # gfx -> the only torch versions offered


def amd_stable_releases() -> dict[str, AmdWheelRelease]:
    rows = amd_wheel_record()["stable"]["release"]
    return {
        version: AmdWheelRelease(
            version,
            row["label"],
            tuple(tuple(b) for b in row["builds"]),
            tuple(row["device_targets"]),
            {g: tuple(v) for g, v in row.get("target_builds", {}).items()},
        )
        for version, row in rows.items()
    }


# --- a synthetic future release (synthetic-future.toml: NOT AMD's) ------------------------------

#: The Core SDK release the lab plays as "published after this rocm-fleet". AMD has not
#: published it; the product's matrix doesn't know it (a site's matrix data adds it).
FUTURE_RELEASE = "10.9.0"


def synthetic_core_releases() -> dict[str, CoreRelease]:
    """The synthetic Core SDK releases, as ``core_releases`` gives the recorded ones."""
    rows = load("synthetic-future")["core_release"]
    return {v: CoreRelease(v, row["repository"], row["driver_folder"]) for v, row in rows.items()}


def synthetic_amd_stable_releases() -> dict[str, AmdWheelRelease]:
    """What the double of AMD's stable index serves the synthetic releases."""
    rows = load("synthetic-future")["wheels"]
    return {
        version: AmdWheelRelease(
            version, row["label"], tuple(tuple(b) for b in row["builds"]),
            tuple(row["device_targets"]), {},
        )
        for version, row in rows.items()
    }  # fmt: skip
