"""The lab (tests/lab) is a package of its own: its pyproject installs that folder as ``lab``
with the command ``rocm-fleet-lab``, and the Makefile's venv installs it (read from the
source, nothing installed; test_layers checks that the product never imports it)."""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "tests" / "lab"


def test_the_lab_installs_its_own_folder_as_lab_with_its_command():
    project = tomllib.loads((LAB / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    assert setuptools["packages"] == ["lab"]
    assert (LAB / setuptools["package-dir"]["lab"]).resolve() == LAB
    assert project["project"]["scripts"] == {"rocm-fleet-lab": "lab.__main__:main"}
    cli = ast.parse((LAB / "__main__.py").read_text())
    assert "main" in {node.name for node in cli.body if isinstance(node, ast.FunctionDef)}
    # The product comes from the checkout; setuptools is what the lab packs into the wheel
    # index doubles as the build backend of the rocm sdist (pytorch_index.build_backend_wheel).
    assert project["project"]["dependencies"] == ["setuptools>=70.2.0"]
    assert "-e tests/lab" in (ROOT / "Makefile").read_text()


def test_the_labs_add_ons_use_its_public_api_only():
    """What runs on a lab (the Slurm cluster, its tests) reaches it through the public
    methods of ``Lab`` and ``Cluster``: no ``lab._...`` or ``cluster._...`` attribute, nor
    another module's private name, so the lab can change inside without breaking them."""
    for module in ("lab/slurm.py", "e2e/test_slurm.py", "e2e/test_slurm_waves.py"):
        tree = ast.parse((LAB.parent / module).read_text())
        private = sorted(
            f"{ast.unparse(node.value)}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and ast.unparse(node.value).endswith(("lab", "cluster"))
        )
        imported = sorted(
            f"{node.module}.{alias.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
            if alias.name.startswith("_") and node.module not in ("_util", "lab._util", None)
        )
        assert private == [] and imported == [], (module, private, imported)
