"""The node checks as a user runs them from an install (``rocm-fleet check`` and
``pytest --pyargs rocm_fleet.checks``): ``--hosts local://``, inventories with ``@local``, an
unreachable host, and hosts with nothing to compare against (a failure, never a skip).

Each case runs the checks in a subprocess, from a directory outside the checkout (so the
package and its pytest plugin are found as installed, and no project configuration is
read), against this machine (``local://``) or a loopback port nothing listens on, so none
needs the lab. This machine is not a ROCm node: what matters is how the checks ran (where,
with which data, how they report), not the verdicts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from rocm_fleet.checks import plugin, test_node
from rocm_fleet.cli import check

CHECKS = len([name for name in dir(test_node) if name.startswith("test_")])
NEVER_CONTACTED = "paramiko://root@127.0.0.1:1"  # loopback, port 1: connection refused


def run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, cwd=cwd, timeout=300,
        check=False,
    )  # fmt: skip
    result.output = result.stdout + result.stderr
    return result


def rocm_fleet_check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run("-m", "rocm_fleet.cli", "check", *args, cwd=cwd)


def pytest_pyargs(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run("-m", "pytest", "--pyargs", "rocm_fleet.checks", "-p", "no:cacheprovider",
               "-rs", *args, cwd=cwd)  # fmt: skip


def outcomes(result) -> dict[str, int]:
    """pytest's last line: {"passed": 2, "failed": 3, ...}."""
    last = result.stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


def test_the_package_has_the_checks_the_readme_promises():
    assert CHECKS == 7
    assert "test_rocminfo_reports_expected_gpus" in dir(test_node)
    assert "test_torch_is_the_rocm_build_and_sees_the_gpus" in dir(test_node)


@pytest.mark.parametrize("how", ["rocm-fleet check", "pytest --pyargs"])
def test_hosts_with_nothing_to_compare_against_fail_with_one_reason(tmp_path, how):
    if how == "rocm-fleet check":
        result = rocm_fleet_check("--hosts", "local://", cwd=tmp_path)
        expected = "rocm-fleet check: nothing to compare --hosts against"
    else:
        result = pytest_pyargs("--hosts", "local://", cwd=tmp_path)
        expected = "ERROR: rocm_fleet.checks: nothing to compare the hosts against"
    assert result.returncode == 4, result.output  # pytest's usage error: not green
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith(expected), result.output
    assert "skipped" not in result.output and "passed" not in result.output
    assert "Traceback" not in result.output


def test_check_without_inventory_or_hosts_says_what_to_give(tmp_path):
    result = rocm_fleet_check(cwd=tmp_path)
    assert result.returncode == 4, result.output
    assert result.stderr.strip() == (
        "rocm-fleet check: nothing to check: give an INVENTORY, or --hosts with --rocm-version"
    )


def test_local_hosts_are_checked_on_this_machine(tmp_path):
    result = pytest_pyargs("--hosts", "local://", "--rocm-version", "6.4.3", "-v", cwd=tmp_path)
    ran = re.findall(r"::(test_\w+)\[(\S+)\] (PASSED|FAILED|SKIPPED)", result.stdout)
    assert len(ran) == CHECKS and {where for _, where, _ in ran} == {"local"}, result.output
    assert "ERROR" not in result.stdout and "RuntimeError" not in result.output


def test_an_unreachable_host_fails_every_check_with_one_line_and_none_passes(tmp_path):
    result = rocm_fleet_check("--hosts", NEVER_CONTACTED, "--rocm-version", "6.4.3", cwd=tmp_path)
    assert result.returncode == 1, result.output
    assert outcomes(result) == {"errors": CHECKS}, result.output
    one_line = r"^127\.0\.0\.1: could not run a command there: (.*)$"
    reasons = re.findall(one_line, result.stdout, re.M)
    assert len(reasons) == CHECKS and len(set(reasons)) == 1, result.output
    assert "Unable to connect to port 1 on 127.0.0.1" in reasons[0]
    assert "Traceback" not in result.output and "paramiko/" not in result.output
    assert len(result.output.splitlines()) < 4 * CHECKS + 10, result.output


def test_an_inventory_with_at_local_runs_on_this_machine_with_its_data(tmp_path):
    inventory = tmp_path / "node.py"
    inventory.write_text(
        'nodes = [("@local", {"rocm_version": "6.4.3", "expected_gpu_count": 0,'
        ' "pytorch_install": False})]\n'
    )
    result = rocm_fleet_check("node.py", "-v", cwd=tmp_path)
    ran = re.findall(r"::(test_\w+)\[(\S+)\] (PASSED|FAILED|SKIPPED)", result.stdout)
    assert {where for _, where, _ in ran} == {"local"} and len(ran) == CHECKS, result.output
    # The inventory's data reached the checks: no GPU expected, no venv to look at.
    skipped = {name for name, _, verdict in ran if verdict == "SKIPPED"}
    assert {
        "test_rocminfo_reports_expected_gpus",
        "test_torch_is_the_rocm_build_and_sees_the_gpus",
    } <= skipped, result.output
    assert "ERROR" not in result.stdout and "RuntimeError" not in result.output


def test_the_hosts_data_comes_from_group_data_like_the_deploys(tmp_path):
    """group_data beside the inventory reaches the checks (the deploy's loader): the
    group's rocm_version is validated by the deploy's model, so a bad one fails each
    check with the model's one-line message."""
    (tmp_path / "group_data").mkdir()
    (tmp_path / "group_data" / "all.py").write_text('rocm_version = "6.4.99"\n')
    (tmp_path / "node.py").write_text('nodes = ["@local"]\n')
    result = rocm_fleet_check("node.py", cwd=tmp_path)
    assert result.returncode == 1, result.output
    assert "inventory key 'rocm_version' has value '6.4.99'" in result.stdout, result.output


def test_inventory_problems_are_one_line_usage_errors(tmp_path):
    (tmp_path / "bad.py").write_text('nodes = [("@local", {)]\n')
    cases = {
        "bad.py": "ERROR: bad.py:1: closing parenthesis",
        "missing.py": "ERROR: inventory file missing.py does not exist",
    }
    for inventory, message in cases.items():
        result = rocm_fleet_check(inventory, cwd=tmp_path)
        assert result.returncode == 4, result.output  # pytest's usage error
        assert result.stderr.strip().startswith(message), result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fleet.py", "--hosts", "local://"], "give an INVENTORY or --hosts, not both"),
        (["fleet.py", "--rocm-version", "6.4.3"], "--rocm-version and --expected-gfx go with"),
        (["--hosts", "local://", "--rocm-version", "6.4.3", "--limit", "gpus"],
         "--limit chooses hosts of an INVENTORY"),
    ],
)  # fmt: skip
def test_check_refuses_options_that_do_not_go_together(tmp_path, argv, message):
    result = rocm_fleet_check(*argv, cwd=tmp_path)
    assert result.returncode == 4 and message in result.stderr, result.output


def test_check_runs_pytest_on_the_installed_checks_with_no_user_configuration():
    args = Namespace(
        inventory="fleet.py", limit=["gpus", "ws*"], hosts=None, rocm_version=None,
        expected_gfx=None, verbose=False, junitxml="out.xml",
    )  # fmt: skip
    argv = check.pytest_args(args)
    assert argv[:2] == ["--pyargs", "rocm_fleet.checks"]
    assert argv[argv.index("-c") + 1] == "/dev/null"
    assert argv[argv.index("--rocm-inventory") + 1] == "fleet.py"
    assert "--rocm-limit=gpus" in argv and "--rocm-limit=ws*" in argv
    assert argv[argv.index("--junitxml") + 1] == "out.xml"


def test_inventory_hosts_map_to_testinfra_specs():
    assert plugin.spec("@local", {}) == "local://"
    assert plugin.spec("@local", {"_sudo": True}) == "local://?sudo=true"
    assert (
        plugin.spec(
            "gpu01", {"ssh_user": "admin", "_sudo": True, "ssh_port": 2222, "ssh_key": "/k"}
        )
        == "paramiko://admin@gpu01:2222?sudo=true&ssh_identity_file=%2Fk"
    )
