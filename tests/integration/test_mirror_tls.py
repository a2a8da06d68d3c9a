"""The tests of tests/unit/test_mirror_tls.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("version", "option"), [("25.1.1", "--use-deprecated=legacy-certs"),
                                                 ("24.2", "--use-deprecated=legacy-certs"),
                                                 ("23.0.1", "")])  # fmt: skip
def test_the_legacy_certs_option_is_given_only_to_a_pip_that_has_it(tmp_path, version, option):
    """The shell substitution asks the venv's own pip: Debian 13's 25.1.1 needs the option
    for an index addressed by IP, Debian 12's 23.0.1 refuses it (and needs none)."""
    import subprocess
    import sys

    from pyinfra.api import QuoteString

    from rocm_fleet.operations.python import _legacy_certs

    (tmp_path / "pip").mkdir()
    (tmp_path / "pip/__init__.py").write_text(f"__version__ = {version!r}\n")
    probe = _legacy_certs(QuoteString(sys.executable))
    done = subprocess.run(["sh", "-c", f"printf '%s' {probe}"], capture_output=True, text=True,
                          env={"PYTHONPATH": str(tmp_path)}, check=True)  # fmt: skip
    assert done.stdout == option
