"""The installed library, as a user's own pyinfra project uses it.

The wheel is built from this checkout and installed into a fresh venv (its dependencies
from PyPI). A separate project directory with its own ``tasks/`` package and
``group_data/`` runs a deploy that calls one of its own deploys beside ``rocm_node()``
against a lab host (restored converged), with the venv's pyinfra: the whole node runs to its
end and verifies. Neither
``tasks`` shadows the other: the wheel has no top-level ``tasks`` package, and the project's
``tasks`` is the one its deploy imports. The same install then checks the node from
outside (``rocm-fleet check``, the testinfra checks that ship in the wheel) and audits it
as OpenMetrics, read back with the Prometheus project's own parser.
"""

from __future__ import annotations

import json
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from e2e.support import OP_PREFIX, build_product_wheel, running_lab, sh
from lab import HostSpec
from rocm_fleet.matrix import tables
from rocm_fleet.model import gpu_targets, streams

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
#: the node's data, which the project's group_data/all.py holds
DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
        "rocm_users": ["alice"]}  # fmt: skip
# Starts converged (tests/lab/converged.py, a host of test_audit.py's kind: the same data):
# the first deploy of a fresh node is test_lifecycle.py's. The tests run with ``inventory``,
# which leaves the data out, so the project's group_data is what gives it.
HOST = HostSpec("pkg", suite="bookworm", profile="rx7900xtx", data=DATA, converged=True)
MOTD_LINE = "This node is managed by the site's own tasks/"

PROJECT = {
    "deploy.py": (
        "from rocm_fleet.deploy import rocm_node\n"
        "from tasks.site import site_banner\n\n"
        "site_banner()\n"
        "rocm_node()\n"
    ),
    "tasks/__init__.py": '"""The site\'s own deploys."""\n',
    "tasks/site.py": (
        "from pyinfra.api import deploy\n"
        "from pyinfra.operations import files\n\n\n"
        '@deploy("Site")\n'
        "def site_banner():\n"
        f'    files.line(name="Banner in /etc/motd", path="/etc/motd", line="{MOTD_LINE}")\n'
    ),
    "group_data/all.py": "".join(f"{key} = {value!r}\n" for key, value in DATA.items()),
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_product_wheel(tmp_path_factory.mktemp("dist"))


def test_the_wheel_holds_the_package_its_files_and_scripts_and_no_tasks(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {
        "rocm_fleet",
        f"rocm_fleet-{version('rocm-fleet')}.dist-info",
    }
    assert "rocm_fleet/files/rocm-profile.sh" in names
    # the monitoring files `rocm-fleet monitoring` writes, and the acceptance suites
    monitoring = {
        f"rocm_fleet/files/monitoring/{p.name}" for p in (ROOT / "files/monitoring").iterdir()
    }
    assert monitoring and monitoring <= set(names)
    assert "rocm_fleet/roll/acceptance/suites.json" in names
    # every script the operations run on a node: shell, and the acceptance's python
    scripts = {
        path.name for path in (ROOT / "files/scripts").iterdir() if path.suffix in (".sh", ".py")
    }
    packed = {
        name.rsplit("/", 1)[1] for name in names if name.startswith("rocm_fleet/files/scripts/")
    }
    assert packed == scripts
    entry_points = zipfile.ZipFile(wheel).read(
        f"rocm_fleet-{version('rocm-fleet')}.dist-info/entry_points.txt"
    )
    assert b"rocm-fleet = rocm_fleet.cli:main" in entry_points
    # The node checks and their pytest plugin ship (pytest --pyargs rocm_fleet.checks).
    assert {"rocm_fleet/checks/test_node.py", "rocm_fleet/checks/plugin.py"} <= set(names)
    assert b"rocm_fleet_checks = rocm_fleet.checks.plugin" in entry_points
    # The matrix's data files ship beside the module that reads them.
    data = {"upstream_data.json", *tables.TABLE_FILES}
    assert {f"rocm_fleet/model/{name}" for name in data} <= set(names)


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and its dependencies. (This pip installs into it: the venv
    needs none of its own; no bytecode compiled ahead, python writes it on import.)"""
    path = tmp_path_factory.mktemp("installed") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True,
                   timeout=300)  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(path / "bin/python"), "install", "-q",
         "--no-compile", f"{wheel}[all]"],
        check=True, capture_output=True, timeout=900,
    )  # fmt: skip
    return path


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("project")
    for name, text in PROJECT.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    return path


def where(venv: Path, module: str, cwd: Path) -> str:
    """Where the venv's python, started in ``cwd`` (as pyinfra puts it on sys.path),
    imports ``module`` from, or the error."""
    code = f"import sys; sys.path.append(''); import {module}; print({module}.__file__)"
    result = subprocess.run(
        [str(venv / "bin/python"), "-c", code],
        capture_output=True, text=True, cwd=cwd, env={"PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    return result.stdout.strip() or result.stderr.strip().splitlines()[-1]


def test_the_installed_checks_refuse_to_pass_with_nothing_to_compare_against(venv, tmp_path):
    """From the wheel alone (no checkout): the checks are found with --pyargs and, given
    hosts but nothing they should have, fail with one reason instead of skipping."""
    result = subprocess.run(
        [str(venv / "bin/pytest"), "--pyargs", "rocm_fleet.checks", "--hosts", "local://"],
        capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"},
        timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 4, result.stdout + result.stderr
    assert "nothing to compare the hosts against" in result.stderr


def test_the_installed_matrix_reads_its_data_files_and_names_their_sources(venv, tmp_path):
    result = subprocess.run(
        [str(venv / "bin/rocm-fleet"), "matrix", "--sources"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for target in gpu_targets.GPU_TARGETS:
        assert f"  {target.gfx}  {target.family}  {target.products}\n" in result.stdout
    assert '    from download.pytorch.org.toml [index."rocm7.2"]: ' in result.stdout


def test_neither_tasks_package_shadows_the_other(venv, project, tmp_path):
    assert where(venv, "tasks", project) == str(project / "tasks/__init__.py")
    assert where(venv, "tasks", tmp_path) == "ModuleNotFoundError: No module named 'tasks'"
    assert where(venv, "rocm_fleet", project).startswith(str(venv / "lib"))


@pytest.fixture(scope="module")
def lab():
    yield from running_lab([HOST], ["6.4.3"])


@pytest.fixture(scope="module")
def inventory(lab, tmp_path_factory) -> Path:
    """The lab's inventory less the node's data (``DATA``): the project's group_data gives it."""
    hosts = runpy.run_path(str(lab.inventory))["lab"]
    kept = [(name, {k: v for k, v in data.items() if k not in DATA}) for name, data in hosts]
    assert all(DATA.keys() <= data.keys() for _, data in hosts)
    path = tmp_path_factory.mktemp("inventory") / "lab.py"
    path.write_text(f"lab = {kept!r}\n")
    return path


def test_a_project_deploy_runs_rocm_node_beside_its_own(lab, inventory, venv, project):
    result = lab.run(
        [venv / "bin/pyinfra", "-y", "--json", inventory, "deploy.py"], cwd=project,
        timeout=1800,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    report = json.loads(result.stdout)["results"]
    assert report["failed_hosts"] == [], output[-4000:]
    ops = {op["name"]: op for op in report["operations"]}
    assert ops["Site | Banner in /etc/motd"]["success"] == ["pkg"]
    assert MOTD_LINE in (lab.root("pkg") / "etc/motd").read_text()
    # The whole node ran, from the installed package and its files: converged and verified.
    verify = [op for name, op in ops.items() if name.startswith(f"{OP_PREFIX}Verify")]
    assert verify and all(op["error"] == [] and op["hosts"] == 1 for op in verify), verify
    pin = (lab.root("pkg") / "etc/apt/preferences.d/rocm-pin-600").read_text()
    assert pin == streams.CLASSIC.pin_text()  # AMD's pin, written from the classic stream
    assert "6.4.3-" in sh(lab, "pkg", "cat /opt/rocm/.info/version")


def test_the_readme_first_hour_runs_the_deploy_by_name_without_a_deploy_file(
    lab, inventory, venv, project, tmp_path
):
    """A wheel user has no deploy.py: the README's first hour runs `pyinfra INVENTORY
    rocm_fleet.deploy.rocm_node --dry` from a directory holding only group_data/. pyinfra
    finds the deploy in the installed package and plans it: on the host just converged, the
    node's operations (its GPU check among them), none with a change."""
    shutil.copytree(project / "group_data", tmp_path / "group_data")
    result = lab.run(
        [venv / "bin/pyinfra", "--dry", "--json", inventory, "rocm_fleet.deploy.rocm_node"],
        cwd=tmp_path, timeout=900,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    plan = json.loads(result.stdout)["plan"]
    node = [op for op in plan if op["name"].startswith(f"{OP_PREFIX}Verify")]
    assert node, output[-4000:]
    assert [op["name"] for op in plan if op["hosts_with_change"]] == [], output[-4000:]


def test_the_installed_node_checks_pass_on_the_deployed_host(lab, inventory, venv, project):
    """`rocm-fleet check` from the wheel: the host's expectations from the project's own
    group_data (gfx1100, one GPU, alice), the checks run over SSH."""
    result = lab.run(
        [venv / "bin/rocm-fleet", "check", inventory, "-v"],
        cwd=project,
        timeout=900,
        env={"COLUMNS": "1000"},  # a line a check, not wrapped
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert re.search(r"^ok +\S+ +rocminfo reports the expected GPUs$", result.stdout, re.M), output
    assert "FAILED" not in result.stdout and "error" not in result.stdout.lower()
    assert re.fullmatch(
        r"1 host, 10 checks: \d passed(, \d skipped)?", result.stdout.splitlines()[-1]
    )


def test_the_installed_audit_speaks_openmetrics(lab, inventory, venv, project):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    result = lab.run(
        [venv / "bin/rocm-fleet", "audit", inventory, "--format", "openmetrics", "-q"],
        cwd=project, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(result.stdout)
        for sample in family.samples
    }
    assert samples[("rocm_fleet_audit_status", (("host", "pkg"), ("status", "ok")))] == 1
    assert samples[("rocm_fleet_gpus_expected", (("host", "pkg"),))] == 1
    assert samples[("rocm_fleet_gpus_found", (("host", "pkg"),))] == 1
    assert samples[("rocm_fleet_drifted_concerns", (("host", "pkg"),))] == 0
    assert samples[("rocm_fleet_reboot_pending", (("host", "pkg"),))] == 0
    (info,) = [labels for name, labels in samples if name == "rocm_fleet_host_info"]
    assert dict(info)["rocm_release"].startswith("6.4.3") and "+rocm6.4" in dict(info)["torch"]
    # The deploy's GPU check passed in this boot, and the audit says when.
    assert ("rocm_fleet_last_verify_timestamp_seconds", (("host", "pkg"),)) in samples
