"""Every end-to-end test runs alone (``pytest -k NAME``): what a test starts from comes from
fixtures, never from module state an earlier test left. Read from the source: no test of
tests/e2e writes a module-level name (``global``, ``NAME[...] = ...``, ``NAME.append(...)``
and the like); a state later tests need goes into a fixture (see test_streams.py's
``classic`` or test_lifecycle.py's ``Life``). What the source can't show, a test that needs
the hosts as an earlier test left them, is found by running it alone and shuffled."""

import ast
from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parents[1] / "e2e"
MUTATORS = {"append", "extend", "insert", "update", "add", "setdefault", "pop", "clear"}


def module_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def writes(test: ast.FunctionDef, module: set[str]) -> list[str]:
    """The module-level names ``test`` writes: (line, how)."""
    found = []
    for node in ast.walk(test):
        if isinstance(node, ast.Global):
            found.append(f"{node.lineno}: global {', '.join(node.names)}")
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            base = target
            while isinstance(base, ast.Subscript | ast.Attribute):
                base = base.value
            if base is not target and isinstance(base, ast.Name) and base.id in module:
                found.append(f"{node.lineno}: {ast.unparse(target)} = ...")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in MUTATORS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in module
        ):
            found.append(f"{node.lineno}: {ast.unparse(node.func)}(...)")
    return found


@pytest.mark.parametrize("path", sorted(E2E.glob("test_*.py")), ids=lambda p: p.name)
def test_no_e2e_test_writes_module_state(path):
    tree = ast.parse(path.read_text(), str(path))
    module = module_names(tree)
    found = [
        f"{path.name}:{where} in {node.name}"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        for where in writes(node, module)
    ]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("path", sorted(E2E.glob("test_*.py")), ids=lambda p: p.name)
def test_no_e2e_module_pins_its_order(path):
    """A shuffled run (``-p random_order``) shuffles every module: none opts out with
    ``pytest.mark.random_order(disabled=True)`` to keep an order its tests depend on."""
    marks = [
        f"{path.name}:{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute) and node.attr == "random_order"
    ]
    assert marks == [], "\n".join(marks)
