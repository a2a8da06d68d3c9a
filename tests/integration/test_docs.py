"""The tests of tests/unit/test_docs.py that start a process or a loopback server (the integration
tier; the pure ones stay there)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rocm_fleet.model.config import load_config
from unit.test_docs import README, ROOT


def parse_cli_args(values: list[str]) -> list:
    """Values as pyinfra's command line parses `--data` (in a child process: importing
    pyinfra's CLI monkey-patches the process for gevent)."""
    script = (
        "import json, sys\nfrom pyinfra_cli.util import parse_cli_arg\n"
        "print(json.dumps([parse_cli_arg(a) for a in sys.argv[1:]]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *values], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


def test_readme_data_examples_arrive_as_the_settings_expect():
    """Each `--data 'key=value'` in the README, read as pyinfra's CLI reads it, is valid."""
    examples = re.findall(r"--data '?([a-z_]+)=(\[[^\]]*\]|[^'\s`)]+)'?", README)
    parsed = parse_cli_args([value for _key, value in examples] + ["7.14"])
    values = [(key, value) for (key, _raw), value in zip(examples, parsed, strict=False)]
    assert ("rocm_users", ["alice", "bob"]) in values and ("rocm_version", "7.2.1") in values
    for key, value in values:
        load_config({"rocm_version": "6.4.3", key: value}, "readme")
    # ... and the number the README warns about is refused, saying how to quote it.
    message = ""
    try:
        load_config({"rocm_version": parsed[-1]}, "readme")
    except Exception as exc:
        message = str(exc)
    assert "arrived as a number: quote it" in message


def test_the_deploys_the_readme_runs_are_what_pyinfra_imports():
    """A wheel user has no deploy.py: the README runs `pyinfra INVENTORY
    rocm_fleet.deploy.rocm_node`, which pyinfra's CLI resolves as it resolves an operation
    (in a child process: importing pyinfra's CLI monkey-patches the process for gevent)."""
    blocks = "\n".join(re.findall(r"^```sh\n(.*?)^```", README, re.M | re.S))
    deploys = set(re.findall(r"^pyinfra \S+ (\S+)", blocks, re.M))
    assert deploys == {"rocm_fleet.deploy.rocm_node"}, deploys
    script = (
        "from pyinfra_cli.util import try_import_module_attribute\n"
        "func = try_import_module_attribute(\n"
        "    'rocm_fleet.deploy.rocm_node', prefix='pyinfra.operations'\n"
        ")\n"
        "print(func.__module__, func.__name__)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.stdout.split() == ["rocm_fleet.deploy.node", "rocm_node"], result.stderr
    # ... and the checkout's deploy.py runs it, then the features' (rocm_fleet.compose), as
    # the README says
    assert (
        "from rocm_fleet.compose import fleet_node\n\nfleet_node()"
        in (ROOT / "deploy.py").read_text()
    )


def build_site(site: Path) -> None:
    """`make docs` into `site`: MkDocs with --strict fails on a link to a missing page or
    anchor (not with --quiet: that hides the warnings --strict counts)."""
    pytest.importorskip(
        "mkdocs", reason="the docs site needs the dev extra (pip install -e '.[dev]')"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_the_site_builds_with_every_link_resolved(tmp_path):
    build_site(tmp_path)
    home = (tmp_path / "index.html").read_text()
    assert "Your first hour" in home and 'href="deploying/#' in home  # the README, relinked
