"""The package's layers, read from the source (nothing imported, nothing installed):

* every ``rocm_fleet`` import names a module at the path it names under ``tasks/``;
* imports run one way: a module imports only its own layer and the layers below it
  (``LAYERS``, lowest first), and ``model`` and ``offline`` don't import pyinfra at all;
* every folder of the package is in pyproject.toml's package list (else a wheel lacks it).
"""

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tasks"
PACKAGE = SOURCE / "rocm_fleet"

#: lowest first; the top-level modules (``version``, ``assets``, ``atomic``) are leaves below all
LAYERS = ["model", "offline", "facts", "engine", "operations", "deploy", "cli", "checks"]
LEAVES = {"version", "assets", "atomic"}
#: layers that run where no pyinfra state exists (the bundle, the matrix check, the model)
NO_PYINFRA = {"model", "offline"} | LEAVES


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


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of the file, ``from a import b`` as ``a.b`` when
    ``a.b`` is a module and as ``a`` otherwise."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.append((node.lineno, full if full in MODULES else node.module))
    return found


def layer(module: str) -> str:
    """``rocm_fleet.facts.apt`` -> ``facts``; the package itself and its leaves -> the leaf."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "version"


def rank(module: str) -> int:
    name = layer(module)
    return -1 if name in LEAVES else LAYERS.index(name)


def test_the_package_has_the_layers_and_nothing_beside_them():
    top = {layer(m) for m in MODULES if m != "rocm_fleet"}
    assert top == set(LAYERS) | LEAVES


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_rocm_fleet_import_names_a_file_and_runs_down_the_layers(module):
    problems = []
    for line, target in imports(MODULES[module]):
        where = f"{MODULES[module].relative_to(ROOT)}:{line}"
        if target.split(".")[0] == "pyinfra" and layer(module) in NO_PYINFRA:
            problems.append(f"{where}: {layer(module)} imports pyinfra ({target})")
        if target.split(".")[0] != "rocm_fleet":
            continue
        if target not in MODULES:
            problems.append(f"{where}: {target} is no file under tasks/")
        elif rank(target) > rank(module):
            problems.append(
                f"{where}: {module} ({layer(module)}) imports {target} from the layer above"
                f" ({layer(target)})"
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
        for line, target in imports(path)
        if target.split(".")[0] in TEST_PACKAGES
    ]
    assert found == [], "\n".join(found)
