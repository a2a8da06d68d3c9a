"""The docs site renders its Markdown as written: every list item and pipe table of a page is
a list item and a table in the built HTML (Python-Markdown, unlike GitHub, needs a blank line
before a list or table, else it is a paragraph's text); the site loads no script or stylesheet
from another host; its tables scroll instead of overflowing their column."""

import re
import runpy
from html.parser import HTMLParser
from pathlib import Path

import pytest

from integration.test_docs import build_site
from unit.test_docs import DOCS, PAGES, README, ROOT

# "- ", "* " or "1. " at a line's start (after any indentation of a nested list)
LIST_ITEM = re.compile(r"^ *(?:[-*]|\d+\.) +(\S.*)$")
# the line under a pipe table's header: |---|:--:|
TABLE_RULE = re.compile(r"^ *\|? *:?-+:? *(?:\| *:?-+:? *)+\|? *$")
FENCE = re.compile(r"^ *(```|~~~)")
EXTERNAL = re.compile(r"^(?:https?:)?//")
# the README as the site's home page reads it (the hook relinks it)
readme_for_site = runpy.run_path(str(ROOT / "tools/mkdocs_readme.py"))["readme_for_site"]


class Page(HTMLParser):
    """One built page: the text of each list item and the header of each table in its
    content (not the navigation), and every script and stylesheet it loads."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[str] = []
        self.tables: list[str] = []
        self.loads: list[str] = []
        self.open_items: list[int] = []  # indexes into items of the <li> open now
        self.header: list[str] | None = None
        self.divs = 0  # <div> depth inside the content (0: outside)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if tag == "script" and attr.get("src"):
            self.loads.append(attr["src"] or "")
        if tag == "link" and attr.get("rel") == "stylesheet":
            self.loads.append(attr.get("href") or "")
        if tag == "div" and (self.divs or attr.get("role") == "main"):
            self.divs += 1
        if not self.divs:
            return
        if tag == "li":
            self.open_items.append(len(self.items))
            self.items.append("")
        elif tag == "table":
            self.header = []
        elif tag == "th" and self.header is not None:
            self.header.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "div" and self.divs:
            self.divs -= 1
        elif tag == "li" and self.open_items:
            self.open_items.pop()
        elif tag == "thead" and self.header is not None:
            self.tables.append(words(" ".join(self.header)))
            self.header = None

    def handle_data(self, data: str) -> None:
        for index in self.open_items:
            self.items[index] += data
        if self.header:
            self.header[-1] += data


def words(text: str) -> str:
    """Text as its words, without Markdown's marks or a link's target."""
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return " ".join(re.findall(r"[^\W_]+", text))


def markdown_blocks(text: str) -> tuple[list[str], list[str]]:
    """The first words of each list item and the header of each pipe table, outside code."""
    items, tables, in_code, lines = [], [], False, text.splitlines()
    for number, line in enumerate(lines):
        if FENCE.match(line):
            in_code = not in_code
        elif not in_code and (item := LIST_ITEM.match(line)):
            items.append(" ".join(words(item.group(1)).split()[:8]))
        elif not in_code and number and TABLE_RULE.match(line):
            tables.append(words(lines[number - 1]))
    return items, tables


def built_page(site: Path, source: Path) -> Path:
    if source == ROOT / "README.md":
        return site / "index.html"
    page = source.relative_to(DOCS).with_suffix("")
    return site / (page.parent if page.name == "index" else page) / "index.html"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    build_site(site)
    return site


def read(site: Path, source: Path) -> Page:
    page = Page()
    page.feed(built_page(site, source).read_text())
    return page


@pytest.mark.parametrize("source", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_list_item_and_table_of_a_page_renders_as_one(site, source):
    text = readme_for_site(README) if source == ROOT / "README.md" else source.read_text()
    items, tables = markdown_blocks(text)
    page = read(site, source)
    rendered = [words(item) for item in page.items]
    lost = [i for i in items if not any(f"{li} ".startswith(f"{i} ") for li in rendered)]
    assert not lost, f"list items shown as text (a blank line before the list?): {lost}"
    assert page.tables == tables, "pipe tables shown as text (a blank line before the table?)"


def test_no_page_loads_a_script_or_stylesheet_from_another_host(site):
    external = []
    for path in site.rglob("*.html"):
        page = Page()
        page.feed(path.read_text())
        external += [(str(path.relative_to(site)), u) for u in page.loads if EXTERNAL.match(u)]
    assert not external, external


def test_code_is_highlighted_and_tables_scroll_with_the_sites_own_css(site):
    page = read(site, DOCS / "deploying.md")
    assert "css/pygments.css" in " ".join(page.loads) and "css/extra.css" in " ".join(page.loads)
    assert ".codehilite .k " in (site / "css/pygments.css").read_text()  # a keyword's colour
    assert '<div class="codehilite">' in built_page(site, DOCS / "deploying.md").read_text()
    extra = (site / "css/extra.css").read_text()
    assert re.search(r"table \{[^}]*display: block;[^}]*overflow-x: auto;", extra), extra
