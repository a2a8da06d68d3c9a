"""The package's rooms, read from the source (nothing imported, nothing installed):

* every ``rocm_fleet`` import names a module at the path it names under ``tasks/``;
* the core (``CORE``: what deploys a node, plus the command shell ``cli``) imports no feature,
  except the shell's ``rocm_fleet.cli`` inside a function (it builds each feature's command);
* a feature (``FEATURES``) imports the core and itself, never another feature;
* the composer (``COMPOSER``: the core's deploy and the features', for deploy.py and pull
  mode's deploy) imports the core and the features, and nothing in the package imports it;
* within the core, imports run one way (``CORE``, lowest first), and ``model`` and
  ``upstream`` don't import pyinfra at all;
* the core imports no feature's third-party dependency at a module's top (``EXTRAS``), so a
  plain install deploys and runs ``rocm-fleet --help``;
* every folder of the package is in pyproject.toml's package list (else a wheel lacks it).

Imports are every ``import`` statement of a file, those inside functions included.
"""

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tasks"
PACKAGE = SOURCE / "rocm_fleet"

#: the core's packages, lowest first; the top-level modules are leaves below them all
CORE = ["model", "upstream", "facts", "engine", "operations", "deploy", "cli"]
LEAVES = {"version", "assets", "atomic"}
#: each a package of its own, on the core
FEATURES = {"audit", "bundle", "checks", "containers", "matrix", "pull", "roll"}
#: the module composing the core's deploy and the features' deploys; imported by no module
COMPOSER = "compose"
#: the one core module that may import features, and only inside a function
SHELL = "rocm_fleet.cli"
#: core packages that run where no pyinfra state exists (the bundle, the matrix check, the model)
NO_PYINFRA = {"model", "upstream"} | LEAVES
#: the features' own third-party dependencies (pyproject's extras), by import name
EXTRAS = {"tuf", "securesystemslib", "pytest", "testinfra", "rich", "yaml", "prometheus_client"}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        if "files" in path.relative_to(PACKAGE).parts:
            continue
        parts = path.relative_to(SOURCE).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = modules()


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, module, at the top) for every import of the file, ``from a import b`` as
    ``a.b`` when ``a.b`` is a module and as ``a`` otherwise; "at the top" is False for an
    import inside a function or under ``if TYPE_CHECKING:``."""
    found = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.If) and ast.unparse(child.test).endswith("TYPE_CHECKING"):
                inner = False  # for type checkers only: never imported when the code runs
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for alias in child.names:
                    full = f"{child.module}.{alias.name}"
                    found.append((child.lineno, full if full in MODULES else child.module, top))
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), True)
    return found


def room(module: str) -> str:
    """``rocm_fleet.facts.apt`` -> ``facts``; the package itself and its leaves -> the leaf."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "version"


def rank(module: str) -> int:
    name = room(module)
    return -1 if name in LEAVES else CORE.index(name)


def test_the_package_has_the_core_and_the_features_and_nothing_beside_them():
    top = {room(m) for m in MODULES if m != "rocm_fleet"}
    assert top == set(CORE) | LEAVES | FEATURES | {COMPOSER}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_rocm_fleet_import_names_a_file_and_keeps_to_its_rooms(module):
    problems = []
    mine = room(module)
    for line, target, top in imports(MODULES[module]):
        where = f"{MODULES[module].relative_to(ROOT)}:{line}"
        root = target.split(".")[0]
        if root == "pyinfra" and mine in NO_PYINFRA:
            problems.append(f"{where}: {mine} imports pyinfra ({target})")
        if root in EXTRAS and top and mine not in FEATURES:
            problems.append(f"{where}: the core's {module} imports {target} at its top")
        if root != "rocm_fleet":
            continue
        if target not in MODULES:
            problems.append(f"{where}: {target} is no file under tasks/")
            continue
        theirs = room(target)
        if theirs == COMPOSER or mine == COMPOSER:
            if theirs == COMPOSER and mine != COMPOSER:
                problems.append(f"{where}: {module} imports the composer {target}")
        elif theirs in FEATURES:
            if mine in FEATURES and theirs != mine:
                problems.append(f"{where}: the feature {mine} imports the feature {theirs}")
            elif mine not in FEATURES and not (module == SHELL and not top):
                problems.append(f"{where}: the core's {module} imports the feature {target}")
        elif mine not in FEATURES and rank(target) > rank(module):
            problems.append(
                f"{where}: {module} ({mine}) imports {target} from the layer above ({theirs})"
            )
    assert not problems, "\n".join(problems)


def test_pyproject_lists_every_folder_of_the_package():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(pyproject["tool"]["setuptools"]["packages"])
    folders = {m for m, p in MODULES.items() if p.name == "__init__.py"}
    assert folders <= listed, f"missing from pyproject.toml: {sorted(folders - listed)}"
    assert {"rocm_fleet.files", "rocm_fleet.files.scripts"} <= listed


#: the test suite's packages (tests/lab is also installed as the package ``lab``)
TEST_PACKAGES = {"lab", "e2e", "unit"}


def test_no_product_module_imports_the_lab_or_the_tests():
    """The lab is the product's test bench, never a part of it: no module of the package, nor
    the top-level deploy.py users run, imports it or the test packages."""
    product = [*MODULES.values(), ROOT / "deploy.py"]
    found = [
        f"{path.relative_to(ROOT)}:{line}: imports {target}"
        for path in product
        for line, target, _ in imports(path)
        if target.split(".")[0] in TEST_PACKAGES
    ]
    assert found == [], "\n".join(found)
