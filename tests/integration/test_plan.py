"""The tests of tests/unit/test_plan.py that start a process or a loopback server (the integration
tier; the pure ones stay there)."""

from __future__ import annotations


def test_venv_remove_script_removes_only_what_it_created(tmp_path):
    """venv-remove.sh on a real directory tree: the venv, then the recorded directories
    above it that are now empty; the ledger keeps what still exists."""
    import subprocess

    from integration.rootless import stat_double
    from rocm_fleet.operations._script import script

    made = tmp_path / "made"
    venv = made / "venv"
    (venv / "bin").mkdir(parents=True)
    kept = tmp_path / "kept"  # recorded, but holds the admin's file
    (kept / "venv").mkdir(parents=True)
    (kept / "admin.txt").write_text("mine")
    ledger = tmp_path / "ledger"
    ledger.write_text(f"{made}\n{venv}\n{kept}\n{kept / 'venv'}\n")
    # The safe path rule's check reads tmp_path's directories as root's (rootless.py).
    bin_dir = stat_double(tmp_path.with_name(f"{tmp_path.name}-bin"), tmp_path)
    for target in (venv, kept / "venv"):
        command = script("venv-remove", str(target), str(ledger)).get_raw_value()
        env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
        subprocess.run(command, shell=True, check=True, env=env)
    assert not made.exists()
    assert kept.exists() and not (kept / "venv").exists()
    assert ledger.read_text() == f"{kept}\n"
