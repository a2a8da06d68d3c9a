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

import os
import re
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import pytest

from rocm_fleet.checks import command as check
from rocm_fleet.checks import plugin, test_node

CHECKS = len([name for name in dir(test_node) if name.startswith("test_")])
NEVER_CONTACTED = "paramiko://root@127.0.0.1:1"  # loopback, port 1: connection refused


def run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, cwd=cwd, timeout=300,
        check=False, env={**os.environ, "COLUMNS": "1000"},
    )  # fmt: skip
    result.output = result.stdout + result.stderr
    return result


def rocm_fleet_check(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``rocm-fleet check`` with ``--color never`` on a screen wide enough that no line wraps
    (wrapping: tests/unit/checks/test_report.py, tests/integration/checks/test_check_screen.py)."""
    return run("-m", "rocm_fleet.cli", "check", "--color", "never", *args, cwd=cwd)


def pytest_pyargs(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run("-m", "pytest", "--pyargs", "rocm_fleet.checks", "-p", "no:cacheprovider",
               "-rs", *args, cwd=cwd)  # fmt: skip


def outcomes(result) -> dict[str, int]:
    """pytest's last line: {"passed": 2, "failed": 3, ...}."""
    last = result.stdout.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", last)}


def test_the_package_has_the_checks_the_readme_promises():
    assert CHECKS == 10
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


LINE = re.compile(r"^(ok|FAILED|skipped|UNREACHABLE) +(\S+) +([^:]+?)(?:: (.*))?$")


def lines_of(result) -> list[re.Match]:
    """``rocm-fleet check``'s lines, one per host and check (the summary last)."""
    found = [LINE.match(line) for line in result.stdout.splitlines()[:-1]]
    assert all(found), result.output
    return found


def test_an_unreachable_host_gives_one_line_per_check_and_exit_2(tmp_path):
    result = rocm_fleet_check("--hosts", NEVER_CONTACTED, "--rocm-version", "6.4.3", cwd=tmp_path)
    assert result.returncode == 2, result.output  # could not check; nothing found wrong
    found = lines_of(result)
    assert len(found) == CHECKS and {m.group(1) for m in found} == {"UNREACHABLE"}
    assert {m.group(2) for m in found} == {"127.0.0.1"}
    reasons = {m.group(4) for m in found}
    assert reasons == {"Could not connect ([Errno None] Unable to connect to port 1 on 127.0.0.1)"}
    assert result.stdout.splitlines()[-1] == (
        f"1 host, {CHECKS} checks: 0 passed, {CHECKS} not run (unreachable: 127.0.0.1)"
    )
    assert result.stderr == ""
    for noise in ("Traceback", "paramiko/", "testinfra.host", "During handling", "Warning"):
        assert noise not in result.output, result.output


def test_an_inventory_with_at_local_runs_on_this_machine_with_its_data(tmp_path):
    inventory = tmp_path / "node.py"
    inventory.write_text(
        'nodes = [("@local", {"rocm_version": "6.4.3", "expected_gpu_count": 0,'
        ' "pytorch_install": False})]\n'
    )
    result = rocm_fleet_check("node.py", cwd=tmp_path)
    found = lines_of(result)
    assert {m.group(2) for m in found} == {"@local"} and len(found) == CHECKS, result.output
    # The inventory's data reached the checks: no GPU expected, no venv to look at.
    skipped = {m.group(3) for m in found if m.group(1) == "skipped"}
    assert {"rocminfo reports the expected GPUs", "torch is the ROCm build and sees the GPUs"} <= (
        skipped
    ), result.output
    assert "RuntimeError" not in result.output and result.stderr == ""


def test_at_local_and_data_work_without_an_inventory_file(tmp_path):
    """``rocm-fleet check @local`` (pytest would read a lone @local as an argument file),
    ``--data`` as pyinfra's, and pytest's -k after ``--``."""
    result = rocm_fleet_check(
        "@local", "--data", "rocm_version=6.4.3", "--data", "rocm_users=[]", "--",
        "-k", "users or pin", cwd=tmp_path,
    )  # fmt: skip
    found = lines_of(result)
    assert [(m.group(1), m.group(3)) for m in found] == [
        ("FAILED", "The apt pin prefers AMD's repository"),
        ("skipped", "The rocm_users can reach the GPU (video and render groups)"),
    ], result.output
    assert found[0].group(4) == (
        "/etc/apt/preferences.d/rocm-pin-600 is missing: the distribution's ROCm packages win"
    )
    assert found[1].group(4) == "no rocm_users to check"
    assert result.stdout.splitlines()[-1] == "1 host, 2 checks: 0 passed, 1 failed, 1 skipped"
    assert result.returncode == 1 and result.stderr == "", result.output


def test_at_chroot_runs_in_the_root_and_a_missing_root_is_unreachable(tmp_path):
    result = rocm_fleet_check(
        f"@chroot/{tmp_path}/missing", "--data", "rocm_version=6.4.3", "--", "-k", "pin",
        cwd=tmp_path,
    )  # fmt: skip
    found = lines_of(result)
    assert [m.group(1) for m in found] == ["UNREACHABLE"], result.output
    assert "chroot: cannot change root directory" in found[0].group(4)
    assert result.returncode == 2


def test_tb_after_double_dash_adds_pytests_explanation_under_the_line(tmp_path):
    result = rocm_fleet_check(
        "--hosts", "local://", "--rocm-version", "6.4.3", "--", "-k", "pin", "--tb=short",
        cwd=tmp_path,
    )  # fmt: skip
    lines = result.stdout.splitlines()
    assert lines[0].startswith("FAILED       local  The apt pin prefers AMD's repository: ")
    assert lines[1].startswith("    ") and "test_node.py" in lines[1], result.output
    assert lines[-1] == "1 host, 1 check: 0 passed, 1 failed"


def test_junitxml_records_each_host_and_check(tmp_path):
    import xml.etree.ElementTree as ET

    result = rocm_fleet_check(
        "--hosts", f"local://,{NEVER_CONTACTED}", "--rocm-version", "6.4.3",
        "--junitxml", "checks.xml", "--", "-k", "pin", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 1, result.output  # a finding outranks an unreachable host
    cases = ET.parse(tmp_path / "checks.xml").getroot().iter("testcase")
    verdicts = {case.get("name"): [child.tag for child in case] for case in cases}
    assert verdicts == {
        "test_pin_prefers_amds_repository[local]": ["failure"],
        "test_pin_prefers_amds_repository[127.0.0.1]": ["properties", "error"],
    }, verdicts
    assert "generated xml" not in result.output


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hosts", "local://", "--rocm-version", "6.4.99"],
         "rocm-fleet check: --rocm-version: inventory key 'rocm_version' has value '6.4.99'"),
        (["--hosts", "local://", "--rocm-version", "6.4.3", "--", "--no-such-option"],
         "ERROR: usage:"),
        (["--hosts", "local://", "--rocm-version", "6.4.3", "--", "-k", "nothing_matches"],
         "rocm-fleet check: no check chosen (see -k)"),
        (["--no-such-option"], "usage: rocm-fleet"),
        (["node.py", "--data", "rocm_version"], "rocm-fleet check: --data 'rocm_version'"),
    ],
    ids=["bad version", "unknown pytest option", "-k matches nothing", "unknown option",
         "bad --data"],
)  # fmt: skip
def test_bad_input_exits_4_before_anything_is_checked(tmp_path, argv, message):
    (tmp_path / "node.py").write_text('nodes = ["@local"]\n')
    result = rocm_fleet_check(*argv, cwd=tmp_path)
    assert result.returncode == 4, result.output
    assert result.stdout == "" and result.stderr.startswith(message), result.output
    assert "Traceback" not in result.output


def test_the_hosts_data_comes_from_group_data_like_the_deploys(tmp_path):
    """group_data beside the inventory reaches the checks (the deploy's loader): the
    group's rocm_version is validated by the deploy's model before pytest starts, one line
    per host whose settings are bad."""
    (tmp_path / "group_data").mkdir()
    (tmp_path / "group_data" / "all.py").write_text('rocm_version = "6.4.99"\n')
    (tmp_path / "node.py").write_text('nodes = ["@local", "@chroot/srv/node2"]\n')
    result = rocm_fleet_check("node.py", cwd=tmp_path)
    assert result.returncode == 4, result.output
    # (pyinfra says its @chroot connector is in beta: pyinfra's line, not ours)
    errors = [line for line in result.stderr.splitlines() if "in beta" not in line]
    assert [line.split(":")[0] for line in errors] == ["rocm-fleet check"] * 2, result.output
    assert all("inventory key 'rocm_version' has value '6.4.99'" in e for e in errors), errors
    assert result.stdout == ""


def test_inventory_problems_are_one_line_usage_errors(tmp_path):
    (tmp_path / "bad.py").write_text('nodes = [("@local", {)]\n')
    cases = {
        "bad.py": "rocm-fleet check: bad.py:1: closing parenthesis",
        "missing.py": "rocm-fleet check: inventory file missing.py does not exist",
    }
    for inventory, message in cases.items():
        result = rocm_fleet_check(inventory, cwd=tmp_path)
        assert result.returncode == 4, result.output
        assert result.stderr.strip().startswith(message), result.output
        assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output


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
    args = Namespace(junitxml="out.xml", passed_on=["-k", "torch"])
    argv = check.pytest_args(args)
    assert argv[:2] == ["--pyargs", "rocm_fleet.checks"]
    assert argv[argv.index("-c") + 1] == "/dev/null"
    assert "--junitxml=out.xml" in argv
    assert argv[-2:] == ["-k", "torch"]  # last: the user's options win over ours (--tb)


def test_ssh_specs_become_pyinfra_host_data():
    assert plugin.ssh_spec_data("ssh://admin@gpu01:2222?sudo=true&ssh_identity_file=/k") == (
        "gpu01",
        {"ssh_hostname": "gpu01", "ssh_user": "admin", "ssh_port": 2222, "ssh_key": "/k",
         "_sudo": True},
    )  # fmt: skip
    assert plugin.ssh_spec_data("paramiko://gpu02") == ("gpu02", {"ssh_hostname": "gpu02"})


def test_hosts_that_never_answer_are_waited_for_at_once_and_quietly(tmp_path):
    """Two hosts whose port accepts but never speaks SSH: each costs pyinfra's connect
    timeout (10 s), both at the same time, and paramiko's own traceback is not printed."""
    import socket
    import threading
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    held = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        result = rocm_fleet_check(
            "--hosts", f"ssh://root@127.0.0.1:{port},ssh://root@localhost:{port}",
            "--rocm-version", "6.4.3", "--", "-k", "pin", cwd=tmp_path,
        )  # fmt: skip
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        listener.close()
    assert result.returncode == 2, result.output
    assert [m.group(1) for m in lines_of(result)] == ["UNREACHABLE"] * 2
    assert took < 19, f"{took:.1f} s: the hosts were waited for one after the other"
    assert result.stderr == "", result.output
