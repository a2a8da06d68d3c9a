"""The tests of tests/unit/test_settings_schema.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from rocm_fleet.model.config import ConfigError, load_config
from unit.test_settings_schema import GOOD


def parse_cli_arg(text: str):
    """pyinfra's reading of a --data value, in a subprocess (pyinfra_cli patches gevent in)."""
    code = "import json, sys; from pyinfra_cli.util import parse_cli_arg as p; "
    code += "print(json.dumps(p(sys.argv[1])))"
    result = subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True)
    return json.loads(result.stdout)


def test_a_data_hint_round_trips_through_pyinfras_parsing():
    """``--data rocm_users=[alice]`` reaches the inventory as the string "[alice]"
    (pyinfra reads --data values as JSON); the hint is one pyinfra reads as the list."""
    given = parse_cli_arg("[alice]")
    with pytest.raises(ConfigError) as refused:
        load_config({**GOOD, "rocm_users": given}, "gpu07", lambda key: "--data")
    message = str(refused.value)
    assert "e.g. ['alice']" in message and "['[alice]']" not in message
    hint = re.search(r"--data '(rocm_users)=(.*)'$", message)
    assert hint, message
    assert parse_cli_arg(hint.group(2)) == ["alice"]
    load_config({**GOOD, "rocm_users": parse_cli_arg(hint.group(2))})
    # the quoted release hint round-trips too
    with pytest.raises(ConfigError) as refused:
        load_config({**GOOD, "rocm_version": parse_cli_arg("6.4")}, "gpu07")
    quoted = re.search(r"--data 'rocm_version=(.*?)'", str(refused.value)).group(1)
    assert parse_cli_arg(quoted) == "6.4.3"
