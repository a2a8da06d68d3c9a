"""examples/: each inventory, with its group_data, loaded by pyinfra's own inventory loader
and planned as `pyinfra INVENTORY deploy.py --dry` plans it, without a lab.

The loader runs in a child process (importing pyinfra's CLI monkey-patches the process for
gevent), from the checkout root as the examples' README says; each host is then planned
through pyinfra's API (``unit.surveys.plan``) against a survey of a freshly installed host
of the distro and GPUs its comment in the inventory names. The examples are what users
copy: one that no longer validates, or that a release no longer supports, fails here.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from unit.surveys import ROOT, SurveyHost, fresh_survey, plan

try:  # where preflight records what it found (moving from deploy/ to engine/)
    from rocm_fleet.engine.refuse import outcome
except ImportError:
    from rocm_fleet.deploy.preflight import outcome

EXAMPLES = ROOT / "examples"

LOAD = """
import json, sys
from rocm_fleet.cli.inventory import load_inventory
_, hosts = load_inventory(sys.argv[1], [], check_for_changes=False)
print(json.dumps({h.name: {"groups": sorted(g.name if hasattr(g, "name") else g
                                            for g in h.groups), "data": h.data.dict()}
                  for h in hosts}, default=str))
"""

RX7900XTX = {"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x744c",
             "class": "0x030000", "driver": None}  # fmt: skip
MI300X = [
    {"slot": f"0000:{bus:02x}:00.0", "vendor": "0x1002", "device": "0x74a1",
     "class": "0x120000", "driver": None}
    for bus in range(0x11, 0x19)
]  # fmt: skip

# host -> (os-release fixture, PCI GPUs): what each host's comment in its inventory says
HOSTS = {
    "fleet": {
        "ws01.lab.example.org": ("ubuntu-24.04", [RX7900XTX]),
        "ws02.lab.example.org": ("ubuntu-24.04", [RX7900XTX]),
        "ws03.lab.example.org": ("debian-12", [RX7900XTX]),
        "mi300x-01.dc.example.org": ("ubuntu-22.04", MI300X),
        "mi300x-02.dc.example.org": ("debian-13", MI300X),
    },
    "airgap": {
        "mirror01.site.example.org": ("ubuntu-24.04", []),
        "node01.site.example.org": ("ubuntu-24.04", [RX7900XTX]),
        "node02.site.example.org": ("ubuntu-24.04", [RX7900XTX]),
    },
}


def load(example: str) -> dict[str, dict]:
    result = subprocess.run(
        [sys.executable, "-c", LOAD, str(EXAMPLES / example / "inventory.py")],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def survey_of(example: str, name: str, data: dict) -> dict:
    """A freshly installed host of that distro with those GPUs, its rocm_users present."""
    os_name, pci = HOSTS[example][name]
    users = data.get("rocm_users") or []
    return fresh_survey(
        os_name,
        pci=copy.deepcopy(pci),
        groups={"groups": ["video", "render"], "users": {u: [u] for u in users}},
    )


@pytest.fixture(scope="module")
def fleet() -> dict[str, dict]:
    return load("fleet")


@pytest.fixture(scope="module")
def airgap() -> dict[str, dict]:
    return load("airgap")


def test_every_example_has_an_inventory_group_data_and_a_test():
    examples = {p.name for p in EXAMPLES.iterdir() if p.is_dir()}
    assert examples == set(HOSTS)
    for example in examples:
        assert (EXAMPLES / example / "inventory.py").is_file()
        assert (EXAMPLES / example / "group_data" / "all.py").is_file()
    readme = (EXAMPLES / "README.md").read_text()
    assert all(f"[`{example}/`]({example}/)" in readme for example in examples)


def test_the_fleet_takes_each_groups_settings_from_its_group_data(fleet):
    assert set(fleet) == set(HOSTS["fleet"])
    ws01, mi = fleet["ws01.lab.example.org"], fleet["mi300x-01.dc.example.org"]
    assert ws01["data"]["rocm_version"] == "6.4.3" and ws01["data"]["expected_gfx"] == "gfx1100"
    assert ws01["data"]["rocm_users"] == ["alice"]  # the host's own, over nothing in its group
    assert mi["data"]["rocm_version"] == "7.2.1" and mi["data"]["expected_gpu_count"] == 8
    assert mi["data"]["rocm_reboot"] == "allow" and "rocm_reboot" not in ws01["data"]
    assert ws01["data"]["_sudo"] is True and mi["data"]["ssh_user"] == "admin"  # all.py


@pytest.mark.parametrize("name", sorted(HOSTS["fleet"]))
def test_each_fleet_host_plans_a_whole_node_in_dry(fleet, name):
    data = fleet[name]["data"]
    planned = plan(data, SurveyHost(survey_of("fleet", name, data)))
    assert not planned.refused, planned.names
    # The whole checklist, on a fresh host: the repository, ROCm, groups, PyTorch, verify.
    for concern in ("ROCm apt repository", "ROCm packages", "GPU groups", "PyTorch", "Verify"):
        assert any(op.startswith(concern + " | ") for op in planned.changes), (concern, name)


def test_the_airgap_site_serves_everything_from_its_mirror(airgap):
    assert set(airgap) == set(HOSTS["airgap"])
    for host in airgap.values():
        assert host["data"]["rocm_mirror"] == "mirror01.site.example.org"
        assert host["data"]["rocm_mirror_bundle"] == "/srv/rocm-bundle"
    assert airgap["node01.site.example.org"]["data"]["expected_gfx"] == "gfx1100"
    assert airgap["mirror01.site.example.org"]["data"]["expected_gpu_count"] == 0


@pytest.mark.parametrize("name", sorted(HOSTS["airgap"]))
def test_before_the_bundle_exists_dry_refuses_each_airgap_host_saying_how_to_make_it(
    airgap, name, tmp_path, monkeypatch
):
    """No bundle at /srv/rocm-bundle on this machine: every host is refused in planning,
    nothing planned for it, and the reason names the command that makes the bundle."""
    assert not Path("/srv/rocm-bundle").exists()
    # plan() calls the planned host "node": the mirror's name follows it.
    renamed = {n: {**h["data"]} for n, h in airgap.items()}
    for host_data in renamed.values():
        if host_data["rocm_mirror"] == name:
            host_data["rocm_mirror"] = "node"
    others = {n: d for n, d in renamed.items() if n != name}
    planned = plan(renamed[name], SurveyHost(survey_of("airgap", name, renamed[name])), others)
    assert planned.refused, planned.names
    assert planned.changes == [], planned.changes
    reason = outcome(planned.state, "node").refused
    assert "/srv/rocm-bundle/manifest.json does not exist" in reason, reason
    assert "run `rocm-fleet bundle INVENTORY --output /srv/rocm-bundle`" in reason, reason
