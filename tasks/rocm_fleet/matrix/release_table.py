"""The matrix's releases as Markdown (``release_table``), for a terminal (``plain_table``) and as
JSON (``matrix_json``), each row with its source."""

import textwrap
from dataclasses import asdict
from typing import Any
from urllib.parse import urlsplit

from rocm_fleet.cli.tables import FALLBACK_WIDTH, folded
from rocm_fleet.matrix.inputs import FROM_PYTORCH_NONE
from rocm_fleet.model import matrix, streams, torch_builds, upstream_data
from rocm_fleet.model.gpu_targets import GPU_TARGETS
from rocm_fleet.model.site_data import SiteData

# Per support: the docs' words, and the terminal's (its table fits 100 columns, with a legend).
SUPPORT_TEXT = {matrix.Support.OFFICIAL: ("official", "yes"),
                matrix.Support.INSTINCT_ONLY: ("Instinct only", "MI"),
                matrix.Support.UNLISTED: ("unlisted", "?"),
                matrix.Support.REJECTED: ("apt rejects (SHA-1 key)", "no"),
                None: ("—", "-")}  # fmt: skip


def repository_text(rel: matrix.Release) -> str:
    repo = rel.repository
    if repo is streams.CLASSIC_REPOSITORY:
        return f"{urlsplit(repo.base_url).path.strip('/')}/{rel.apt_path}"
    return urlsplit(repo.base_url).netloc


# The releases the lab's end-to-end tests deploy (tests/unit/test_docs.py keeps it in step).
LAB_TESTED = ("6.4.3", "7.2.1", "7.14.1", "10.0.0")


def _data_row(rel: matrix.Release) -> dict[str, Any] | None:
    """The release's row of the generated upstream data; None for a site file's release."""
    return next((r for r in upstream_data.RELEASES if r["version"] == rel.version), None)


def source_text(rel: matrix.Release, site: SiteData | None = None) -> str:
    """Where a release row comes from, e.g. "AMD's table; torch: PyTorch's matrix"."""
    row = _data_row(rel)
    if row is None:
        return f"site matrix data {site.path}" if site is not None else "site matrix data"
    origins, named = row["from"], upstream_data.ORIGINS
    torch = origins.get("torch_index", FROM_PYTORCH_NONE)
    parts = [named.get(origins["row"], origins["row"])]
    if "distros" in origins:
        parts.append(f"distros: {named.get(origins['distros'], origins['distros'])}")
    parts.append(
        "torch: AMD's install page" if rel.amd_wheels else f"torch: {named.get(torch, torch)}"
    )
    return "; ".join(parts)


def table_rows() -> tuple[list[str], list[list[str]]]:
    """(headers, one row per release) of the matrix table."""
    headers = ["ROCm", "Stream", "Repository", "PyTorch index", "torch (default = newest)"]
    headers += ["amdgpu for `dkms`"] + [f"{d.id.capitalize()} {d.version}" for d in matrix.DISTROS]
    headers += ["Source", "Tested"]
    rows = []
    for rel in matrix.RELEASES:
        amd = rel.amd_wheels
        where = amd and urlsplit(amd.url).path.strip("/").split("/")[-1]
        index = f"`{rel.torch_index}`" if rel.torch_index else f"AMD `{where}`" if amd else "none"
        torch = ", ".join(b.torch for b in rel.torch_builds) or "— (`pytorch_install: false`)"
        rows.append([
            rel.version, rel.stream.name, f"`{repository_text(rel)}`", index, torch,
            matrix.amdgpu_repo_version(rel) or "unknown (refused)",
            *(SUPPORT_TEXT[rel.support(row)][0] for row in matrix.DISTROS), source_text(rel),
            "lab only" if rel.version in LAB_TESTED else "—",
        ])  # fmt: skip
    return headers, rows


def release_table() -> str:
    """The release table of docs/supported-releases.md, in Markdown."""
    return markdown(*table_rows())


def _distro_short(row: matrix.Distro) -> str:
    return f"{row.id[0].upper()}{row.version.split('.')[0]}"  # ubuntu 24.04 -> U24


def _releases(site: SiteData | None) -> list[matrix.Release]:
    """The committed releases, then a site file's (``site``)."""
    return [*matrix.RELEASES, *(site.added if site is not None else ())]


def gpu_targets(rel: matrix.Release) -> list[str]:
    """The GPU targets AMD lists for ``rel``, in the matrix's order (``expected_gfx`` values)."""
    return [target.gfx for target in GPU_TARGETS if rel.lists_gpu(target.gfx)]


def plain_table(site: SiteData | None = None, width: int = FALLBACK_WIDTH) -> str:
    """The matrix for a terminal ``width`` columns wide, with its legend; a site's rows last."""
    headers = ["ROCm", "Stream", "Repository", "Index", "torch", "dkms"]
    headers += [*(_distro_short(d) for d in matrix.DISTROS), "", "GPU targets"]
    rows: list[list[str]] = []
    notes: list[str] = []  # where the rows come from, one footnote per distinct source
    for rel in _releases(site):
        source = source_text(rel, site)
        if source not in notes:
            notes.append(source)
        builds = [build.torch for build in rel.torch_builds]
        torch = f"{builds[-1]} (+{len(builds) - 1})" if len(builds) > 1 else "".join(builds)
        rows.append([
            rel.version, rel.stream.name, repository_text(rel),
            rel.torch_index or ("AMD" if rel.amd_wheels else "none"), torch or "none",
            matrix.amdgpu_repo_version(rel) or "refused",
            *(SUPPORT_TEXT[rel.support(row)][1] for row in matrix.DISTROS),
            f"[{notes.index(source) + 1}]", " ".join(gpu_targets(rel)) or "none listed",
        ])  # fmt: skip
    distros = ", ".join(f"{_distro_short(d)} {d.id.capitalize()} {d.version}"
                        for d in matrix.DISTROS)  # fmt: skip
    legend = [
        f"{distros}:",
        "  yes listed by AMD, MI listed for Instinct only, ? packages published but not listed,",
        "  no published but refused by the distro's apt (SHA-1 key binding), - not published.",
        "torch: the newest build the deploy installs by default (+ how many older ones it knows);",
        "dkms: the amdgpu driver release for rocm_driver: dkms (refused: not known).",
        "GPU targets: the gfx targets AMD lists for the release (what expected_gfx takes).",
        "[n] where the row comes from (the citations: tools/matrix_overrides.toml):",
        *(f"  [{n}] {note}" for n, note in enumerate(notes, start=1)),
        "Everything, spelled out: rocm-fleet matrix --json, or docs/supported-releases.md;",
        "where GPU targets, distros, kernels, torch builds, repositories come from: --sources.",
    ]
    wrapped = [piece for said in legend for piece in textwrap.wrap(
        said, max(20, width), subsequent_indent=" " * (len(said) - len(said.lstrip()) + 2),
        break_on_hyphens=False, break_long_words=True)]  # fmt: skip
    return "\n".join([folded(headers, rows, width), "", *wrapped])


def matrix_json(site: SiteData | None = None) -> dict[str, Any]:
    """Everything the matrix says, for tools; a site file's rows last (``"from": "site"``)."""

    def stream_json(stream: streams.Stream) -> dict[str, Any]:
        fields = ("name", "title", "key_fingerprint", "keyring", "pin", "pin_origin")
        return {**{f: getattr(stream, f) for f in fields},
                "publications": [asdict(p) for p in stream.publications]}  # fmt: skip

    releases = []
    for rel in _releases(site):
        row = _data_row(rel)
        if row is None and site is not None:
            source = {"from": "site", "citation": site.provenance, "site": str(site.path)}
        else:
            source = {"from": row["from"], "citation": row["source"]}
        releases.append({
            "version": rel.version, "stream": rel.stream.name,
            "repository": asdict(rel.repository),
            "distros": {row.key: {
                "support": rel.support(row).value if rel.support(row) else None,
                "suite": pub.suite if (pub := rel.publication(row)) else None,
                "directory": pub.directory if pub else None,
            } for row in matrix.DISTROS},
            "torch_index": rel.torch_index, "torch_builds": [asdict(b) for b in rel.torch_builds],
            "torch_runtime": rel.torch_runtime,
            "no_torch": None if rel.torch_builds else rel.no_torch_reason,
            "amd_wheels": asdict(rel.amd_wheels) if rel.amd_wheels else None,
            "amdgpu_driver": matrix.amdgpu_repo_version(rel), "root": rel.root,
            "rocminfo": rel.rocminfo, "gpu_targets": gpu_targets(rel),
            "source": {**source, "text": source_text(rel, site),
                       "tested": "lab only" if rel.version in LAB_TESTED else None},
        })  # fmt: skip
    return {
        "streams": [stream_json(s) for s in streams.STREAMS],
        "distros": [asdict(d) for d in matrix.DISTROS],
        "releases": releases,
        "tables": sections(),
        "pytorch_index_base_url": torch_builds.PYTORCH_INDEX_BASE_URL,
        "amdgpu_apt_base_url": matrix.AMDGPU_APT_BASE_URL,
        "site_data": site.provenance if site is not None else None,
    }


# Where the matrix's other rows come from (``matrix --sources``, ``--json``, the docs).
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


def source_rows() -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, headers, rows) per table: the values, where the row comes from, its citation."""

    def origin(of: str | dict) -> str:  # per field where they differ
        return "; ".join(f"{k}: {v}" for k, v in of.items()) if isinstance(of, dict) else of

    out = []
    for section, rows in sections().items():
        title, fields = SOURCE_TABLES[section]
        body = [[*(_cell(r.get(f)) for f in fields), origin(r["from"]), r["source"]]
                for r in rows]  # fmt: skip
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
    return "\n\n".join(
        "\n".join([f"{title}:", *(f"  {'  '.join(row[:-2])}\n    from {row[-2]}: {row[-1]}"
                                   for row in rows)])
        for title, _headers, rows in source_rows()
    )  # fmt: skip
