"""The tests of rocm_fleet.facts.secureboot that start a process or a loopback server (the
integration tier; its parsers' cases are data in tests/unit/facts/cases/secureboot.*/)."""

from __future__ import annotations

import shutil

from rocm_fleet.facts.secureboot import MokKeyState, SecureBoot
from unit.facts.support import fake_tool, run_sh


def test_mok_key_state_command_runs_with_fake_mokutil(tmp_path):
    cert = tmp_path / "mok dir" / "it's.der"
    command = MokKeyState().command(path=str(cert))
    assert f"elif ! test -e '{tmp_path}/mok dir/it'\"'\"'s.der'; then echo __missing;" in command
    env = {"PATH": f"{tmp_path}/bin:/usr/bin:/bin"}
    (tmp_path / "bin").mkdir()
    if shutil.which("mokutil", path=env["PATH"]) is None:
        assert run_sh(command, env) == (0, ["__absent"])
    fake_tool(tmp_path / "bin", "mokutil", 'echo "$2 is not enrolled"; exit 0\n')
    assert run_sh(command, env) == (0, ["__missing"])
    cert.parent.mkdir()
    cert.write_bytes(b"0\x82")
    rc, out = run_sh(command, env)
    assert rc == 0
    assert MokKeyState().process(out) == {
        "state": "not_enrolled",
        "message": f"{cert} is not enrolled",
    }


def test_secure_boot_command_always_exits_zero(tmp_path):
    fake_tool(
        tmp_path, "mokutil", 'echo "This system doesn\'t support Secure Boot" >&2; exit 255\n'
    )
    rc, out = run_sh(SecureBoot().command(), {"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert rc == 0
    assert SecureBoot().process(out)["state"] == "unsupported"
