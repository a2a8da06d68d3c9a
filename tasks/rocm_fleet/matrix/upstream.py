"""upstream_data.json from AMD's and PyTorch's files, its diff with the committed file, and what
upstream publishes that the matrix lacks."""

import json
import tomllib
from dataclasses import dataclass, field

from rocm_fleet.matrix.amd_tables import (
    amd_drivers,
    classic_releases,
    gpu_listed_from,
    gpu_products,
    os_support,
    release_history,
)
from rocm_fleet.matrix.device_tables import unknown_pci_devices
from rocm_fleet.matrix.inputs import (
    FROM_BUILD_MATRIX,
    FROM_HISTORY,
    FROM_OS_SUPPORT,
    FROM_OVERRIDE,
    FROM_PYTORCH,
    FROM_PYTORCH_NONE,
    FROM_TABLE,
    MATRIX_DISTROS,
    ORIGINS,
    REPOSITORIES,
    STREAMS,
    MatrixDataError,
    cited,
    version_key,
)
from rocm_fleet.matrix.pytorch_tables import (
    built_rocm,
    listing_versions,
    torch_index,
    torch_stable_rocm,
)

# The inputs every run reads; the others are optional (see build()).
REQUIRED_SOURCES = ("historical_csv", "os_support", "pytorch_release")


def discoveries(data: dict, pci_devices: dict[str, str] | None = None,
                known_pci: dict[str, tuple[str, str]] | None = None,
                known_gfx: set[str] | None = None,
                torch_builds: dict[str, set[str]] | None = None) -> list[str]:  # fmt: skip
    """What the upstream files publish that the matrix doesn't have, one line each."""
    lines: list[str] = []
    if known_gfx is not None:
        for gfx, families in (data.get("gpu_products") or {}).items():
            if gfx not in known_gfx:
                named = "; ".join(f"{f}: {', '.join(p)}" for f, p in families.items())
                lines.append(f"gpus.yaml lists {gfx} ({named}), not in the matrix's GPU list")
    if pci_devices is not None and known_pci is not None:
        lines += unknown_pci_devices(pci_devices, known_pci)
    if torch_builds is not None:  # keyed by local label: "rocm6.3", AMD's "rocm10.1.0"
        for index, projects in (data.get("torch_listed") or {}).items():
            for label, versions in projects.get("torch", {}).items():
                if not label.startswith("rocm"):
                    continue  # CPU / CUDA builds an index may also carry
                known = torch_builds.get(label)
                missing = sorted(set(versions) - (known or set()), key=version_key)
                why = ("a build label no release of the matrix uses" if known is None
                       else "which the matrix's builds for it lack")  # fmt: skip
                if known is None or missing:
                    lines.append(f"{index} lists torch {', '.join(missing)} +{label}, {why}")
    drivers = list(data.get("amdgpu_drivers") or {})
    for row in data["releases"]:
        if drivers and row["amdgpu_driver"] is None and version_key(row["version"])[0] >= 7:
            lines.append(f"release {row['version']} has no driver; AMD's driver list's "
                         f"newest is {drivers[0]}")  # fmt: skip
    return lines


def matrix_knows() -> tuple[dict[str, tuple[str, str]], set[str], dict[str, set[str]]]:
    """What the matrix has, for discoveries(): (PCI ID -> (gfx, name), GPU targets, per local
    label its torch versions)."""
    from rocm_fleet.model import gpu_targets, pci_ids, torch_builds

    known_pci = {d: (row.gfx, row.name) for d, row in pci_ids.PCI_DEVICES.items()}
    gfx = {t.gfx for t in gpu_targets.GPU_TARGETS}
    torch = {i: {b.torch for b in builds} for i, builds in torch_builds.TORCH_INDEXES.items()}
    for wheels in torch_builds.AMD_WHEELS.values():  # 10.x's torch, and 7.14.x's on AMD's index
        torch[wheels.label] = {b.torch for b in wheels.builds}
    return known_pci, gfx, torch


@dataclass
class Inputs:
    """The files read, as text; the optional ones None where not given."""

    historical: str
    os_support: str
    release_md: str
    overrides: str
    history: str | None = None
    drivers: str | None = None
    gpus: str | None = None
    listings: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (page, url)
    build_matrix: str | None = None  # stored/pytorch-rocm-builds.toml


def build(inputs: Inputs, sources: dict[str, str],
          previous: dict | None = None) -> tuple[dict, list[str]]:  # fmt: skip
    """(upstream_data.json's content, notes); an optional input not given keeps ``previous``'s."""
    previous = previous or {}
    table = classic_releases(inputs.historical)
    support = os_support(inputs.os_support)
    stable = torch_stable_rocm(inputs.release_md)
    history = release_history(inputs.history) if inputs.history is not None else None
    built = built_rocm(inputs.build_matrix) if inputs.build_matrix is not None else None
    releases, notes = release_rows(
        table, support, stable, load_overrides(inputs.overrides), history, built
    )
    if history is None:  # the release history's rows: kept as committed
        have = {r["version"] for r in releases}
        kept = [
            r
            for r in previous.get("releases", [])
            if r.get("from", {}).get("row") == FROM_HISTORY and r["version"] not in have
        ]
        releases = sorted([*releases, *kept], key=_release_order)
    sources = {**{k: v for k, v in previous.get("sources", {}).items()
                  if k not in REQUIRED_SOURCES}, **sources}  # fmt: skip
    data = {
        "_comment": "Generated by tools/matrix_update.py from AMD's and PyTorch's "
        "machine-readable files and tools/matrix_overrides.toml; do not edit (run the tool "
        "and review its diff).",
        "sources": sources,
        "gpu_listed_from": gpu_listed_from(inputs.historical),
        "os_families": support["families"],
        "core_sdk_debian": support["per_model"],
        "torch_stable_rocm": stable,
        "origins": ORIGINS,
        "releases": releases,
    }
    ours = {r["version"] for r in releases}
    optional = {
        "release_dates": (inputs.history, lambda: {
            v: d for v, d in (history or {}).items() if v in ours}),
        "amdgpu_drivers": (inputs.drivers, lambda: amd_drivers(inputs.drivers)),
        "gpu_products": (inputs.gpus, lambda: dict(sorted(gpu_products(inputs.gpus).items()))),
        "torch_listed": (inputs.listings or None, lambda: {
            **previous.get("torch_listed", {}), **listing_versions(inputs.listings)}),
    }  # fmt: skip
    for section, (given, read) in optional.items():
        if given is not None:
            data[section] = read()
        elif section in previous:
            data[section] = previous[section]
    return data, notes


def row_diff(old: dict, new: dict) -> list[str]:
    """How ``new`` differs from ``old``, a line per changed row or field with its origin."""
    lines: list[str] = []
    for section in dict.fromkeys([*old, *new]):
        if section == "_comment":
            continue
        before, after = old.get(section), new.get(section)
        if section == "releases":
            before = {r["version"]: r for r in before or []}
            after = {r["version"]: r for r in after or []}
        if isinstance(before, dict) and isinstance(after, dict):
            for key in dict.fromkeys([*before, *after]):
                b, a = before.get(key), after.get(key)
                if b == a:
                    continue
                if section != "releases" or b is None or a is None:
                    lines.append(f"{section} {key}: {json.dumps(b)} -> {json.dumps(a)}")
                    continue
                for field in dict.fromkeys([*b, *a]):
                    if field != "from" and b.get(field) != a.get(field):
                        origin = a.get("from", {}).get(field, a.get("from", {}).get("row"))
                        lines.append(f"releases {key} {field}: {json.dumps(b.get(field))} -> "
                                     f"{json.dumps(a.get(field))}  [{origin}]")  # fmt: skip
                if b.get("from") != a.get("from"):
                    lines.append(f"releases {key} from: {json.dumps(b.get('from'))} -> "
                                 f"{json.dumps(a.get('from'))}")  # fmt: skip
        elif before != after:
            lines.append(f"{section}: {json.dumps(before)} -> {json.dumps(after)}")
    return lines


# upstream_data.json's release rows: AMD's table's, cited overrides filling only what upstream
# is silent on, the release history's, each release's PyTorch index; each value its ``from``.
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
    return sorted(rows.values(), key=_release_order), notes


def _release_order(row: dict) -> tuple:
    return STREAMS.index(row["stream"]), version_key(row["version"])


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


def _from_history(rows: dict[str, dict], history: dict[str, str], support: dict) -> list[str]:
    """Add the releases only AMD's release history lists, in their neighbours' stream; notes."""
    notes: list[str] = []
    oldest = min(version_key(v) for v in rows) if rows else (0,)
    for version, released in sorted(history.items(), key=lambda kv: version_key(kv[0])):
        if version in rows or version_key(version) < oldest:
            continue
        key, like = version_key(version), None  # the newest known of the same X.Y, else of X
        for width in (2, 1):
            same = [r for r in rows.values() if version_key(r["version"])[:width] == key[:width]]
            if same:
                like = max(same, key=lambda r: version_key(r["version"]))
                break
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
