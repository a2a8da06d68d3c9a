"""The "one place" claims, checked over the product's source: a host path that
``model/paths.py`` names is typed out nowhere else, and a regular expression that reads a
version (digits around a literal dot) lives only in ``model/versions.py``.

Both read every string literal of every module under tasks/rocm_fleet (f-string parts
included, docstrings not: prose may name a path), so a new inline copy fails here with its
file and line.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from rocm_fleet.model import paths

PACKAGE = Path(__file__).resolve().parents[2] / "tasks" / "rocm_fleet"
PATHS_MODULE = PACKAGE / "model" / "paths.py"
VERSIONS_MODULE = PACKAGE / "model" / "versions.py"

# A regex that reads a dotted version: a digit class next to an escaped dot, either order
# (``\d+\.\d+``, ``[0-9]+[.]``, ``\.[0-9]``).
_DIGIT = r"(?:\\d|\[0-9\])"
_DOT = r"(?:\\\.|\[\.\])"
VERSION_REGEX = re.compile(rf"{_DIGIT}[+*?]?(?:\{{[0-9,]+\}})?{_DOT}|{_DOT}{_DIGIT}")


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def host_paths() -> list[str]:
    """Every absolute path ``paths`` names (constants, tuples and dicts of them)."""
    found = {
        text
        for name, value in vars(paths).items()
        if name.isupper()
        for text in _strings(value)
        if text.startswith("/")
    }
    return sorted(found, key=len, reverse=True)


def path_pattern(path: str) -> re.Pattern[str]:
    """``path`` as a whole path or the start of one (``/opt/rocm`` in ``/opt/rocm/bin``), not
    inside another (``/opt`` in ``/var/opt``) nor an entry of a PATH-style list."""
    return re.compile(rf"(?<![\w.:/-]){re.escape(path)}(?![\w.-]|:/)")


def literals(module: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each string literal of a module that isn't a docstring."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and id(node) not in docstrings:
            yield node.lineno, node.value


def modules_but(owner: Path) -> list[Path]:
    found = [m for m in sorted(PACKAGE.rglob("*.py")) if m != owner]
    assert len(found) > 40, f"only {len(found)} modules under {PACKAGE}"
    return found


def path_copies(module: Path, patterns: dict[str, re.Pattern[str]]) -> list[str]:
    return [
        f"{module.relative_to(PACKAGE)}:{line} types {path} ({text[:60]!r})"
        for line, text in literals(module)
        for path, pattern in patterns.items()
        if pattern.search(text)
    ]


def version_regexes(module: Path) -> list[str]:
    return [
        f"{module.relative_to(PACKAGE)}:{line} {text!r}"
        for line, text in literals(module)
        if VERSION_REGEX.search(text)
    ]


def test_the_detectors_find_what_they_look_for():
    patterns = {p: path_pattern(p) for p in host_paths()}
    assert "/etc/apt/keyrings/rocm.gpg" in patterns and "/opt/rocm" in patterns
    owned = path_copies(PATHS_MODULE, patterns)
    assert any("/etc/apt/keyrings/rocm.gpg" in line for line in owned), owned
    assert path_pattern("/opt/rocm").search("ls /opt/rocm/bin")
    assert path_pattern("/opt/rocm").search("test -e /opt/rocm")
    assert not path_pattern("/opt").search("/var/opt/x")
    assert not path_pattern("/usr/bin").search("PATH=/usr/bin:/bin")
    assert not path_pattern("/opt/rocm").search("/opt/rocm-6.4.3")
    assert version_regexes(VERSIONS_MODULE), "versions.py's own regexes are not detected"
    for regex in (r"\d+\.\d+", r"[0-9]+[.]", r"^[0-9]{5}\.", r"\.\d"):
        assert VERSION_REGEX.search(regex), regex
    for regex in (r"Agent \d+", r"([\d.,]+) ([kMGT]?B)", r"^gfx[0-9]{2,4}[0-9a-f]$"):
        assert not VERSION_REGEX.search(regex), regex


def test_no_host_path_of_paths_py_is_typed_out_elsewhere():
    patterns = {p: path_pattern(p) for p in host_paths()}
    copies = [c for m in modules_but(PATHS_MODULE) for c in path_copies(m, patterns)]
    assert copies == [], "use rocm_fleet.model.paths:\n" + "\n".join(copies)


def test_no_version_regex_outside_versions_py():
    found = [r for m in modules_but(VERSIONS_MODULE) for r in version_regexes(m)]
    assert found == [], "move to rocm_fleet.model.versions:\n" + "\n".join(found)
