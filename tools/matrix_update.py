"""Maintainer command: read AMD's and PyTorch's machine-readable data and write the part of
the matrix that comes from them, tasks/rocm_fleet/model/upstream_data.py.

    python tools/matrix_update.py \\
        --historical-csv compatibility-matrix-historical-6.0.csv \\
        --os-support os-support.yaml --pytorch-release RELEASE.md [--check]

Inputs (fetch the current ones from the sources; nothing here goes on the network):

* AMD's ``docs/compatibility/compatibility-matrix-historical-6.0.csv`` (ROCm docs sources,
  ROCm/ROCm): the "GPU / LLVM target" rows give, per gfx target, the first classic release
  AMD's table lists it for.
* AMD's ``docs/data/os-support.yaml`` (ROCm/rocm-docs, the Core SDK's data): per GPU model the
  distros AMD lists. Debian is listed per Instinct model; the models are mapped to gfx targets
  with MODEL_GFX below (hand-kept, cited: the YAML names models, not targets).
* PyTorch's ``RELEASE.md`` (pytorch/pytorch): the "Release Compatibility Matrix" table gives
  the stable ROCm of each torch minor.

Writes the data module (or, with --check, prints how the committed one differs and exits 1).
Review the diff: every change is a change of AMD's or PyTorch's published data; the unit test
tests/unit/test_upstream_facts.py then says which recorded facts and lab doubles must move.
Needs PyYAML (``pip install pyyaml``).
"""

from __future__ import annotations

import argparse
import csv
import difflib
import pprint
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "tasks" / "rocm_fleet" / "model" / "upstream_data.py"

# Hand-kept overrides, each cited: the Instinct models os-support.yaml lists -> gfx target
# (TheRock RELEASES.md "Supported Python [device-*] install extras": MI355X / MI350X gfx950,
# MI325X / MI300X / MI300A gfx942, MI250X / MI250 / MI210 gfx90a, MI100 gfx908; MI350P is
# an MI350-series gfx950 part: ROCm gpu-arch-specs page, "MI350P" in the 7.14 tables, fact
# sheet §2.3).
MODEL_GFX = {
    "AMD Instinct MI355X": "gfx950",
    "AMD Instinct MI350X": "gfx950",
    "AMD Instinct MI350P": "gfx950",
    "AMD Instinct MI325X": "gfx942",
    "AMD Instinct MI300X": "gfx942",
    "AMD Instinct MI300A": "gfx942",
    "AMD Instinct MI250X": "gfx90a",
    "AMD Instinct MI250": "gfx90a",
    "AMD Instinct MI210": "gfx90a",
    "AMD Instinct MI100": "gfx908",
}
# os-support.yaml's OS names and versions -> the matrix's distro keys.
DISTROS = {("Ubuntu", "26.04"): "ubuntu 26.04", ("Ubuntu", "24.04.4"): "ubuntu 24.04",
           ("Ubuntu", "22.04.5"): "ubuntu 22.04", ("Debian", "13"): "debian 13",
           ("Debian", "12"): "debian 12"}  # fmt: skip

GFX = re.compile(r"\bgfx[0-9a-f]+\b")


class UpstreamFormatError(ValueError):
    """An input file isn't in the form this command reads (the message says where)."""


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def gpu_listed_from(text: str) -> dict[str, str]:
    """gfx -> the first release whose column of the historical CSV names it."""
    rows = list(csv.reader(text.splitlines()))
    if not rows or rows[0][0].strip() != "ROCm Version":
        raise UpstreamFormatError("historical CSV: the first row must start with 'ROCm Version'")
    columns = [[v.strip() for v in cell.split("/")] for cell in rows[0][1:]]
    start = next((i for i, r in enumerate(rows) if "GPU / LLVM target" in r[0]), None)
    if start is None:
        raise UpstreamFormatError("historical CSV: no 'GPU / LLVM target' row")
    first: dict[str, str] = {}
    for row in rows[start:]:
        if row is not rows[start] and (row[0].strip() or not any(c.strip() for c in row)):
            break  # the next section, or the blank row after the GPU rows
        for cell, versions in zip(row[1:], columns, strict=False):
            for gfx in GFX.findall(cell):
                for version in versions:
                    if gfx not in first or _version_key(version) < _version_key(first[gfx]):
                        first[gfx] = version
    return dict(sorted(first.items()))


def os_support(text: str) -> dict:
    """Per matrix distro: the AMD families listed on it and, where AMD lists it per Instinct
    model (Debian), the models and their gfx targets."""
    import yaml  # the maintainer's tool only; the product doesn't need PyYAML

    data = yaml.safe_load(text)
    families: dict[str, set[str]] = {}
    models: dict[str, list[str]] = {}
    for family, members in data.items():
        if family.startswith("_") or not isinstance(members, dict):
            continue
        for model, systems in members.items():
            if not isinstance(systems, dict):
                continue
            for os_name, entry in systems.items():
                if not isinstance(entry, dict) or "versions" not in entry:
                    continue
                for version in entry["versions"]:
                    number = version.get("version") if isinstance(version, dict) else version
                    key = DISTROS.get((os_name, str(number)))
                    if key is None:
                        continue
                    families.setdefault(key, set()).add(family)
                    if os_name == "Debian":
                        models.setdefault(key, []).append(model)
    debian: dict[str, dict[str, list[str]]] = {}
    for key, names in sorted(models.items()):
        unknown = [m for m in names if m not in MODEL_GFX]
        if unknown:
            raise UpstreamFormatError(
                f"os-support.yaml lists {key} for {', '.join(unknown)}, which MODEL_GFX in "
                "tools/matrix_update.py doesn't map to a gfx target: add it with its source"
            )
        order = list(dict.fromkeys(MODEL_GFX.values()))  # newest target first
        targets = {MODEL_GFX[m] for m in names}
        debian[key] = {"models": names, "gfx": [g for g in order if g in targets]}
    return {
        "families": {k: sorted(v) for k, v in sorted(families.items())},
        "per_model": debian,
    }


def torch_stable_rocm(text: str) -> dict[str, str]:
    """torch minor -> its stable ROCm, from RELEASE.md's Release Compatibility Matrix."""
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if "Release Compatibility Matrix" in line), None
    )
    if start is None:
        raise UpstreamFormatError("RELEASE.md: no 'Release Compatibility Matrix' heading")
    header = None
    out: dict[str, str] = {}
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(cells[0]) <= {"-", " ", ":"}:
            continue
        row = dict(zip(header, cells, strict=False))
        rocm = row.get("Stable ROCm", "")
        match = re.fullmatch(r"ROCm ([0-9.]+)", rocm)
        if match:
            out[row["PyTorch version"]] = match.group(1)
    if header is None or "Stable ROCm" not in header:
        raise UpstreamFormatError("RELEASE.md: the matrix table has no 'Stable ROCm' column")
    return dict(sorted(out.items(), key=lambda kv: _version_key(kv[0]), reverse=True))


def render(listed: dict, support: dict, torch: dict, sources: dict[str, str]) -> str:
    def block(name: str, value, comment: str) -> str:
        return f"# {comment}\n{name} = {pprint.pformat(value, width=92, sort_dicts=False)}\n"

    return "\n".join(
        [
            '"""Upstream data for the matrix, generated by tools/matrix_update.py from AMD\'s and\n'
            "PyTorch's machine-readable files; do not edit (run the tool and review its diff).\n"
            '"""\n',
            block("SOURCES", sources, "The files this was generated from."),
            block("GPU_LISTED_FROM", listed,
                  "gfx target -> first classic release AMD's historical table lists it for."),
            block("OS_FAMILIES", support["families"],
                  "Matrix distro -> the AMD families os-support.yaml lists on it (Core SDK)."),
            block("CORE_SDK_DEBIAN", support["per_model"],
                  "Debian release -> the Instinct models os-support.yaml lists it for, their gfx."),
            block("TORCH_STABLE_ROCM", torch,
                  "torch minor -> its stable ROCm (PyTorch RELEASE.md)."),
        ]
    )  # fmt: skip


def formatted(text: str) -> str:
    """The module as the project's formatter writes it (ruff, from the test extra), so the
    committed file and a fresh run compare equal."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        return text
    command = [ruff, "format", "--stdin-filename", str(OUTPUT), "-"]
    proc = subprocess.run(command, input=text, capture_output=True, text=True, check=True, cwd=REPO)
    return proc.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--historical-csv", type=Path, required=True)
    parser.add_argument("--os-support", type=Path, required=True)
    parser.add_argument("--pytorch-release", type=Path, required=True)
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--check", action="store_true", help="compare, don't write")
    parser.add_argument("--source-note", action="append", default=[], metavar="FILE=WHERE",
                        help="where an input was read from (commit, URL), for SOURCES")  # fmt: skip
    args = parser.parse_args(argv)
    notes = dict(n.split("=", 1) for n in args.source_note)
    sources = {
        "historical_csv": notes.get("historical-csv", args.historical_csv.name),
        "os_support": notes.get("os-support", args.os_support.name),
        "pytorch_release": notes.get("pytorch-release", args.pytorch_release.name),
    }
    try:
        text = formatted(
            render(
                gpu_listed_from(args.historical_csv.read_text()),
                os_support(args.os_support.read_text()),
                torch_stable_rocm(args.pytorch_release.read_text()),
                sources,
            )
        )
    except UpstreamFormatError as err:
        print(f"matrix_update: {err}", file=sys.stderr)
        return 2
    current = args.output.read_text() if args.output.exists() else ""
    if args.check:
        diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                         str(args.output), "upstream", lineterm=""))  # fmt: skip
        print("\n".join(diff) if diff else "upstream data unchanged")
        return 1 if diff else 0
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
