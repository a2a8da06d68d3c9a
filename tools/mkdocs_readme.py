"""MkDocs hook (mkdocs.yml): the site's home page is the README, so the first hour is
written once.

The README links to the pages as ``docs/<page>.md``, which is right where it is read (the
repository); on the site those pages are ``<page>.md``. Its links to files outside
``docs/`` (``CHANGELOG.md``, ``LICENSE``) are not pages of the site and become their text.
A page's link to the README (``../README.md`` from ``docs/``) is the site's home page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

# [text](target): the README's inline links (it has no reference-style ones)
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def readme_for_site(text: str) -> str:
    def relink(match: re.Match[str]) -> str:
        text, target = match.groups()
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return match.group(0)  # a URL, or a heading of the README itself
        if target.startswith("docs/"):
            return f"[{text}]({target.removeprefix('docs/')})"
        return text

    return LINK.sub(relink, text)


def on_files(files: Files, config: Any) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    files.append(File.generated(config, "index.md", content=readme_for_site(readme.read_text())))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    depth = page.file.src_uri.count("/")
    return markdown.replace(f"]({'../' * (depth + 1)}README.md", f"]({'../' * depth}index.md")
