"""Two pyinfra connectors for the benches (never the product): record a real host, replay it.

``@simrec/NAME`` is pyinfra's own SSH connector that also appends every command it runs
(as the host's shell receives it: sudo and environment wrapped, as pyinfra's
``make_unix_command_for_host`` builds it) and the answer (success, every output line) to the
JSON-lines file named by ``RFSIM_RECORD``. The bench runs the deploy, ``--dry``, the audit
and ``exec -- true`` through it against converged lab hosts.

``@sim/NAME`` answers each command from such a recording, without a network: host data
``sim_recording`` (the file), ``sim_as`` (the recorded host it plays), ``sim_latency_ms``
(a round trip, slept cooperatively under gevent as a real connection waits). The recorded
host's name is replaced by the simulated host's in commands and answers, so a thousand
hosts each plan as themselves. A command the recording doesn't hold fails the command with
a line that says so: a simulation that drifts from what the product asks is an error, never
a silent empty answer.

pyinfra finds connectors through the ``pyinfra.connectors`` entry point group; the bench
registers these two with a throwaway ``.dist-info`` on PYTHONPATH (``register``), so the
unmodified ``pyinfra`` and ``rocm-fleet`` commands use them.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any, TypedDict

import gevent
from pyinfra.connectors.base import BaseConnector, DataMeta
from pyinfra.connectors.ssh import SSHConnector
from pyinfra.connectors.util import CommandOutput, OutputLine, make_unix_command_for_host

#: the arguments pyinfra's connectors take out before building the command (local.py, ssh.py)
_NOT_IN_COMMAND = ("_get_pty", "_timeout", "_stdin", "_success_exit_codes")


def command_text(state: Any, host: Any, command: Any, arguments: dict[str, Any]) -> str:
    """The command as the host's shell receives it."""
    kept = {k: v for k, v in arguments.items() if k not in _NOT_IN_COMMAND}
    return make_unix_command_for_host(state, host, command, **kept).get_raw_value()


class RecordingConnector(SSHConnector):
    """pyinfra's SSH connector, writing each command and its answer to $RFSIM_RECORD."""

    @staticmethod
    def make_names_data(name: str):
        yield name, {}, []

    def run_shell_command(self, command, print_output=False, print_input=False, **arguments):
        text = command_text(self.state, self.host, command, dict(arguments))
        ok, output = super().run_shell_command(command, print_output, print_input, **arguments)
        record = {
            "host": self.host.name,
            "command": text,
            "ok": ok,
            "lines": [[line.buffer_name, line.line] for line in output.combined_lines],
        }
        with open(os.environ["RFSIM_RECORD"], "a") as out:
            out.write(json.dumps(record) + "\n")
        return ok, output


class SimData(TypedDict, total=False):
    sim_recording: str
    sim_as: str
    sim_latency_ms: float


@cache
def recording(path: str) -> dict[str, dict[str, tuple[bool, list[list[str]]]]]:
    """host -> command -> (ok, lines), read once per process (the last answer wins)."""
    answers: dict[str, dict[str, tuple[bool, list[list[str]]]]] = {}
    for line in Path(path).read_text().splitlines():
        entry = json.loads(line)
        answers.setdefault(entry["host"], {})[entry["command"]] = (entry["ok"], entry["lines"])
    return answers


class SimulatedConnector(BaseConnector):
    """Answers from a recording of a converged host, with a simulated round trip."""

    handles_execution = True
    data_cls = SimData
    data_meta = {
        "sim_recording": DataMeta("JSON-lines recording written through @simrec"),
        "sim_as": DataMeta("the recorded host this one plays"),
        "sim_latency_ms": DataMeta("simulated round trip per command", 0.0),
    }

    @staticmethod
    def make_names_data(name: str):
        yield name, {}, []

    def _wait(self) -> None:
        if self.data["sim_latency_ms"]:
            gevent.sleep(self.data["sim_latency_ms"] / 1000)

    def connect(self) -> None:
        self._wait()  # a connection costs at least one round trip

    def run_shell_command(self, command, print_output=False, print_input=False, **arguments):
        played = self.data["sim_as"]
        text = command_text(self.state, self.host, command, dict(arguments))
        text = text.replace(self.host.name, played)
        self._wait()
        answer = recording(self.data["sim_recording"]).get(played, {}).get(text)
        if answer is None:
            line = f"rflab-sim: {played} was never asked this: {text[:200]}"
            print(f"{self.host.name}: {line}", file=sys.stderr)  # pyinfra shows it only with -v
            return False, CommandOutput([OutputLine("stderr", line)])
        ok, lines = answer
        return ok, CommandOutput(
            [OutputLine(buffer, line.replace(played, self.host.name)) for buffer, line in lines]
        )

    def put_file(self, filename_or_io, remote_filename, remote_temp_filename=None, **arguments):
        self._wait()
        return True

    def get_file(self, remote_filename, filename_or_io, remote_temp_filename=None, **arguments):
        raise NotImplementedError("a converged host is never asked for a file")


def register(site: Path) -> Path:
    """A ``.dist-info`` in ``site`` that declares both connectors; put ``site`` and this
    folder on PYTHONPATH and pyinfra finds them (importlib.metadata reads sys.path)."""
    info = site / "rocm_fleet_bench_connectors-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rocm-fleet-bench-connectors\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text(
        "[pyinfra.connectors]\n"
        "sim = simconnector:SimulatedConnector\n"
        "simrec = simconnector:RecordingConnector\n"
    )
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return site


# pyinfra 3.10 reads every installed distribution's entry points again for each host whose
# name names a connector (``@sim/...``: pyinfra/api/inventory.py, make_hosts_and_groups,
# ``connector_name not in get_all_connectors()``), ~2 ms a host in a venv of 50
# distributions, twice per run; a plain SSH host name never pays it. So that a simulated
# host costs the controller what an SSH host does, the bench's processes read the entry
# points once (Python imports sitecustomize from PYTHONPATH at start). The fix upstream is
# the same: docs/pyinfra-proposals.md, "Read the connectors once per inventory".
SITECUSTOMIZE = """\
import functools

import pyinfra.api.connectors
import pyinfra.api.inventory

cached = functools.cache(pyinfra.api.connectors.get_all_connectors)
pyinfra.api.connectors.get_all_connectors = cached
pyinfra.api.inventory.get_all_connectors = cached  # imported by name there
"""
