"""The release rows of upstream_data.json: AMD's table's releases, cited overrides filling only
what upstream is silent on, the release history's, each release's PyTorch index; each value
names its ``from``."""

from __future__ import annotations

import tomllib

from rocm_fleet.matrix.inputs import (
    FROM_BUILD_MATRIX,
    FROM_HISTORY,
    FROM_OS_SUPPORT,
    FROM_OVERRIDE,
    FROM_PYTORCH,
    FROM_PYTORCH_NONE,
    FROM_TABLE,
    MATRIX_DISTROS,
    REPOSITORIES,
    STREAMS,
    MatrixDataError,
    cited,
    version_key,
)
from rocm_fleet.matrix.pytorch_tables import torch_index

OVERRIDE_FIELDS = {"version", "stream", "repository", "amdgpu_driver", "torch_index", "source"}


def load_overrides(text: str) -> list[dict]:
    """The hand-kept release overrides, each cited."""
    try:
        entries = tomllib.loads(text).get("release", [])
    except tomllib.TOMLDecodeError as err:
        raise MatrixDataError(f"matrix_overrides.toml: {err}") from err
    choices = {"stream": STREAMS, "repository": REPOSITORIES}
    return cited(entries, "release", OVERRIDE_FIELDS, "matrix_overrides.toml", choices)


def release_rows(table: dict[str, dict], support: dict, stable: dict[str, str],
                 overrides: list[dict], history: dict[str, str] | None = None,
                 built: set[str] | None = None) -> tuple[list[dict], list[str]]:  # fmt: skip
    """(the release rows, notes for the maintainer); ``built`` (the build matrix's ROCm versions)
    gives an index where RELEASE.md names none."""
    table_origin = {"row": FROM_TABLE, "amdgpu_driver": FROM_TABLE}
    rows = {v: _row(v, "classic", "repo.radeon.com", table_origin, None, **found)
            for v, found in table.items()}  # fmt: skip
    notes: list[str] = []
    for entry in overrides:
        version = entry["version"]
        row = rows.get(version)
        cite = FROM_OVERRIDE
        source = " ".join(entry["source"].split())
        if row is None:
            rows[version] = _row(version, entry.get("stream", "classic"),
                                 entry.get("repository", "repo.radeon.com"),
                                 {"row": cite, "amdgpu_driver": cite}, source, support,
                                 amdgpu_driver=entry.get("amdgpu_driver"))  # fmt: skip
        else:
            filled = "torch_index" in entry  # checked against RELEASE.md below
            for field in ("stream", "repository", "amdgpu_driver"):
                if field not in entry:
                    continue
                if row[field] is None:
                    row[field], row["from"][field] = entry[field], cite
                    filled = True
                elif row[field] == entry[field]:
                    notes.append(
                        f"override of {version} {field} is redundant: {FROM_TABLE} now gives "
                        f"{row[field]!r}; drop it from matrix_overrides.toml"
                    )
                else:
                    raise MatrixDataError(
                        f"matrix_overrides.toml: release {version} {field} = {entry[field]!r} "
                        f"contradicts {FROM_TABLE} ({row[field]!r}): overrides only fill what "
                        "upstream is silent on"
                    )
            if not filled:  # AMD's table now lists the release and all it says
                notes.append(
                    f"override of {version} is redundant: {FROM_TABLE} now lists it; drop it "
                    "from matrix_overrides.toml"
                )
                continue
        row = rows[version]
        row["source"] = source
        if "torch_index" in entry:
            row["torch_index"], row["from"]["torch_index"] = entry["torch_index"], cite
    if history is not None:
        notes += _from_history(rows, history, support)
    for row in rows.values():
        index, origin = torch_index(row["version"], stable), FROM_PYTORCH
        if index is None and built:
            index, origin = torch_index(row["version"], built), FROM_BUILD_MATRIX
        if index is None:
            row["from"].setdefault("torch_index", FROM_PYTORCH_NONE)
        elif "torch_index" in row["from"] and row["torch_index"] != index:
            raise MatrixDataError(
                f"matrix_overrides.toml: release {row['version']} torch_index = "
                f"{row['torch_index']!r} contradicts {origin} ({index!r})"
            )
        elif "torch_index" in row["from"]:
            notes.append(f"override of {row['version']} torch_index is redundant: "
                         f"{origin} now gives {index!r}")  # fmt: skip
        else:
            row["torch_index"], row["from"]["torch_index"] = index, origin
        if row["amdgpu_driver"] is None:
            row["from"].pop("amdgpu_driver", None)
    ordered = sorted(
        rows.values(), key=lambda r: (STREAMS.index(r["stream"]), version_key(r["version"]))
    )
    return ordered, notes


def _row(version: str, stream: str, repository: str, origins: dict, source: str | None,
         support: dict | None = None, **found: object) -> dict:  # fmt: skip
    """A release row; a Core SDK one AMD's table lacks lists os-support.yaml's distros (the
    Core SDK's current listing: none per release)."""
    core = support is not None and stream == "core-sdk"
    return {
        "version": version, "stream": stream, "repository": repository,
        "distros": [d for d in MATRIX_DISTROS if d in support["families"]] if core
        else found.get("distros"),
        "gfx": found.get("gfx"), "amdgpu_driver": found.get("amdgpu_driver"), "torch_index": None,
        "from": {**origins, **({"distros": FROM_OS_SUPPORT} if core else {})}, "source": source,
    }  # fmt: skip


def _like(version: str, rows: dict[str, dict]) -> dict | None:
    """The known release a new one belongs with: the newest of the same X.Y, else of X."""
    key = version_key(version)
    for width in (2, 1):
        same = [r for r in rows.values() if version_key(r["version"])[:width] == key[:width]]
        if same:
            return max(same, key=lambda r: version_key(r["version"]))
    return None


def _from_history(rows: dict[str, dict], history: dict[str, str], support: dict) -> list[str]:
    """Add the releases only AMD's release history lists, in their neighbours' stream; notes."""
    notes: list[str] = []
    oldest = min(version_key(v) for v in rows) if rows else (0,)
    for version, released in sorted(history.items(), key=lambda kv: version_key(kv[0])):
        if version in rows or version_key(version) < oldest:
            continue
        like = _like(version, rows)
        if like is None:
            notes.append(
                f"{FROM_HISTORY} lists {version} ({released}), in no stream the data knows: "
                "add it to matrix_overrides.toml with its stream and source"
            )
            continue
        same = f"as {like['version']}"
        rows[version] = _row(version, like["stream"], like["repository"],
                             {"row": FROM_HISTORY, "stream": same, "repository": same},
                             f"{FROM_HISTORY}: {version} released {released}", support)  # fmt: skip
        notes.append(
            f"new release {version} ({released}) from {FROM_HISTORY}: no driver until "
            "matrix_overrides.toml names one with its source (dkms refused meanwhile)"
        )
    for row in rows.values():
        if "versions.rst" in (row["source"] or "") and row["version"] not in history:
            notes.append(
                f"release {row['version']}: its source cites versions.rst, which doesn't "
                "list it; cite what does"
            )
    return notes
