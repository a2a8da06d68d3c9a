"""tests/node on its own, as a user runs it on a real node: ``--hosts local://``, inventories
with ``@local``, an unreachable host, and ``--hosts`` without expectations.

Each case runs the suite in a subprocess against this machine (``local://``) or a loopback
port nothing listens on, so none needs the lab. This machine is not a ROCm node: what
matters is how the suite ran (where, with which data, how it reports), not the verdicts.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from unit.surveys import ROOT

NODE_SUITE = ROOT / "tests" / "node"
CHECKS = 6  # the checks in tests/node/test_node.py
NEVER_CONTACTED = "paramiko://root@127.0.0.1:1"  # loopback, port 1: connection refused


def node_suite(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", str(NODE_SUITE), "-p", "no:cacheprovider", "-rs",
         "-o", "addopts=", *args],
        capture_output=True, text=True, cwd=cwd, timeout=300, check=False,
    )  # fmt: skip
    result.output = result.stdout + result.stderr
    return result


def outcomes(result) -> dict[str, int]:
    """pytest's last line: {"passed": 2, "failed": 3, ...}."""
    last = result.stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


def test_hosts_without_expectations_skip_every_check_with_one_reason():
    result = node_suite("--hosts", "local://")
    assert result.returncode == 0, result.output
    assert outcomes(result) == {"skipped": CHECKS}, result.output
    reasons = re.findall(r"^SKIPPED \[(\d+)\] .*?: (.*)$", result.stdout, re.M)
    assert len(reasons) == 1 and reasons[0][0] == str(CHECKS), result.output
    assert "--hosts needs --rocm-version" in reasons[0][1]
    assert "RuntimeError" not in result.output


def test_local_hosts_are_checked_on_this_machine():
    result = node_suite("--hosts", "local://", "--rocm-version", "6.4.3", "-v")
    ran = re.findall(r"::(test_\w+)\[(\S+)\] (PASSED|FAILED|SKIPPED)", result.stdout)
    assert len(ran) == CHECKS and {where for _, where, _ in ran} == {"local"}, result.output
    assert "ERROR" not in result.stdout and "RuntimeError" not in result.output


def test_an_unreachable_host_fails_every_check_with_one_line_and_none_passes():
    result = node_suite("--hosts", NEVER_CONTACTED, "--rocm-version", "6.4.3")
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
    result = node_suite("--inventory", str(inventory), "-v", cwd=tmp_path)
    ran = re.findall(r"::(test_\w+)\[(\S+)\] (PASSED|FAILED|SKIPPED)", result.stdout)
    assert {where for _, where, _ in ran} == {"local"} and len(ran) == CHECKS, result.output
    # The inventory's data reached the checks: no GPU expected, no venv to look at.
    assert "GPU-less host by configuration" in result.stdout, result.output
    assert "pytorch_install is false" in result.stdout, result.output
    assert "ERROR" not in result.stdout and "RuntimeError" not in result.output


def test_inventory_problems_are_one_line_usage_errors(tmp_path):
    (tmp_path / "bad.py").write_text('nodes = [("@local", {)]\n')
    cases = {
        "bad.py": "ERROR: bad.py:1: closing parenthesis",
        "missing.py": "ERROR: inventory file missing.py does not exist",
    }
    for inventory, message in cases.items():
        result = node_suite("--inventory", inventory, cwd=tmp_path)
        assert result.returncode == 4, result.output  # pytest's usage error
        assert result.stderr.strip().startswith(message), result.output
        assert "Traceback" not in result.output


def test_inventory_hosts_map_to_testinfra_specs():
    spec = importlib.util.spec_from_file_location("node_conftest", NODE_SUITE / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    assert conftest._spec("@local", {}) == "local://"
    assert conftest._spec("@local", {"_sudo": True}) == "local://?sudo=true"
    assert (
        conftest._spec(
            "gpu01", {"ssh_user": "admin", "_sudo": True, "ssh_port": 2222, "ssh_key": "/k"}
        )
        == "paramiko://admin@gpu01:2222?sudo=true&ssh_identity_file=%2Fk"
    )
