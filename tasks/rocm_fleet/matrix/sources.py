"""Where the matrix's other rows come from (``matrix --sources``, ``--json``, the docs)."""

from __future__ import annotations

from typing import Any

from rocm_fleet.model import upstream_data

# Per data file section: its title and the row's values to show, the row's key first.
SOURCE_TABLES = {
    "gpu_targets": ("GPU targets", ("gfx", "family", "products")),
    "distros": ("Distros", ("key", "suite", "python", "glibc")),
    "min_kernel": ("Oldest kernel AMD lists", ("distro", "kernel")),
    "inbox_min_kernel": ("Oldest kernel whose inbox amdgpu runs the target", ("gfx", "kernel")),
    "newer_kernels": ("Newer kernels", ("distro", "kind", "suite", "packages")),
    "family_kernel": ("The kernel AMD lists per distro and GPU family (Core SDK)",
                      ("distro", "family", "kernel", "kind")),
    "driver_kernel": ("The newest kernel each amdgpu-dkms release supports (its kernel base)",
                      ("driver", "dkms", "max_kernel")),
    "indexes": ("PyTorch indexes", ("index", "builds", "runtime")),
    "amd_wheels": ("AMD's wheels (Core SDK 10.x; 7.14.x on AMD's own index)",
                   ("release", "builds", "targets")),
    "repositories": ("AMD's apt repositories", ("name", "base_url", "key_url")),
    "streams": ("Signing keys and Release Origins", ("name", "key_fingerprint", "pin_origin")),
    "publications": ("What each stream publishes per distro",
                     ("stream", "distro", "suite", "directory", "first_release", "instinct_only")),
    "gfx_packages": ("The Core SDK's per-target packages (amdrocm<X.Y>-<gfx>)", ("gfx",)),
}  # fmt: skip


def sections() -> dict[str, list[dict]]:
    """Every section of the data files, by name (as ``--json`` shows them under "tables")."""
    return {
        "gpu_targets": upstream_data.GPU_TARGET_ROWS,
        "distros": upstream_data.DISTRO_ROWS,
        **upstream_data.KERNEL_ROWS,
        **upstream_data.TORCH_BUILD_ROWS,
        **upstream_data.REPOSITORY_ROWS,
    }


def _cell(value: Any) -> str:
    """A row's value as the tables print it (builds as torch versions, flags yes / no)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and value and isinstance(value[0], list):
        return ", ".join(build[0] for build in value)
    if isinstance(value, list):
        return ", ".join(value)
    return "—" if value is None else str(value)


def _origin(row: dict) -> str:
    """Where a row comes from: the record (per field where they differ), or "override"."""
    origin = row["from"]
    if isinstance(origin, dict):
        return "; ".join(f"{field}: {where}" for field, where in origin.items())
    return origin


def source_rows() -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, headers, rows) per table: the values, where the row comes from, its citation."""
    out = []
    for section, rows in sections().items():
        title, fields = SOURCE_TABLES[section]
        body = [[*(_cell(r.get(f)) for f in fields), _origin(r), r["source"]] for r in rows]
        out.append((title, [*fields, "from", "source"], body))
    return out


def markdown(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table (a cell's "|" escaped)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def sources_markdown() -> str:
    """docs/supported-releases.md's tables of where the other rows come from."""
    return "\n\n".join(f"**{t}**\n\n{markdown(h, rows)}" for t, h, rows in source_rows())


def sources_text() -> str:
    """``rocm-fleet matrix --sources``: each row of the other tables and where it comes from."""
    parts = []
    for title, headers, rows in source_rows():
        lines = [f"{title}:"]
        for row in rows:
            lines.append("  " + "  ".join(row[: len(headers) - 2]))
            lines.append(f"    from {row[-2]}: {row[-1]}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
