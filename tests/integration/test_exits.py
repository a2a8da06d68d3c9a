"""One exit-status scheme for every ``rocm-fleet`` command (``cli.exits``): 0 clean,
1 findings, 2 could not check, 4 bad input; stated in each command's ``--help``, and kept by
its usage errors (click's own 2 included), a missing inventory, a network failure.

Every subcommand the parser has is held to it, so a command added later is too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from rocm_fleet.cli import exits, main, shell
from rocm_fleet.cli.exits import Exit, worst


def rocm_fleet(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [sys.executable, "-m", "rocm_fleet.cli", *args],
        capture_output=True, text=True, cwd=cwd, timeout=120, check=False,
    )  # fmt: skip
    result.output = result.stdout + result.stderr
    return result


def commands() -> dict[str, click.Command]:
    """Every (sub)command by its words: "audit", "matrix check", ..."""
    found = {}

    def walk(words: str, command: click.Command) -> None:
        found[words] = command
        if isinstance(command, click.Group):
            context = click.Context(command)
            for name in command.list_commands(context):
                walk(f"{words} {name}".strip(), command.get_command(context, name))

    walk("", shell)
    return found


COMMANDS = commands()


def test_every_command_is_known_here():
    tools = {"audit", "check", "roll", "matrix", "matrix check", "bundle", "mirror-ca", "settings"}
    assert tools <= set(COMMANDS) - {""}, sorted(COMMANDS)


@pytest.mark.parametrize("words", sorted(COMMANDS), ids=lambda w: w or "rocm-fleet")
def test_every_help_states_the_scheme_and_usage_errors_exit_4(words):
    command = COMMANDS[words]
    assert (command.epilog or "").startswith(exits.EPILOG), words
    assert command.help, f"{words or 'rocm-fleet'} has no description"
    assert "``" not in command.help, "reST markup in the help"
    assert main([*words.split(), "--no-such-option"]) == Exit.USAGE
    assert main([*words.split(), "-h"]) == Exit.OK  # argparse's short form still helps


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "usage: rocm-fleet"),
        (["audit"], "usage: rocm-fleet audit"),
        (["audit", "missing.py"], "rocm-fleet audit: inventory file missing.py does not exist"),
        (["check", "missing.py"], "rocm-fleet check: inventory file missing.py does not exist"),
        (["bundle", "missing.py", "--output", "out"],
         "rocm-fleet bundle: inventory file missing.py does not exist"),
        (["bundle", "missing.py"], "usage: rocm-fleet bundle"),
        (["matrix", "check", "--timeout", "soon"], "usage: rocm-fleet matrix check"),
        (["matrix", "check", "--apt-base", "ftp://x"], "rocm-fleet matrix: --apt-base"),
        (["mirror-ca"], "usage: rocm-fleet mirror-ca"),
        (["mirror-ca", "ca", "not a name"], "rocm-fleet mirror-ca: 'not a name' is neither"),
        (["settings", "--json", "--markdown"], "usage: rocm-fleet settings"),
        (["roll", "missing.py"], "rocm-fleet roll: inventory file missing.py does not exist"),
        (["roll", "fleet.py", "--max-unavailable", "0"], "rocm-fleet roll: --max-unavailable 0"),
        (["settings", "--", "-k", "x"], "usage: rocm-fleet"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)  # fmt: skip
def test_bad_input_exits_4_with_no_traceback(tmp_path, argv, message):
    result = rocm_fleet(*argv, cwd=tmp_path)
    assert result.returncode == Exit.USAGE, result.output
    assert result.stderr.startswith(message), result.output
    assert "Traceback" not in result.output and result.stdout == ""


def test_a_bundle_whose_upstream_does_not_answer_could_not_check(tmp_path):
    """Nothing listens on loopback port 1: the network, not the data, is the problem (2)."""
    (tmp_path / "fleet.py").write_text(
        "hosts = [('ws1', {'rocm_version': '6.4.3', 'pytorch_install': False,\n"
        "    'rocm_apt_base_url': 'http://127.0.0.1:1/rocm/apt',\n"
        "    'rocm_key_url': 'http://127.0.0.1:1/rocm.gpg.key',\n"
        "    'rocm_key_fingerprint': '0123456789ABCDEF0123456789ABCDEF01234567'})]\n"
    )
    result = rocm_fleet(
        "bundle", "fleet.py", "--output", "out", "--distro", "debian 12", "--retries", "0",
        "--timeout", "5", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == Exit.NOT_CHECKED, result.output
    assert result.stderr.startswith("rocm-fleet bundle: http://127.0.0.1:1/rocm.gpg.key: ")
    assert "Traceback" not in result.output


def test_findings_outrank_could_not_check_and_bad_input_outranks_both():
    assert worst([]) == Exit.OK
    assert worst([Exit.OK, Exit.NOT_CHECKED]) == Exit.NOT_CHECKED
    assert worst([Exit.NOT_CHECKED, Exit.FINDINGS, Exit.OK]) == Exit.FINDINGS
    assert worst([Exit.FINDINGS, Exit.USAGE]) == Exit.USAGE


def test_the_audits_host_statuses_map_onto_the_scheme():
    from rocm_fleet.audit.cells import AuditRow
    from rocm_fleet.audit.metrics import STATUSES
    from rocm_fleet.audit.rows import exit_status

    def status(*found: str) -> int:
        return exit_status([AuditRow("host", s) for s in found])

    assert {s: status(s) for s in STATUSES} == {
        "ok": 0, "drift": 1, "refused": 1, "unreachable": 2, "failed": 2, "invalid": 4,
    }  # fmt: skip
    assert status("ok", "unreachable", "drift") == 1
