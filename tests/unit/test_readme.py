"""The README's settings table is generated from the code; it must not drift from it."""

import re
from pathlib import Path

from rocm_fleet.config import settings_table
from rocm_fleet.matrix import RELEASES

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_settings_table_matches_the_code():
    block = re.search(r"<!-- settings-table -->\n(.*?)\n<!-- /settings-table -->", README, re.S)
    assert block, "settings table markers missing from README.md"
    assert block.group(1) == settings_table(), "run `python -m rocm_fleet.config` and paste"


def test_readme_commands_exist():
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    for target in ("demo", "test", "unit", "lint", "bench"):
        assert f"make {target}" in README
        assert re.search(rf"^{target}:", makefile, re.M), target


def test_release_table_covers_every_minor():
    minors = {".".join(r.version.split(".")[:2]) for r in RELEASES}
    for minor in minors:
        assert f"| {minor}." in README, minor
