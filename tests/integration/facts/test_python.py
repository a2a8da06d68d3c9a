"""rocm_fleet.facts.python: torch's own report, a venv's distributions and torch's
build strings, with stand-in pythons and venvs laid out as pip leaves them (what torch's
report parses to: tests/unit/facts/cases/python.TorchInfo/).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from integration.rootless import stat_double
from rocm_fleet.facts.python import TorchBuildStrings, TorchInfo, VenvDistributions
from unit.facts.support import ODD_PATH, fake_tool, run_sh


def rootless(tmp_path: Path, owners: dict[Path, str] | None = None) -> dict[str, str]:
    """An environment whose stat reads tmp_path's files as root's (the safe path rule's check)."""
    bin_dir = stat_double(tmp_path.with_name(f"{tmp_path.name}-bin"), tmp_path, owners)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_torch_info_command_quotes_odd_python_path():
    command = TorchInfo().command(python=ODD_PATH)
    quoted = "'/opt/my venv/it'\"'\"'s $HOME/bin/python'"
    assert f"if (safe_path {quoted}) 2>&1; then if command -v {quoted} >/dev/null 2>&1; " in (
        command
    )
    assert f"then timeout 300 {quoted} -c '" in command
    assert command.endswith('echo "__rc=$?"; else echo __absent; fi; else echo __rc=126; fi')


@pytest.mark.skipif(not shutil.which("python3"), reason="needs python3")
def test_torch_info_script_runs_and_reports_import_error(tmp_path):
    venv_bin = tmp_path / "my venv" / "bin"
    venv_bin.mkdir(parents=True)
    python = venv_bin / "python"
    # a python without torch: isolate from any torch installed for the test runner
    fake_tool(venv_bin, "python", f'exec {shutil.which("python3")} -I -S "$@"\n')
    rc, out = run_sh(TorchInfo().command(python=str(python)), rootless(tmp_path))
    result = TorchInfo().process(out)
    assert rc == 0
    assert result["error"] == "ModuleNotFoundError: No module named 'torch'"
    absent = run_sh(TorchInfo().command(python=str(tmp_path / "nope")), rootless(tmp_path))
    assert absent[1] == ["__absent"]


def test_torch_info_never_runs_a_python_another_user_could_have_swapped(tmp_path):
    """Who: the owner of the venv's parent (or anyone who may write a directory above it).
    With: the venv, after preflight. The check runs it as root: it refuses, and the GPU
    check reports why."""
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    ran = tmp_path / "ran"
    fake_tool(venv_bin, "python", f"touch {ran}\n")
    command = TorchInfo().command(python=str(venv_bin / "python"))
    for owners, mode in (({tmp_path / "venv": "1000 alice"}, 0o755), (None, 0o777)):
        (tmp_path / "venv").chmod(mode)
        _, out = run_sh(command, rootless(tmp_path, owners))
        error = TorchInfo().process(out)["error"]
        assert error.startswith("python not run: rocm-fleet: refusing to write or run "), error
        assert "(the safe path rule)" in error and not ran.exists()
    (tmp_path / "venv").chmod(0o755)
    run_sh(command, rootless(tmp_path))
    assert ran.exists()


def test_torch_info_script_with_fake_rocm_torch(tmp_path):
    # A stand-in torch module shaped like a ROCm build: proves the script's shape/arch logic.
    pkg = tmp_path / "site" / "torch"
    (pkg / "cuda").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from . import cuda, version\n__version__ = '2.9.1+rocm6.4'\n"
        "class _T:\n"
        "    def __init__(self, v): self.v = v\n"
        "    def __matmul__(self, o): return _T(self.v * 64)\n"
        "    def sum(self): return _T(self.v * 64 * 64)\n"
        "    def item(self): return float(self.v)\n"
        "def ones(*shape, device=None): return _T(1)\n"
    )
    (pkg / "version.py").write_text("hip = '6.4.43484'\ncuda = None\n")
    (pkg / "cuda" / "__init__.py").write_text(
        "class P:\n    gcnArchName = 'gfx942:sramecc+:xnack-'\n"
        "def is_available(): return True\n"
        "def device_count(): return 2\n"
        "def get_device_properties(i): return P()\n"
        "def get_device_name(i): return 'AMD Instinct MI300X'\n"
    )
    python = tmp_path / "python"
    fake_tool(
        tmp_path, "python", f'PYTHONPATH={tmp_path}/site exec {shutil.which("python3")} "$@"\n'
    )
    rc, out = run_sh(TorchInfo().command(python=str(python)), rootless(tmp_path))
    result = TorchInfo().process(out)
    assert rc == 0
    assert result["hip"] == "6.4.43484"
    assert result["device_count"] == 2
    assert [d["arch"] for d in result["devices"]] == ["gfx942", "gfx942"]
    assert result["devices"][0]["arch_full"] == "gfx942:sramecc+:xnack-"
    assert result["matmul"] == "ok"
    assert result["error"] is None


def make_venv(root: Path, python: str = "python3.11", dists=(), version_py: str | None = None):
    """A venv's files as pip leaves them: one ``<name>-<version>.dist-info`` directory per
    distribution, and torch's generated ``torch/version.py``."""
    site = root / "lib" / python / "site-packages"
    site.mkdir(parents=True)
    for dist in dists:
        (site / f"{dist}.dist-info").mkdir()
        (site / f"{dist}.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\n")
    if version_py is not None:
        (site / "torch").mkdir()
        (site / "torch" / "version.py").write_text(version_py)
    (site / "README.txt").write_text("This directory exists so that 3rd party packages...\n")
    return site


# torch/version.py as torch's setup writes it (torch 2.9 ROCm and CUDA wheels).
ROCM_VERSION_PY = """\
from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']
__version__ = '2.9.1+rocm6.4'
debug = False
cuda: Optional[str] = None
git_version = 'd38164a545b4a4e4e0cf73ce67173f70574890b6'
hip: Optional[str] = '6.4.43482-0f2d60242'
xpu: Optional[str] = None
"""
CUDA_VERSION_PY = (
    ROCM_VERSION_PY.replace("2.9.1+rocm6.4", "2.9.1+cu128")
    .replace("cuda: Optional[str] = None", "cuda: Optional[str] = '12.8'")
    .replace("hip: Optional[str] = '6.4.43482-0f2d60242'", "hip: Optional[str] = None")
)
CPU_VERSION_PY = ROCM_VERSION_PY.replace("2.9.1+rocm6.4", "2.9.1+cpu").replace(
    "hip: Optional[str] = '6.4.43482-0f2d60242'", "hip: Optional[str] = None"
)
ROCM_DISTS = (
    "torch-2.9.1+rocm6.4",
    "torchvision-0.24.1+rocm6.4",
    "torchaudio-2.9.1+rocm6.4",
    "pytorch_triton_rocm-3.5.1",
    "numpy-2.3.5",
    "pip-23.0.1",
)


def test_venv_distributions_read_dist_info_names_with_local_labels(tmp_path):
    venv = tmp_path / "my venv" / "it's"
    make_venv(venv, dists=ROCM_DISTS)
    rc, out = run_sh(VenvDistributions().command(str(venv) + "/"))
    assert rc == 0
    assert VenvDistributions().process(out) == {
        "torch": "2.9.1+rocm6.4",
        "torchvision": "0.24.1+rocm6.4",
        "torchaudio": "2.9.1+rocm6.4",
        "pytorch_triton_rocm": "3.5.1",
        "numpy": "2.3.5",
        "pip": "23.0.1",
    }


def test_venv_distributions_no_venv_empty_venv_and_two_pythons(tmp_path):
    fact = VenvDistributions()
    assert fact.process(run_sh(fact.command(str(tmp_path / "none")))[1]) is None
    make_venv(tmp_path / "empty")
    assert fact.process(run_sh(fact.command(str(tmp_path / "empty")))[1]) == {}


@pytest.mark.parametrize(
    ("version_py", "expected"),
    [
        (ROCM_VERSION_PY, {"hip": "6.4.43482-0f2d60242", "cuda": None}),
        (CUDA_VERSION_PY, {"hip": None, "cuda": "12.8"}),
        (CPU_VERSION_PY, {"hip": None, "cuda": None}),
        ("hip = '6.2.41133-dd7f95766'\ncuda = None\n",
         {"hip": "6.2.41133-dd7f95766", "cuda": None}),
    ],
    ids=["rocm", "cuda", "cpu", "untyped"],
)  # fmt: skip
def test_torch_build_strings_read_version_py_without_importing_torch(
    tmp_path, version_py, expected
):
    venv = tmp_path / "my venv"
    make_venv(venv, dists=ROCM_DISTS[:1], version_py=version_py)
    rc, out = run_sh(TorchBuildStrings().command(str(venv)))
    assert rc == 0
    assert TorchBuildStrings().process(out) == expected


def test_torch_build_strings_without_torch_is_none(tmp_path):
    fact = TorchBuildStrings()
    assert run_sh(fact.command(str(tmp_path / "none"))) == (0, [])
    assert fact.process([]) is None
    make_venv(tmp_path / "venv", dists=["pip-23.0.1"])
    assert fact.process(run_sh(fact.command(str(tmp_path / "venv")))[1]) is None
