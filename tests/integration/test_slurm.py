"""The tests of tests/unit/test_slurm.py that start a process or a loopback server (the integration
tier; the pure ones stay there)."""

from __future__ import annotations

import subprocess

import pytest

from rocm_fleet.facts.slurm import SlurmNode


@pytest.mark.parametrize(
    ("name", "asked"), [(None, "short-host"), ("gpu-a07", "gpu-a07"), ("a'b c", "a'b c")]
)
def test_slurm_is_asked_about_the_node_by_its_slurm_name(tmp_path, name, asked):
    """``rocm_slurm_node_name`` when set (a node whose NodeName= is not its host name), else
    the host's short name; run by a real shell, with scontrol and hostname standing in."""
    for tool, says in (("scontrol", 'echo "asked: $*"'), ("hostname", "echo short-host")):
        (tmp_path / tool).write_text(f"#!/bin/sh\n{says}\n")
        (tmp_path / tool).chmod(0o755)
    fact = SlurmNode()
    ran = subprocess.run(
        ["sh", "-c", fact.command(name)],
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    lines = ran.stdout.splitlines()
    assert lines[0] == f"__node={asked}" and lines[1] == f"asked: show node {asked}"
