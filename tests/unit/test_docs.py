"""The README and the pages of docs/: the tables generated from the code don't drift, the
commands and settings they name exist, and every link between them resolves."""

import re
import runpy
from pathlib import Path

import pytest

from rocm_fleet.matrix.release_table import LAB_TESTED, matrix_json, release_table, table_rows
from rocm_fleet.model.config import load_config
from rocm_fleet.model.matrix import RELEASES
from rocm_fleet.model.settings import RENAMED, SETTINGS

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
#: every Markdown file of the documentation: the README (the site's home page) and the pages
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
#: what a user reads (the maintainers' pages and the fact sheet may name history)
MAINTAINERS = (DOCS / "maintaining", DOCS / "reference", DOCS / "pyinfra-proposals.md")
USER_PAGES = [p for p in PAGES if not any(p.is_relative_to(m) for m in MAINTAINERS)]
USER_TEXT = "\n".join(p.read_text() for p in USER_PAGES)


def page(name: str) -> str:
    return (DOCS / name).read_text()


def test_the_settings_page_carries_every_setting_of_the_model():
    # The whole page is generated (test_settings_schema checks it is current); here: every
    # setting is on it, so a user finds each key the deploy reads.
    text = page("settings.md")
    missing = [key for key in SETTINGS if f"| `{key}` |" not in text]
    assert not missing, f"settings missing from docs/settings.md: {missing}"


def test_release_table_matches_the_matrix():
    text = page("supported-releases.md")
    block = re.search(r"<!-- release-table -->\n(.*?)\n<!-- /release-table -->", text, re.S)
    assert block, "release table markers missing from docs/supported-releases.md"
    assert block.group(1) == release_table(), "run `python -m rocm_fleet.matrix.command` and paste"


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
    assert sources["7.0.1"] == "AMD's table; torch: PyTorch's build matrix"  # rocm7.0
    assert sources["6.1.3"].startswith("recorded observation;")  # not in AMD's table
    assert "distros: AMD's os-support.yaml" in sources["10.1.0"]
    # 10.x torch: AMD's stable index, recorded from its install pages (torch_builds.AMD_WHEELS)
    assert sources["10.1.0"].endswith("torch: AMD's install page")
    # --json carries the same, with an override's citation
    (row,) = [r for r in matrix_json()["releases"] if r["version"] == "6.1.3"]
    assert row["source"]["text"] == sources["6.1.3"] and "4302900e" in row["source"]["citation"]


def test_the_make_targets_named_exist():
    makefile = (ROOT / "Makefile").read_text()
    development = page("maintaining/development.md")
    for target in ("demo", "test", "unit", "lint", "bench", "docs"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, re.M), target
    for target in ("demo", "test", "unit", "lint", "bench"):
        assert f"make {target}" in development


def test_release_table_covers_every_minor():
    minors = {".".join(r.version.split(".")[:2]) for r in RELEASES}
    for minor in minors:
        assert f"| {minor}." in page("supported-releases.md"), minor


def test_the_docs_name_settings_by_their_current_names():
    """A renamed key is refused by load_config: no page may tell anyone to set it (the
    settings page's list of renamed keys, `old` → `new`, names them to say so)."""
    from rocm_fleet.audit.cells import OBSERVED
    from rocm_fleet.audit.rows import concern_id

    # The audit's own ids (its cells, its concerns) share a few old names; in a code span on
    # their own they name those, and a setting is caught by its `key:` / `key =`.
    concerns = {
        concern_id(name)
        for path in (ROOT / "tasks/rocm_fleet/deploy").glob("*.py")
        for name in re.findall(r'@deploy\("([^"]+)"\)', path.read_text())
    }
    audit_ids = set(OBSERVED) | concerns
    for old, new in RENAMED.items():
        form = rf"`{old}(?::| ?=)" if old in audit_ids else rf"`{old}[`:](?! → `{new}`)"
        for doc in USER_PAGES:
            stale = re.findall(form, doc.read_text())
            assert not stale, f"{doc.relative_to(ROOT)} still names {old!r}; it is {new!r} now"
    named = set(re.findall(r"`((?:rocm|pytorch|torch|expected|preflight)_[a-z_]+)[`:]", USER_TEXT))
    typo = "rocm_verison"  # Deploying's example of a typo the validation catches
    package = "rocm_fleet"  # the import name, not a setting
    deploy = "rocm_node"  # the deploy's name
    foreign = "torch_compile"  # Deploying's example of another deploy's key, left alone
    assert foreign not in SETTINGS
    metrics = {name for name in named if name.startswith("rocm_fleet_")}  # the audit's
    named -= metrics | audit_ids
    assert typo in named and named - {typo, package, deploy, foreign} <= set(SETTINGS), named - set(
        SETTINGS
    )


def test_the_example_inventory_is_valid():
    inventory = runpy.run_path(str(ROOT / "inventories" / "example.py"))
    groups = {name: value for name, value in inventory.items() if isinstance(value, tuple)}
    assert set(groups) == {"radeon_workstations", "instinct_nodes", "ci_runners"}
    for hosts, group_data in groups.values():
        for name, host_data in hosts:
            load_config({**group_data, **host_data}, name)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces
    to hyphens (MkDocs makes the same of these headings; its build checks them too)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def prose(text: str) -> str:
    """The text outside fenced code blocks and code spans (where `[x](y)` is no link)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(path: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} (.+?)\s*$", prose_keeping_headings(path.read_text()), re.M)
    return {slug(heading) for heading in headings}


def prose_keeping_headings(text: str) -> str:
    """Fenced code blocks dropped (a `# comment` in one is no heading); code spans kept."""
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", prose(path.read_text()))


@pytest.mark.parametrize("doc", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(doc):
    broken = []
    for target in links(doc):
        if re.match(r"[a-z]+:", target):
            continue  # a URL: not checked offline
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        if not resolved.exists():
            broken.append(f"{target} (no {resolved.relative_to(ROOT)})")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target} (no heading #{anchor})")
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


def test_every_page_is_in_the_site_and_the_readme():
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:", 1)[1]
    in_nav = set(re.findall(r":\s*(\S+\.md)\s*$", nav, re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages | {"index.md"} == in_nav, (pages | {"index.md"}) ^ in_nav
    linked = {target.split("#")[0] for target in links(ROOT / "README.md")}
    # The decision notes are linked from their own index page, which the README links.
    decisions = {name for name in pages if name.startswith("decisions/")}
    wanted = {f"docs/{name}" for name in pages - decisions} | {"docs/decisions/index.md"}
    assert wanted <= linked, wanted - linked
    listed = {target.split("#")[0] for target in links(DOCS / "decisions" / "index.md")}
    assert {name.removeprefix("decisions/") for name in decisions - {"decisions/index.md"}} <= (
        listed
    ), decisions


def test_no_maintainer_history_in_the_user_docs():
    """Issue numbers, rounds and benchmark history belong in docs/maintaining/ or the
    CHANGELOG, not in what a user reads."""
    for doc in USER_PAGES:
        text = doc.read_text()
        # (an upstream bug cited as "ROCm issue N" is a source, not history)
        history = re.findall(r"(?<!ROCm )\b(?:issues? \d+|(?:this|that|next|last) round)\b", text)
        assert not history, f"{doc.relative_to(ROOT)}: {history}"


def test_commands_name_real_subcommands_and_no_removed_paths():
    from rocm_fleet.cli import COMMANDS

    names = set(COMMANDS)
    text = "\n".join(p.read_text() for p in PAGES)
    blocks = "\n".join(re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S))
    used = set(re.findall(r"^\s*rocm-fleet (\w[\w-]*)", blocks, re.M))
    assert used and used <= names, used - names
    assert "tests/node" not in text  # the node checks ship in the package now
    assert "inventories/fleet.py" not in text and "inventories/lab.py" not in text


def test_the_readme_inventory_is_valid():
    (code,) = re.findall(r"^```python\n# inventory\.py\n(.*?)^```", README, re.M | re.S)
    inventory: dict = {}
    exec(code, inventory)
    groups = {name: value for name, value in inventory.items() if isinstance(value, tuple)}
    assert groups
    for hosts, group_data in groups.values():
        for name, host_data in hosts:
            load_config({**group_data, **host_data}, name)


def help_text(capsys, *command: str) -> str:
    from rocm_fleet.cli import main

    assert main([*command, "--help"]) == 0
    return capsys.readouterr().out


def test_the_top_level_help_says_how_to_deploy(capsys):
    text = " ".join(help_text(capsys).split())
    assert "pyinfra INVENTORY rocm_fleet.deploy.rocm_node" in text
    assert "pyinfra INVENTORY deploy.py" in text


@pytest.mark.parametrize(
    "command", [("audit",), ("check",), ("matrix",), ("matrix", "check"), ("bundle",),
                ("mirror-ca",), ("settings",)], ids=" ".join,
)  # fmt: skip
def test_every_subcommand_help_describes_it_in_plain_text(capsys, command):
    text = help_text(capsys, *command)
    # between the usage and the first argument list: the description click prints
    description = re.split(r"\n(?:Positional arguments|Options):\n", text)[0].split("\n\n", 1)
    assert len(description) == 2 and len(description[1].split()) >= 15, text
    assert "``" not in text and ":func:" not in text  # no reST: --help is read in a terminal
