"""The README's settings and release tables are generated from the code; they must not drift."""

import re
from pathlib import Path

from rocm_fleet.cli.matrix import release_table
from rocm_fleet.config import settings_table

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def block(name: str) -> str:
    found = re.search(rf"<!-- {name} -->\n(.*?)\n<!-- /{name} -->", README, re.S)
    assert found, f"{name} markers missing from README.md"
    return found.group(1)


def test_settings_table_matches_the_code():
    assert block("settings-table") == settings_table(), "run `python -m rocm_fleet.config`"


def test_release_table_matches_the_matrix():
    assert block("release-table") == release_table(), "run `python -m rocm_fleet.cli.matrix`"


def test_readme_commands_exist():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("demo", "test", "unit", "lint", "bench"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, re.M), target
