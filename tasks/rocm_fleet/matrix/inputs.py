"""What every reader of the matrix's upstream files shares: the error, TOML and YAML inputs,
cited overrides, release ordering, and the data files' JSON form (one row per line)."""

import json
import tomllib
from pathlib import Path

from rocm_fleet.atomic import write_atomically
from rocm_fleet.model.versions import release_key

# The distros the matrix knows (model/matrix.py DISTROS), in its order.
MATRIX_DISTROS = ("ubuntu 22.04", "ubuntu 24.04", "ubuntu 26.04", "debian 12", "debian 13")
# The streams, their repositories (model/matrix.py REPOSITORIES) and their order.
STREAMS = ("classic", "core-sdk")
REPOSITORIES = ("repo.radeon.com", "repo.amd.com", "stable.repo.amd.com")

# What each release field was read from, as the data file and docs/supported-releases.md name it.
FROM_TABLE = "AMD compatibility table"
FROM_OS_SUPPORT = "AMD os-support.yaml"
FROM_PYTORCH = "PyTorch RELEASE.md"
FROM_OVERRIDE = "override"
FROM_HISTORY = "AMD versions.rst"
FROM_PYTORCH_NONE = f"{FROM_PYTORCH} (names no index for it)"
FROM_BUILD_MATRIX = "PyTorch build matrix"  # pytorch/test-infra generate_binary_build_matrix.py
# Each origin a row's ``from`` may name, as the tables print it (upstream_data.json "origins").
ORIGINS = {
    FROM_TABLE: "AMD's table",
    FROM_OS_SUPPORT: "AMD's os-support.yaml",
    FROM_PYTORCH: "PyTorch's matrix",
    FROM_PYTORCH_NONE: "PyTorch's matrix (none)",
    FROM_OVERRIDE: "recorded observation",
    FROM_HISTORY: "AMD's release history",
    FROM_BUILD_MATRIX: "PyTorch's build matrix",
}

version_key = release_key  # the order of releases: "6.4.3" -> (6, 4, 3)


class MatrixDataError(ValueError):
    """An input, record or override isn't in the form the data is built from (file, row, fault)."""


def read_toml(path: Path) -> dict:
    """The TOML file at ``path`` (a record or the overrides)."""
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise MatrixDataError(f"{path}: {err}") from err


# The field that names an override entry in an error, the first an entry has.
ENTRY_NAMES = ("gfx", "distro", "id", "version")


def cited(entries: list[dict], section: str, fields: set[str], overrides: Path | str,
          choices: dict[str, tuple[str, ...]] | None = None) -> list[dict]:  # fmt: skip
    """The override entries of ``section``, each checked for a citation, known fields and, for a
    field in ``choices``, one of its valid values."""
    for entry in entries:
        unknown = set(entry) - fields - {"source"}
        name = next((str(entry[f]) for f in ENTRY_NAMES if f in entry), "?")
        if unknown:
            raise MatrixDataError(
                f"{overrides}: [[{section}]] {name}: unknown field(s) {sorted(unknown)}; "
                f"valid: {sorted(fields | {'source'})}"
            )
        if not str(entry.get("source", "")).strip():
            raise MatrixDataError(f"{overrides}: [[{section}]] {name} has no source")
        for key, valid in (choices or {}).items():
            if key in entry and entry[key] not in valid:
                raise MatrixDataError(
                    f"{overrides}: [[{section}]] {name}: {key} {entry[key]!r}; "
                    f"valid: {', '.join(valid)}"
                )
    return entries


def stored_entry(records: Path, name: str) -> dict:
    """``records``' stored/SOURCES.toml entry for the stored file ``name`` ({} if none)."""
    return read_toml(records / "stored" / "SOURCES.toml").get("files", {}).get(name) or {}


def read_yaml(text: str, where: str) -> object:
    """AMD's YAML file, parsed (PyYAML, the ``matrix`` extra, is imported here only)."""
    try:
        import yaml
    except ImportError as err:
        raise MatrixDataError(
            f"{where}: reading AMD's YAML needs PyYAML: pip install 'rocm-fleet[matrix]'"
        ) from err
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise MatrixDataError(f"{where}: {err}") from err


def render(data: dict) -> str:
    """A data file: JSON, each list one row per line (a diff names the row)."""
    parts = []
    for key, value in data.items():
        if isinstance(value, list):
            rows = ",\n".join(f"    {json.dumps(row, ensure_ascii=False)}" for row in value)
            body = f"[\n{rows}\n  ]"
        else:
            body = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n  ")
        parts.append(f"  {json.dumps(key)}: {body}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def write(path: Path, data: dict) -> Path:
    """Write a data file (atomically: a reader never sees half a file)."""
    write_atomically(path, render(data))
    return path
