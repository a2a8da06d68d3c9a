"""The README's settings and release tables are generated from the code; they must not drift."""

import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

from rocm_fleet.cli.matrix import LAB_TESTED, matrix_json, release_table, table_rows
from rocm_fleet.model.config import load_config, settings_table
from rocm_fleet.model.matrix import RELEASES
from rocm_fleet.model.settings import RENAMED, SETTINGS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def test_settings_table_matches_the_code():
    block = re.search(r"<!-- settings-table -->\n(.*?)\n<!-- /settings-table -->", README, re.S)
    assert block, "settings table markers missing from README.md"
    assert block.group(1) == settings_table(), "run `python -m rocm_fleet.model.config` and paste"


def test_release_table_matches_the_matrix():
    block = re.search(r"<!-- release-table -->\n(.*?)\n<!-- /release-table -->", README, re.S)
    assert block, "release table markers missing from README.md"
    assert block.group(1) == release_table(), "run `python -m rocm_fleet.cli.matrix` and paste"


def test_the_tested_column_names_the_releases_the_lab_deploys():
    # Every release a host of the end-to-end tests is given (their HostSpec data), except
    # the modules that test refusals (bad input, plan-time problems): what the lab deploys.
    deploying = [p for p in (ROOT / "tests/e2e").glob("*.py")
                 if p.name not in ("test_bad_input.py", "test_plan_time.py")]  # fmt: skip
    versions = {v for p in deploying
                for v in re.findall(r'"rocm_version": "([0-9.]+)"', p.read_text())}  # fmt: skip
    assert versions == set(LAB_TESTED)
    _, rows = table_rows()
    assert {row[0] for row in rows if row[-1] == "lab only"} == set(LAB_TESTED)


def test_the_source_column_says_where_each_row_comes_from():
    sources = {row[0]: row[-2] for row in table_rows()[1]}
    assert sources["7.2.0"] == "AMD's table; torch: PyTorch's matrix"
    assert sources["7.0.1"] == "AMD's table; torch: recorded observation"  # rocm7.0
    assert sources["6.1.3"].startswith("recorded observation;")  # not in AMD's table
    assert "distros: AMD's os-support.yaml" in sources["10.1.0"]
    # 10.x torch: AMD's stable index, recorded from its install pages (matrix.AMD_WHEELS)
    assert sources["10.1.0"].endswith("torch: AMD's install page")
    # --json carries the same, with an override's citation
    (row,) = [r for r in matrix_json()["releases"] if r["version"] == "6.1.3"]
    assert row["source"]["text"] == sources["6.1.3"] and "4302900e" in row["source"]["citation"]


def test_readme_commands_exist():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test", "unit", "lint", "bench"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_release_table_covers_every_minor():
    minors = {".".join(r.version.split(".")[:2]) for r in RELEASES}
    for minor in minors:
        assert f"| {minor}." in README, minor


def test_readme_names_settings_by_their_current_names():
    """A renamed key is refused by load_config: the README must not tell anyone to set it."""
    for old, new in RENAMED.items():
        stale = re.findall(rf"`{old}[`:]", README)
        assert not stale, f"README.md still names {old!r}; it is {new!r} now"
    named = set(re.findall(r"`((?:rocm|pytorch|torch|expected|preflight)_[a-z_]+)[`:]", README))
    typo = "rocm_verison"  # the README's example of a typo the validation catches
    package = "rocm_fleet"  # the import name, not a setting
    foreign = "torch_compile"  # the README's example of another deploy's key, left alone
    assert foreign not in SETTINGS
    metrics = {name for name in named if name.startswith("rocm_fleet_")}  # the audit's
    named -= metrics
    assert typo in named and named - {typo, package, foreign} <= set(SETTINGS), named - set(
        SETTINGS
    )


def test_the_example_inventory_is_valid():
    inventory = runpy.run_path(str(ROOT / "inventories" / "example.py"))
    groups = {name: value for name, value in inventory.items() if isinstance(value, tuple)}
    assert set(groups) == {"radeon_workstations", "instinct_nodes", "ci_runners"}
    for hosts, group_data in groups.values():
        for name, host_data in hosts:
            load_config({**group_data, **host_data}, name)


def parse_cli_args(values: list[str]) -> list:
    """Values as pyinfra's command line parses `--data` (in a child process: importing
    pyinfra's CLI monkey-patches the process for gevent)."""
    script = (
        "import json, sys\nfrom pyinfra_cli.util import parse_cli_arg\n"
        "print(json.dumps([parse_cli_arg(a) for a in sys.argv[1:]]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *values], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


def test_readme_data_examples_arrive_as_the_settings_expect():
    """Each `--data 'key=value'` in the README, read as pyinfra's CLI reads it, is valid."""
    examples = re.findall(r"--data '?([a-z_]+)=(\[[^\]]*\]|[^'\s`)]+)'?", README)
    parsed = parse_cli_args([value for _key, value in examples] + ["7.14"])
    values = [(key, value) for (key, _raw), value in zip(examples, parsed, strict=False)]
    assert ("rocm_users", ["alice", "bob"]) in values and ("rocm_version", "7.2.1") in values
    for key, value in values:
        load_config({"rocm_version": "6.4.3", key: value}, "readme")
    # ... and the number the README warns about is refused, saying how to quote it.
    message = ""
    try:
        load_config({"rocm_version": parsed[-1]}, "readme")
    except Exception as exc:
        message = str(exc)
    assert "arrived as a number: quote it" in message


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces
    to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_table_of_contents_links_every_section_to_a_heading():
    headings = re.findall(r"^#{2,3} (.+)$", README, re.M)
    anchors = {slug(h) for h in headings}
    contents = README.split("## Contents", 1)[1].split("\n## ", 1)[0]
    links = re.findall(r"\]\(#([^)]+)\)", contents)
    assert links and set(links) <= anchors, set(links) - anchors
    top = {slug(h) for h in re.findall(r"^## (.+)$", README, re.M)} - {"contents"}
    assert top <= set(links), top - set(links)  # every section is in the contents


def test_readme_commands_name_real_subcommands_and_no_removed_paths():
    from rocm_fleet.cli import TOOLS

    # Each tool module's add_parser names its subcommand as the first string it passes.
    names = {
        re.search(r'add_parser\(\s*"([\w-]+)"', Path(tool.__file__).read_text()).group(1)
        for tool in TOOLS
    }
    blocks = "\n".join(re.findall(r"^```sh\n(.*?)^```", README, re.M | re.S))
    used = set(re.findall(r"^\s*rocm-fleet (\w[\w-]*)", blocks, re.M))
    assert used and used <= names, used - names
    assert "tests/node" not in README  # the node checks ship in the package now
    assert "inventories/fleet.py" not in README and "inventories/lab.py" not in README


def test_the_examples_in_the_readme_exist():
    for path in re.findall(r"\]\(((?:examples|inventories|docs)/[^)#]*)\)", README):
        assert (ROOT / path).exists(), path
