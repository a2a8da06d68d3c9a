"""The maintainers' command (run as tools/matrix_update.py, docs/maintaining/matrix.md): make
upstream_data.json from AMD's and PyTorch's machine-readable files (or the stored copies and
records of them, tests/fixtures/upstream/) plus the cited overrides
(tools/matrix_overrides.toml); ``tables`` makes the tables from the records; ``record``
records an input that may be read but not committed. ``--check`` prints, row by row, how the
committed files differ, then what upstream publishes that the data lacks ("upstream has:
..."), and exits 1 when anything does; a bad input exits 2. The product never needs the inputs
to run."""

import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import click

from rocm_fleet.matrix.device_tables import RECORD_KINDS, input_text, pci_amd_devices
from rocm_fleet.matrix.inputs import MatrixDataError, write
from rocm_fleet.matrix.pytorch_tables import read_listing
from rocm_fleet.matrix.tables import update
from rocm_fleet.matrix.upstream import Inputs, build, discoveries, matrix_knows, row_diff
from rocm_fleet.model.upstream_data import DATA_DIR

# The checkout of an editable install: --overrides' and --records' defaults.
CHECKOUT = Path(__file__).resolve().parents[3]
OUTPUT = DATA_DIR / "upstream_data.json"
OVERRIDES = CHECKOUT / "tools" / "matrix_overrides.toml"
RECORDS = CHECKOUT / "tests" / "fixtures" / "upstream"

# The inputs --stored can fill: SOURCES.toml's ``input`` -> the option's name.
STORED_INPUTS = {name: name.replace("-", "_") for name in (
    "historical-csv", "os-support", "pytorch-release", "release-history", "driver-list",
    "gpu-list", "pytorch-build-matrix")}  # fmt: skip
LISTING_KEY = re.compile(r"(rocm[0-9.]+|whl-next|whl-multi-arch)(/[a-z]+)?")


def main(argv: list[str] | None = None) -> int:
    """Run the command with ``argv`` (default: the process's) and give its exit status."""
    try:
        status = command.main(argv, "matrix_update.py", standalone_mode=False)
    except click.UsageError as err:
        err.show()
        return 2
    except MatrixDataError as err:
        print(f"matrix_update: {err}", file=sys.stderr)
        return 2
    return int(status or 0)


@click.group(invoke_without_command=True, help=__doc__.split("\n\n")[0])
@click.option("--historical-csv", type=Path)
@click.option("--os-support", type=Path)
@click.option("--pytorch-release", type=Path)
@click.option("--stored", type=Path, metavar="DIR",
              help="take each input not given from DIR's SOURCES.toml (its file and citation): "
              "tests/fixtures/upstream/stored reproduces the committed data")  # fmt: skip
@click.option("--overrides", type=Path, default=OVERRIDES)
@click.option("--release-history", type=Path, metavar="versions.rst",
              help="AMD's release list: releases it has that the data lacks")  # fmt: skip
@click.option("--driver-list", type=Path, metavar="driver-firmware-support.yaml")
@click.option("--pytorch-build-matrix", type=Path, metavar="pytorch-rocm-builds.toml",
              help="the record of PyTorch's build matrix (pytorch/test-infra): the index of a "
              "release RELEASE.md names none for")  # fmt: skip
@click.option("--gpu-list", type=Path, metavar="gpus.yaml")
@click.option("--pci-ids", type=Path, metavar="pci.ids",
              help="report AMD devices of a known chip that the data lacks")  # fmt: skip
@click.option("--listing", multiple=True, metavar="INDEX[/PROJECT]=PAGE|URL",
              help="a wheel index's project page, saved or https (rocm6.3=torch.html, "
              "rocm6.3/torchvision=https://download.pytorch.org/whl/rocm6.3/torchvision/, "
              "whl-next=https://stable.repo.amd.com/rocm/whl-next/torch/)")  # fmt: skip
@click.option("--output", type=Path, default=OUTPUT)
@click.option("--check", is_flag=True, help="compare, don't write")
@click.option("--source-note", multiple=True, metavar="FILE=WHERE",
              help="where an input was read from (commit, URL), for SOURCES")  # fmt: skip
@click.pass_context
def command(ctx: click.Context, **options: Any) -> int | None:
    if ctx.invoked_subcommand is not None:
        return None
    notes = dict(n.split("=", 1) for n in options["source_note"])
    if options["stored"] is not None:
        _take_stored(options, notes)
    missing = [f"--{o}" for o in ("historical-csv", "os-support", "pytorch-release")
               if options[o.replace("-", "_")] is None]  # fmt: skip
    if missing:
        raise click.UsageError(
            f"the following arguments are required: {', '.join(missing)} (or --stored)"
        )
    sources = {key: notes.get(option, options[key].name)
               for option, key in STORED_INPUTS.items() if options[key] is not None}  # fmt: skip
    output = options["output"]
    try:
        current = json.loads(output.read_text()) if output.exists() else {}
    except json.JSONDecodeError:
        current = {}
    listings = {}
    for spec in options["listing"]:
        key, sep, where = spec.partition("=")
        if not sep or not LISTING_KEY.fullmatch(key):
            raise MatrixDataError(
                f"--listing {spec!r}: expected INDEX[/PROJECT]=PAGE|URL, INDEX a "
                "download.pytorch.org rocmX.Y or AMD's whl-next / whl-multi-arch "
                "(rocm6.3=page.html)"
            )
        listings[key] = read_listing(where)
        sources[f"listing {key}"] = notes.get(f"listing {key}", where)

    def text(key: str) -> str | None:
        return options[key].read_text() if options[key] is not None else None

    inputs = Inputs(
        input_text(options["historical_csv"], "historical-csv"), text("os_support"),
        input_text(options["pytorch_release"], "pytorch-release"), text("overrides"),
        text("release_history"), text("driver_list"), text("gpu_list"), listings,
        text("pytorch_build_matrix"),
    )  # fmt: skip
    data, remarks = build(inputs, sources, current)
    pci = pci_amd_devices(options["pci_ids"].read_text()) if options["pci_ids"] else None
    for remark in remarks:
        print(f"matrix_update: note: {remark}", file=sys.stderr)
    found = discoveries(data, pci, *matrix_knows())
    if options["check"]:
        diff = row_diff(current, data)
        print("\n".join(diff) if diff else "upstream data unchanged")
    else:
        write(output, data)
        print(f"wrote {output}")
    for line in found:
        print(f"upstream has: {line}")
    return 1 if options["check"] and (diff or found) else 0


def _take_stored(options: dict[str, Any], notes: dict[str, str]) -> None:
    """Fill each input not given from the stored copies' SOURCES.toml (``input``, ``cite``)."""
    sources = options["stored"] / "SOURCES.toml"
    try:
        files = tomllib.loads(sources.read_text())["files"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as err:
        raise MatrixDataError(f"{sources}: {err}") from None
    for name, entry in files.items():
        option = entry.get("input")
        if option is None:
            continue
        if option not in STORED_INPUTS or "cite" not in entry:
            raise MatrixDataError(
                f"{sources}: [files.{name!r}] input {option!r} needs a cite; valid inputs: "
                f"{', '.join(STORED_INPUTS)}"
            )
        if options[STORED_INPUTS[option]] is None:
            options[STORED_INPUTS[option]] = options["stored"] / name
            notes.setdefault(option, entry["cite"])


@command.command()
@click.option("--records", type=Path, default=RECORDS,
              help="the stored upstream records (download.pytorch.org.toml, ...)")  # fmt: skip
@click.option("--overrides", type=Path, default=OVERRIDES)
@click.option("--data-dir", type=Path, default=DATA_DIR,
              help="where the data files are (written, or compared with --check)")  # fmt: skip
@click.option("--check", is_flag=True, help="compare, don't write")
def tables(records: Path, overrides: Path, data_dir: Path, check: bool) -> int:
    """Write the matrix's tables (GPU targets, distros, kernels, torch builds, repositories,
    PCI IDs) from the stored upstream records and the overrides, or with --check print how the
    committed ones differ (exit 1 when they do)."""
    lines, status = update(records, overrides, data_dir, check=check)
    print("\n".join(lines))
    return status


@command.command()
@click.argument("kind", type=click.Choice(sorted(RECORD_KINDS)))
@click.argument("file", type=Path)
def record(kind: str, file: Path) -> int:
    """Print the record of an input file that may be read but not committed (the cells this
    tool reads, verbatim), to store in its place."""
    print(RECORD_KINDS[kind][0](file.read_text()), end="")
    return 0
