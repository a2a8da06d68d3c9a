"""MkDocs hook (mkdocs.yml): code on the site is highlighted by Pygments as it is built
(Python-Markdown's codehilite), so the site needs nothing from another host; this hook adds
the colours, ``css/pygments.css``, generated from the Pygments the build runs with.
"""

from __future__ import annotations

from typing import Any

from mkdocs.structure.files import File, Files
from pygments.formatters import HtmlFormatter

STYLE = "default"


def on_files(files: Files, config: Any) -> Files:
    css = HtmlFormatter(style=STYLE).get_style_defs(".codehilite")
    files.append(File.generated(config, "css/pygments.css", content=css + "\n"))
    return files
