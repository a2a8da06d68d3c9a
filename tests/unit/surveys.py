"""Survey answers for plan, preflight and audit tests, and the one plan harness.

``fresh_survey()`` is what a freshly installed host answers to preflight's survey (keys as
``rocm_fleet.preflight.survey_reads`` names them; a key left out gets its fact's default,
as the real survey gives a fact with no output). ``plan()`` plans the deploy through
pyinfra's API for one host whose only source of facts is such a survey, and records every
other fact the plan asks for (a round trip a converged host should not need).
"""

from __future__ import annotations

import copy
import hashlib
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyinfra.api import Config, Inventory, State
from pyinfra.context import ctx_host, ctx_state

from rocm_fleet.facts.survey import Survey

ROOT = Path(__file__).resolve().parents[2]
OS_RELEASE = ROOT / "tests" / "fixtures" / "os-release"

# One RX 7900 XTX on PCI (device 0x744c, tests/fixtures/sysfs/rx7900xtx), amdgpu not
# loaded yet, nothing of ROCm, NVIDIA or torch, plenty of space, connected as root.
FRESH: dict[str, Any] = {
    "distro": {"id": "debian", "id_like": [], "version_id": "12", "codename": "bookworm",
               "point_release": "12.9", "pretty_name": "Debian GNU/Linux 12 (bookworm)"},
    "arch": "amd64",
    "kernel": "6.12.38+deb13-amd64",  # new enough for every matrix distro
    "identity": {"uid": 0, "user": "root"},
    "wsl": False,
    "pci": [{"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x744c", "class": "0x030000",
             "driver": None}],
    "kfd": None,
    "amdgpu": {"loaded": False, "version": None, "initstate": None},
    "modules": [],
    "packages": {"curl": "7.88.1-10+deb12u14"},
    "dpkg": [],
    "sources": [],
    "mirror": "http://deb.debian.org/debian",
    "rocm_version": None,
    "secure_boot": {"state": "absent", "shim_validation_disabled": False, "setup_mode": False,
                    "message": ""},
    "reboot": {"required": False, "packages": [], "reasons": []},
    "groups": {"groups": ["video"], "users": {}},
    "venv": None,
    "torch_build": None,
    "disk": [{"path": "/opt", "mount": "/", "avail": 80 * 10**9},
             {"path": "/var/cache/apt/archives", "mount": "/", "avail": 80 * 10**9}],
    "apt": {"need": None, "message": "E: Unable to locate package rocm-hip-runtime"},
}  # fmt: skip


def os_release(name: str) -> dict[str, str]:
    meta = {}
    for line in (OS_RELEASE / name).read_text().splitlines():
        key, _, value = line.partition("=")
        meta[key] = value.strip('"')
    return meta


def fresh_survey(os_name: str | None = None, arch: str = "amd64", **changes: Any):
    """FRESH with the distro of an os-release fixture, the arch, and any keys changed."""
    survey = copy.deepcopy(FRESH)
    if os_name is not None:
        meta = os_release(os_name)
        survey["distro"] = {
            "id": meta.get("ID", "").lower(),
            "id_like": meta.get("ID_LIKE", "").split(),
            "version_id": meta.get("VERSION_ID"),
            "codename": meta.get("VERSION_CODENAME"),
            "point_release": None,
            "pretty_name": meta.get("PRETTY_NAME"),
        }
    survey["arch"] = arch
    survey.update(changes)
    return survey


def digest(content: str, mode: str = "644", mtime: int = 1_700_000_000) -> dict[str, Any]:
    """A FileDigest answer for a file holding ``content``."""
    return {"mode": mode, "sha256": hashlib.sha256(content.encode()).hexdigest(), "mtime": mtime}


@dataclass
class SurveyHost:
    """Answers preflight's survey from ``survey``; any other fact read is recorded in
    ``extra_reads`` and answered from ``other`` (fact class name -> answer) or None."""

    survey: dict[str, Any]
    other: dict[str, Any] = field(default_factory=dict)
    extra_reads: list[str] = field(default_factory=list)

    def __call__(self, fact, *args, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if not k.startswith("_")}
        if fact is Survey:
            return {
                read.key: copy.deepcopy(self.survey[read.key])
                if read.key in self.survey
                else read.fact().default()
                for read in kwargs["reads"]
            }
        self.extra_reads.append(f"{fact.__name__}({kwargs})")
        return copy.deepcopy(self.other.get(fact.__name__))


@dataclass
class PlannedOp:
    name: str  # the op's name without the "rocm-fleet | " of the node deploy
    commands: list[Any]
    meta: Any
    conditional: bool  # gated with _if


@dataclass
class Plan:
    ops: list[PlannedOp]
    state: State
    refused: bool  # preflight refused the host (it is failed before anything runs)

    @property
    def names(self) -> list[str]:
        return [op.name for op in self.ops]

    @property
    def changes(self) -> list[str]:
        """The operations that would change the host (not counting ``_if``-gated ones)."""
        return [op.name for op in self.ops if op.meta._maybe_is_change and not op.conditional]

    def find(self, fragment: str) -> PlannedOp:
        (op,) = [op for op in self.ops if fragment in op.name]
        return op


def plan(data: dict, host: SurveyHost) -> Plan:
    """Plan deploy.py through pyinfra's API for one host ("node") whose facts come from
    ``host``. Nothing runs anywhere."""
    inventory = Inventory(([("node", dict(data))], {}))
    state = State(inventory, Config())
    node = inventory.get_host("node")
    node.connected = True
    state.activate_host(node)
    node.get_fact = host
    with ctx_state.use(state), ctx_host.use(node):
        runpy.run_path(str(ROOT / "deploy.py"))
        ops = []
        for op_hash in state.get_op_order():
            if op_hash not in state.ops[node]:
                continue
            op_data = state.get_op_data_for_host(node, op_hash)
            name = next(iter(state.get_op_meta(op_hash).names)).removeprefix("rocm-fleet | ")
            ops.append(
                PlannedOp(
                    name,
                    list(op_data.command_generator()),
                    op_data.operation_meta,
                    bool(op_data.global_arguments["_if"]),
                )
            )
    return Plan(ops, state, node in state.failed_hosts)


def script_call(command: Any) -> tuple[str, list[str]]:
    """(script name, its arguments) of a command made by ``operations._script.script``."""
    bits = [getattr(bit, "obj", bit) for bit in list(command.bits)]
    assert bits[:2] == ["sh", "-c"], command
    return bits[3], [str(b) for b in bits[4:]]
