"""Plan-level tests: what deploy.py would do on hosts the lab can't build (Ubuntu).

The deploy is planned through pyinfra's API against hosts whose facts come from fixtures
(os-release files, an empty package list), as on a freshly installed machine. Nothing
connects anywhere; the assertions read the planned operations and their commands.
"""

from __future__ import annotations

import runpy
import shlex
from pathlib import Path

import pytest
from pyinfra.api import Config, Inventory, State
from pyinfra.api.exceptions import PyinfraError
from pyinfra.context import ctx_host, ctx_state
from pyinfra.facts.deb import DebArch, DebPackages
from pyinfra.facts.server import Groups, LinuxDistribution, Os

from rocm_fleet.config import ConfigError
from rocm_fleet.matrix import release
from unit.surveys import fresh_survey

ROOT = Path(__file__).resolve().parents[2]
OS_RELEASE = ROOT / "tests" / "fixtures" / "os-release"


def os_release(name: str) -> dict[str, str]:
    meta = {}
    for line in (OS_RELEASE / name).read_text().splitlines():
        key, _, value = line.partition("=")
        meta[key] = value.strip('"')
    return meta


class FreshHost:
    """Facts of a freshly installed machine: nothing of ROCm, no venv, alice in video."""

    def __init__(self, os_name: str, arch: str = "amd64", packages: dict | None = None):
        self.facts = {
            LinuxDistribution: {"release_meta": os_release(os_name)},
            DebArch: arch,
            DebPackages: packages or {},
            Groups: ["root", "video"],
            Os: "Linux",
        }

    def __call__(self, fact, *args, **kwargs):
        if fact in self.facts:
            return self.facts[fact]
        if fact.__name__ == "GroupMembership":  # video exists and alice is in it
            return {"groups": ["video"], "users": {u: ["alice", "video"] for u in kwargs["users"]}}
        if fact.__name__ == "StaleAgainst":
            return True
        if fact.__name__ == "NodeSurvey":  # preflight's one read (tests/unit/surveys.py)
            return fresh_survey(self.facts[LinuxDistribution]["release_meta"], self.facts[DebArch])
        return None  # files, keyrings, venvs: absent


def plan_ops(data: dict, get_fact) -> list[tuple[str, list, object]]:
    """Plan deploy.py through pyinfra's API for one host whose facts come from ``get_fact``:
    (operation name, commands it would run, its OperationMeta), in order. Nothing runs."""
    inventory = Inventory(([("node", dict(data))], {}))
    state = State(inventory, Config())
    host = inventory.get_host("node")
    host.connected = True
    state.activate_host(host)
    host.get_fact = get_fact
    with ctx_state.use(state), ctx_host.use(host):
        runpy.run_path(str(ROOT / "deploy.py"))
        return [
            (
                next(iter(state.get_op_meta(op_hash).names)),
                list(state.get_op_data_for_host(host, op_hash).command_generator()),
                state.get_op_meta(op_hash),
            )
            for op_hash in state.get_op_order()
        ]


def plan(os_name: str, data: dict, arch: str = "amd64", packages=None) -> dict[str, list]:
    """Operation name -> commands deploy.py would run on a fresh host."""
    ops = plan_ops(data, FreshHost(os_name, arch, packages))
    return {name: commands for name, commands, _ in ops}


def written(commands) -> str:
    """The content a ``text_file`` operation's one command writes (printf %s CONTENT > tmp)."""
    (command,) = commands
    shell, flag, script = shlex.split(str(command))
    words = shlex.split(script)
    assert (shell, flag, words[:2]) == ("sh", "-c", ["printf", "%s"]), command
    return words[2]


def find(planned: dict, fragment: str) -> list:
    (name,) = [n for n in planned if fragment in n]
    return planned[name]


@pytest.mark.parametrize(
    ("os_name", "version", "line"),
    [
        ("ubuntu-22.04", "6.4.3", "https://repo.radeon.com/rocm/apt/6.4.3 jammy main"),
        ("ubuntu-24.04", "7.2.1", "https://repo.radeon.com/rocm/apt/7.2.1 noble main"),
        ("ubuntu-24.04", "7.2.0", "https://repo.radeon.com/rocm/apt/7.2 noble main"),
        ("debian-12", "6.4.3", "https://repo.radeon.com/rocm/apt/6.4.3 jammy main"),
        ("debian-13", "7.2.1", "https://repo.radeon.com/rocm/apt/7.2.1 noble main"),
    ],
)
def test_source_line_pin_and_packages_per_distro(os_name, version, line):
    planned = plan(os_name, {"rocm_version": version, "rocm_users": ["alice"]})
    source = written(find(planned, "Point apt at the ROCm release"))
    assert source == f"deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] {line}\n"
    pin = written(find(planned, "Pin repo.radeon.com"))
    assert pin == "Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n"
    (install,) = find(planned, "Install the ROCm packages")
    tag = release(version).numeric_tag
    assert str(install).endswith(f"release-packages {tag} want:rocm-hip-runtime")
    groupadd, usermod = find(planned, "Give the GPU users video and render")
    assert str(groupadd) == "groupadd --system render"
    assert str(usermod) == "usermod -a -G render alice"  # already in video


def test_torch_comes_from_the_matching_index():
    planned = plan("ubuntu-24.04", {"rocm_version": "7.2.1"})
    (pip,) = find(planned, "Install the torch wheels")
    text = str(pip)
    assert "--index-url https://download.pytorch.org/whl/rocm7.2" in text
    assert "torch==2.11.0+rocm7.2" in text and "torchvision==0.26.0" in text


def test_key_is_fetched_and_checked_before_anything_is_written():
    planned = plan("ubuntu-22.04", {"rocm_version": "6.4.3"})
    names = list(planned)
    key = names.index(next(n for n in names if "signing key" in n))
    assert key < names.index(next(n for n in names if "Point apt at" in n))
    (fetch,) = planned[names[key]]
    script = str(fetch)
    assert "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C" in script
    assert "https://repo.radeon.com/rocm/rocm.gpg.key" in script
    assert script.index("gpg --batch --with-colons --show-keys") < script.index("--dearmor")
    assert "apt-key" not in script and "trusted=yes" not in str(planned)


@pytest.mark.parametrize(
    ("os_name", "version", "arch", "reason"),
    [
        ("ubuntu-24.04", "6.1.2", "amd64", "publishes no noble packages"),
        ("debian-11", "6.4.3", "amd64", "debian 11 is not supported"),
        ("ubuntu-22.04", "6.4.3", "arm64", "architecture is arm64"),
    ],
)
def test_unsupported_host_gets_only_a_refusal(os_name, version, arch, reason):
    planned = plan(os_name, {"rocm_version": version}, arch=arch)
    assert list(planned) == ["Preflight | Preflight: refuse this host"]
    (refusal,) = planned["Preflight | Preflight: refuse this host"]
    assert reason in str(refusal)


def test_bad_data_stops_planning():
    with pytest.raises((ConfigError, PyinfraError)):
        plan("ubuntu-22.04", {"rocm_version": "6.4.3", "rocm_users": "alice"})


def test_changing_release_moves_every_rocm_package_and_leaves_debian_ones():
    installed = {
        "rocm-hip-runtime": ["7.2.1.70201-81~24.04"],
        "rocm-core": ["7.2.1.70201-81~24.04"],
        "rocm-smi-lib": ["7.8.0.70201-81~24.04"],
        "librocm-smi64-1": ["6.1.2-1"],  # Debian's own: not ours to touch
        "curl": ["7.88.1-10+deb12u14"],
    }
    planned = plan("ubuntu-24.04", {"rocm_version": "6.4.3"}, packages=installed)
    (switch,) = find(planned, "Install the ROCm packages")
    args = str(switch).split("release-packages ", 1)[1]
    assert args == "60403 want:rocm-hip-runtime stale:rocm-core stale:rocm-smi-lib"
