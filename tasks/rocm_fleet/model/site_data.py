"""A site's own matrix data (``rocm_matrix_data`` or ``ROCM_FLEET_MATRIX_DATA``): releases newer
than this rocm-fleet; only their form is checked here (docs/decisions/site-matrix-data.md)."""

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocm_fleet.model import gpu_targets, matrix, streams, torch_builds
from rocm_fleet.model.torch_builds import AMD_STABLE_WHEEL_INDEX, AmdWheels
from rocm_fleet.model.versions import is_build_version, is_driver_folder, is_full_release

ENVIRONMENT = "ROCM_FLEET_MATRIX_DATA"
FORMAT = "rocm-fleet site matrix data 1"
MAX_BYTES = 1 << 20

_ROW_FIELDS = {"version", "stream", "repository", "torch_index", "amdgpu_driver", "amd_wheels",
               "found"}  # fmt: skip
_WHEEL_FIELDS = {"builds", "targets", "target_builds"}
# Which committed repositories a stream's new release may be in.
_STREAM_REPOSITORIES = {
    streams.CLASSIC.name: (streams.CLASSIC_REPOSITORY,),
    streams.CORE_SDK.name: (streams.MULTI_ARCH_REPOSITORY, streams.STABLE_REPOSITORY),
}


class SiteDataError(ValueError):
    """An unusable site file; the message names the file, field, value and what is valid."""


@dataclass(frozen=True)
class SiteData:
    """A parsed site file: its ``added`` releases, path and SHA-256."""

    path: Path
    sha256: str
    added: tuple[matrix.Release, ...]

    @property
    def provenance(self) -> str:
        """What the audit and --dry name: the file and the hash of what was read."""
        return f"{self.path} (sha256 {self.sha256})"

    def release(self, version: str) -> matrix.Release:
        """The committed row for ``version``, else this file's; raises KeyError."""
        try:
            return matrix.release(version)
        except KeyError:
            return {rel.version: rel for rel in self.added}[version]

    def adds(self, version: str) -> bool:
        return any(rel.version == version for rel in self.added)

    def release_versions(self) -> list[str]:
        return [*matrix.release_versions(), *(rel.version for rel in self.added)]


def where_set(setting: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The host's ``rocm_matrix_data``, else ``ROCM_FLEET_MATRIX_DATA``, else None."""
    return setting or environ.get(ENVIRONMENT) or None


_LOADED: dict[tuple[str, str], SiteData] = {}


def load(path: str | os.PathLike[str]) -> SiteData:
    """The checked site file at ``path`` (cached per content); raises SiteDataError."""
    where = Path(path)
    try:
        with where.open("rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise SiteDataError(f"site matrix data {where}: can't read it ({exc.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise SiteDataError(f"site matrix data {where}: larger than {MAX_BYTES} bytes")
    digest = hashlib.sha256(raw).hexdigest()
    key = (str(where), digest)
    if key not in _LOADED:
        _LOADED[key] = parse(raw, where, digest)
    return _LOADED[key]


def parse(raw: bytes, path: Path, digest: str | None = None) -> SiteData:
    """A site file's bytes as SiteData; raises SiteDataError."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SiteDataError(f"site matrix data {path}: not JSON ({exc})") from None
    problem = _Problems(path)
    problem.fields(data, "", {"_comment", "format", "written_by", "releases"},
                   "a site file holds 'format' and 'releases' only")  # fmt: skip
    if data.get("format") != FORMAT:
        raise problem("format", data.get("format"), f"{FORMAT!r} (written by `rocm-fleet "
                      "matrix update --output`)")  # fmt: skip
    rows = data.get("releases")
    if not isinstance(rows, list):
        raise problem("releases", rows, "a list of release rows")
    added: list[matrix.Release] = []
    for index, row in enumerate(rows):
        rel = _release(row, f"releases[{index}]", problem)
        if any(other.version == rel.version for other in added):
            raise problem(f"releases[{index}].version", rel.version, "each release once")
        try:
            committed = matrix.release(rel.version)
        except KeyError:
            added.append(rel)
            continue
        if _comparable(committed) != _comparable(rel):
            raise problem(
                f"releases[{index}]", rel.version,
                "a release rocm-fleet doesn't commit: a site file can only add releases, "
                f"and its row for {rel.version} differs from the committed one "
                f"(`rocm-fleet matrix --json` shows it)",
            )  # fmt: skip
    return SiteData(path, digest or hashlib.sha256(raw).hexdigest(), tuple(added))


def _comparable(rel: matrix.Release) -> tuple[Any, ...]:
    return (rel.version, rel.stream.name, rel.repository.name, rel.torch_index,
            rel.amdgpu_driver, rel.amd_wheels)  # fmt: skip


class _Problems:
    """Builds the SiteDataError of one file's field."""

    def __init__(self, path: Path):
        self.path = path

    def __call__(self, field: str, value: Any, valid: str) -> SiteDataError:
        at = f" field {field!r}" if field else ""
        shown = json.dumps(value)
        shown = shown if len(shown) <= 120 else shown[:117] + "..."
        return SiteDataError(
            f"site matrix data {self.path}:{at} has value {shown}; expected {valid}"
        )

    def fields(self, value: Any, at: str, allowed: set[str], why: str) -> None:
        """Refuse a value that isn't an object, or one with a field not in ``allowed``."""
        if not isinstance(value, dict):
            raise self(at, value, f"an object with {', '.join(sorted(allowed))}")
        if unknown := sorted(set(value) - allowed):
            raise self(f"{at}.{unknown[0]}".lstrip("."), value[unknown[0]],
                       f"no such field (it holds {', '.join(sorted(allowed))}; {why})")  # fmt: skip


def _release(row: Any, at: str, problem: _Problems) -> matrix.Release:
    problem.fields(row, at, _ROW_FIELDS, "hosts, URLs and keys are the committed matrix's alone")
    version = row.get("version")
    if not isinstance(version, str) or not is_full_release(version):
        raise problem(f"{at}.version", version, "a release X.Y.Z")
    by_name = {stream.name: stream for stream in streams.STREAMS}
    stream = by_name.get(row.get("stream"))  # type: ignore[arg-type]
    if stream is None:
        raise problem(f"{at}.stream", row.get("stream"), f"one of {', '.join(by_name)}")
    allowed = _STREAM_REPOSITORIES[stream.name]
    repository = next((r for r in allowed if r.name == row.get("repository")), None)
    if repository is None:
        names = ", ".join(r.name for r in allowed)
        raise problem(f"{at}.repository", row.get("repository"),
                      f"the name of a committed {stream.name} repository ({names})")  # fmt: skip
    driver = row.get("amdgpu_driver")
    if driver is not None and not (isinstance(driver, str) and is_driver_folder(driver)):
        raise problem(f"{at}.amdgpu_driver", driver, "an amdgpu folder such as '31.50', or null")
    torch_index = row.get("torch_index")
    indexes = torch_builds.TORCH_INDEXES
    if torch_index is not None and torch_index not in indexes:
        raise problem(f"{at}.torch_index", torch_index,
                      f"a PyTorch index the matrix knows ({', '.join(indexes)}), "
                      "or null")  # fmt: skip
    if "found" in row and not isinstance(row["found"], str):
        raise problem(f"{at}.found", row["found"], "where upstream publishes it (text)")
    wheels = row.get("amd_wheels")
    amd = None
    if wheels is not None:
        if stream is not streams.CORE_SDK or torch_index is not None:
            raise problem(f"{at}.amd_wheels", wheels,
                          "null: AMD's own wheels serve a Core SDK release without a "
                          "PyTorch index only")  # fmt: skip
        amd = _amd_wheels(wheels, version, f"{at}.amd_wheels", problem)
    no_torch = None if torch_index or amd else "the site's matrix data names no torch for it"
    return matrix.Release(version, stream, repository, torch_index, driver, no_torch, amd)


def _amd_wheels(value: Any, release: str, at: str, problem: _Problems) -> AmdWheels:
    problem.fields(value, at, _WHEEL_FIELDS,
                   f"the index is AMD's committed {AMD_STABLE_WHEEL_INDEX}")  # fmt: skip
    builds = value.get("builds")
    if not isinstance(builds, list) or not builds:
        raise problem(f"{at}.builds", builds, "a list of [torch, torchvision, torchaudio|null]")
    parsed = []
    for i, build in enumerate(builds):
        if not (isinstance(build, list) and len(build) == 3
                and all(_is_version(v) for v in build[:2])
                and (build[2] is None or _is_version(build[2]))):  # fmt: skip
            raise problem(f"{at}.builds[{i}]", build,
                          "[torch, torchvision, torchaudio or null], each a version "
                          "such as '2.15.0'")  # fmt: skip
        parsed.append(torch_builds.TorchBuild(*build))
    known = [t.gfx for t in gpu_targets.GPU_TARGETS]
    targets = value.get("targets")
    if not (isinstance(targets, list) and targets and all(t in known for t in targets)):
        raise problem(f"{at}.targets", targets,
                      f"a list of GPU targets the matrix knows ({', '.join(known)})")  # fmt: skip
    limits = value.get("target_builds", {})
    torches = {b.torch for b in parsed}
    if not (isinstance(limits, dict) and all(
        g in targets and isinstance(v, list) and v and set(v) <= torches
        for g, v in limits.items()
    )):  # fmt: skip
        raise problem(f"{at}.target_builds", limits,
                      "gfx target -> the torch versions of builds offered to it")  # fmt: skip
    return torch_builds.AmdWheels(
        torch_builds.AMD_STABLE_WHEEL_INDEX, release, tuple(parsed), tuple(targets),
        tuple((g, tuple(v)) for g, v in limits.items()),
    )  # fmt: skip


def _is_version(value: Any) -> bool:
    return isinstance(value, str) and is_build_version(value)


def row_json(rel: matrix.Release, found: str | None = None) -> dict[str, Any]:
    """A release as a site file's row (what ``parse`` reads back as the same Release)."""
    amd = rel.amd_wheels
    row: dict[str, Any] = {
        "version": rel.version, "stream": rel.stream.name, "repository": rel.repository.name,
        "torch_index": rel.torch_index, "amdgpu_driver": rel.amdgpu_driver,
        "amd_wheels": None if amd is None else {
            "builds": [[b.torch, b.torchvision, b.torchaudio] for b in amd.builds],
            "targets": list(amd.targets),
            "target_builds": {g: list(v) for g, v in amd.target_builds},
        },
    }  # fmt: skip
    if found:
        row["found"] = found
    return row


def render(releases: list[tuple[matrix.Release, str | None]]) -> str:
    """A site file holding ``releases`` ((row, where upstream publishes it))."""
    data = {
        "_comment": "A site's own matrix data: releases upstream published after this "
        "rocm-fleet, each verified against upstream when written and again before a deploy "
        "uses it. Adds only: hosts, URLs and keys stay rocm-fleet's.",
        "format": FORMAT,
        "written_by": "rocm-fleet matrix update --output",
        "releases": [row_json(rel, found) for rel, found in releases],
    }
    return json.dumps(data, indent=2) + "\n"
