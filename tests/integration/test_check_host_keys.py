"""``rocm-fleet check`` checks SSH host keys exactly as pyinfra does, before any command runs.

Attacker: someone on the fleet network who answers for a node (a moved address, a spoofed
one, a reinstalled host's new key) and wants the checks to log in as root there. Each case
runs ``rocm-fleet check`` in a subprocess against a real SSH server on 127.0.0.1
(``tests/integration/sshd.py``) and reads from the server whether anyone logged in or ran anything.
pyinfra's semantics (``pyinfra.connectors.sshuserclient``): a key that differs from the one
in known_hosts is refused whatever ``ssh_strict_host_key_checking`` says; an unknown key is
recorded under ``accept-new`` (pyinfra's default), refused under ``yes``, let in with a
warning under ``no``; ``ssh_known_hosts_file`` replaces ``~/.ssh/known_hosts``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import paramiko
import pytest

from integration.sshd import serving

NOTHING = 2  # cli.exits: could not check


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    where = tmp_path_factory.mktemp("keys")
    client = paramiko.ECDSAKey.generate()
    client.write_private_key_file(str(where / "id_ecdsa"))
    return {
        "client": client,
        "client_file": where / "id_ecdsa",
        "node": paramiko.ECDSAKey.generate(),
        "impostor": paramiko.ECDSAKey.generate(),
    }


def check(tmp_path: Path, port: int, keys, strict: str | None, known_hosts: Path | None):
    data = {
        "ssh_hostname": "127.0.0.1", "ssh_port": port, "ssh_user": "root",
        "ssh_key": str(keys["client_file"]), "rocm_version": "6.4.3",
    }  # fmt: skip
    if strict is not None:
        data["ssh_strict_host_key_checking"] = strict
    if known_hosts is not None:
        data["ssh_known_hosts_file"] = str(known_hosts)
    (tmp_path / "fleet.py").write_text(f"nodes = [('node', {data!r})]\n")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "rocm_fleet.cli", "check", "fleet.py", "--", "-k", "pin"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "COLUMNS": "1000"},  # a line a check
    )  # fmt: skip
    result.output = result.stdout + result.stderr
    return result


def known_hosts_with(path: Path, port: int, key: paramiko.PKey) -> Path:
    path.write_text(f"[127.0.0.1]:{port} {key.get_name()} {key.get_base64()}\n")
    return path


def test_a_changed_host_key_is_refused_before_anything_runs(tmp_path, keys):
    known = tmp_path / "known_hosts"
    known.touch()
    with serving(keys["node"], keys["client"]) as node:
        first = check(tmp_path, node.port, keys, "accept-new", known)
        port = node.port
    assert first.returncode == 1, first.output  # reached, and the pin is not there
    assert node.commands and node.commands[0] == "true", node.commands
    assert f"[127.0.0.1]:{port}" in known.read_text()  # accept-new recorded the key
    recorded = known.read_text()

    with serving(keys["impostor"], keys["client"], port=port) as impostor:
        second = check(tmp_path, port, keys, "accept-new", known)
    assert second.returncode == NOTHING, second.output
    assert impostor.logins == [] and impostor.commands == [], "logged in to an impostor"
    line = second.stdout.splitlines()[0]
    pin = "UNREACHABLE  node  The apt pin prefers AMD's repository: "
    assert line.startswith(pin), second.output
    assert "Host key for 127.0.0.1 does not match" in line, line
    assert f"ssh-keygen -R [127.0.0.1]:{port}" in line, line
    assert known.read_text() == recorded  # the impostor's key is not recorded
    assert "Traceback" not in second.output and "WARNING" not in second.output


@pytest.mark.parametrize("strict", ["yes", "no", "accept-new", None])
def test_a_key_other_than_the_known_one_is_refused_whatever_the_policy(tmp_path, keys, strict):
    with serving(keys["impostor"], keys["client"]) as impostor:
        known = known_hosts_with(tmp_path / "known_hosts", impostor.port, keys["node"])
        result = check(tmp_path, impostor.port, keys, strict, known)
    assert result.returncode == NOTHING, result.output
    assert "does not match" in result.stdout, result.output
    assert impostor.logins == [] and impostor.commands == []


def test_an_unknown_key_is_refused_under_yes(tmp_path, keys):
    with serving(keys["node"], keys["client"]) as node:
        result = check(tmp_path, node.port, keys, "yes", tmp_path / "empty")
    assert result.returncode == NOTHING, result.output
    assert "No host key for [127.0.0.1]:" in result.stdout, result.output
    assert node.logins == [] and node.commands == []


def test_the_known_key_in_ssh_known_hosts_file_is_let_in_under_yes(tmp_path, keys):
    with serving(keys["node"], keys["client"]) as node:
        known = known_hosts_with(tmp_path / "fleet_known_hosts", node.port, keys["node"])
        result = check(tmp_path, node.port, keys, "yes", known)
    assert result.returncode == 1, result.output  # checked: the pin is missing there
    assert node.logins == ["root"] and node.commands[0] == "true"


def test_the_users_known_hosts_is_read_when_the_inventory_names_none(tmp_path, keys):
    with serving(keys["impostor"], keys["client"]) as impostor:
        (tmp_path / "home/.ssh").mkdir(parents=True)
        known_hosts_with(tmp_path / "home/.ssh/known_hosts", impostor.port, keys["node"])
        result = check(tmp_path, impostor.port, keys, None, None)
    assert result.returncode == NOTHING and "does not match" in result.stdout, result.output
    assert impostor.logins == []
