"""Torch for the ROCm Core SDK 10.x from AMD's own multi-arch index (issue 16 item 3): the
release row names the index, the requirements carry the [device-*] extras, the deploy
installs and then leaves a converged host alone, the node check accepts AMD's builds."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from rocm_fleet.model import matrix
from rocm_fleet.model.config import load_config
from rocm_fleet.model.decisions import torch_install
from rocm_fleet.model.sources import torch_wheels
from unit.surveys import SurveyHost, converged_survey, fresh_survey, plan

AMD = "https://repo.amd.com/rocm/whl-multi-arch/"
DATA = {"rocm_version": "10.1.0", "expected_gfx": "gfx1100", "rocm_users": ["alice"]}


def test_10x_rows_name_amds_index_and_the_recorded_series():
    for version in ("10.0.0", "10.1.0"):
        rel = matrix.release(version)
        assert rel.torch_index is None and rel.amd_wheels is matrix.AMD_MULTI_ARCH_WHEELS
        assert rel.amd_wheels.url == AMD
        assert [b.torch for b in rel.torch_builds] == ["2.11", "2.12", "2.13", "2.14"]
    # the other releases keep PyTorch's own indexes
    assert matrix.release("7.14.1").amd_wheels is None


def test_requirements_carry_device_extras_and_pin_the_runtime_to_the_release():
    torch = load_config(DATA).torch
    assert torch.index_url == AMD and torch.wanted == ()
    assert torch.requirements() == [
        "torch[device-gfx1100]==2.14.*",
        "torchvision[device-gfx1100]==0.29.*",
        "torchaudio==2.11.*",
        "rocm[device-gfx1100,libraries]==10.1.0.*",
    ]
    for line in torch.requirements():
        assert str(Requirement(line)) == line  # what pip parses
    assert torch.runtime_from_pip


def test_several_targets_are_several_extras_and_none_is_device_all():
    rel = matrix.release("10.0.0")
    build = rel.torch_builds[-1]
    two = torch_install(rel, build, "", ["gfx942", "gfx90a"]).requirements()
    assert two[0] == "torch[device-gfx90a,device-gfx942]==2.14.*"
    none = torch_install(rel, build, "", []).requirements()
    assert none[0] == "torch[device-all]==2.14.*"
    assert none[-1] == "rocm[device-all,libraries]==10.0.0.*"


def test_torch_version_picks_a_recorded_series():
    torch = load_config({**DATA, "torch_version": "2.12"}).torch
    assert torch.requirements()[:3] == [
        "torch[device-gfx1100]==2.12.*", "torchvision[device-gfx1100]==0.27.*", "torchaudio==2.11.*"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("2.14.0+rocm10.1.0", True),
        ("2.14.1+rocm10.1.0.git1234abcd", True),  # AMD's git-tagged labels (7.2 manylinux)
        ("2.13.0+rocm10.1.0", False),  # another series
        ("2.14.0", False),  # PyPI's CUDA build
        ("2.14.0+cu128", False),
        ("junk", False),
    ],
)
def test_the_node_check_accepts_amds_build_strings(version, ok):
    assert load_config(DATA).torch.accepts("torch", version) is ok


def test_pytorch_index_builds_still_match_exactly():
    torch = load_config({**DATA, "rocm_version": "7.2.1"}).torch
    assert torch.accepts("torch", "2.14.1+rocm7.2")
    assert not torch.accepts("torch", "2.14.1+rocm7.2.0")


def test_the_deploy_installs_from_amds_index_alone():
    planned = plan(DATA, SurveyHost(fresh_survey("ubuntu-24.04")))
    assert not planned.refused
    (pip,) = planned.find("Install the torch wheels").commands
    assert str(pip) == (
        "/opt/rocm-fleet/venv/bin/python -m pip install --no-input --disable-pip-version-check "
        f"--no-cache-dir --index-url {AMD} 'torch[device-gfx1100]==2.14.*' "
        "'torchvision[device-gfx1100]==0.29.*' 'torchaudio==2.11.*' "
        "'rocm[device-gfx1100,libraries]==10.1.0.*'"
    )
    assert "--extra-index-url" not in str(pip)  # the record names no second index


def test_a_converged_10x_host_reads_nothing_beyond_the_survey():
    survey = converged_survey(DATA, "ubuntu-24.04")
    assert survey["venv"]["torch"] == "2.14.0+rocm10.1.0"
    assert survey["venv"]["rocm"] == "10.1.0.post1"
    host = SurveyHost(survey)
    planned = plan(DATA, host)
    assert not planned.refused
    assert planned.changes == []
    assert host.extra_reads == []


def test_the_bundle_needs_amds_index():
    config = load_config(DATA)
    need = torch_wheels(config)
    assert need.index_url == AMD and need.requirements() == config.torch.requirements()


def test_a_bundle_resolves_amds_index_with_the_device_extras(tmp_path):
    """``rocm-fleet bundle``'s resolver over the double of AMD's multi-arch index (the lab's,
    built from the recorded facts) on a loopback server: the [device-gfx1100] extras bring
    that target's wheels only, every wheel pinned with its hash for the host's pip."""
    from lab import amd_wheels
    from rocm_fleet.model.matrix import DISTROS, HOST_RUNTIMES
    from rocm_fleet.model.sources import HostNeeds, WheelNeed
    from rocm_fleet.offline.bundle import Plan, locked_requirements, make_bundle, missing
    from rocm_fleet.offline.download import Fetcher
    from unit.loopback import serve
    from unit.test_bundle import Quiet

    www = tmp_path / "www"
    amd_wheels.build(www, [matrix.release("10.0.0")])
    torch = load_config({**DATA, "rocm_version": "10.0.0"}).torch
    bookworm = next(d for d in DISTROS if d.key == "debian 12")
    with serve(www) as served:
        url = f"{served.url}/{amd_wheels.PATH}/"
        need = WheelNeed(url, HOST_RUNTIMES[bookworm.key], torch.wanted, torch.requires)
        plan = Plan()
        plan.add("n", HostNeeds(wheels=(need,)), {})
        out = tmp_path / "bundle"
        manifest = make_bundle(plan, out, Fetcher(progress=Quiet()))
    (wheel_set,) = manifest["wheel_sets"]
    pins = {name: pin["version"] for name, pin in wheel_set["pins"].items()}
    assert pins == {
        "torch": "2.14.0+rocm10.0.0", "torchvision": "0.29.0+rocm10.0.0",
        "torchaudio": "2.11.0+rocm10.0.0", "amd-torch-device-gfx1100": "2.14.0+rocm10.0.0",
        "rocm": "10.0.0.post1", "rocm-sdk-core": "10.0.0", "rocm-sdk-libraries": "10.0.0",
        "rocm-sdk-device-gfx1100": "10.0.0",
    }  # fmt: skip
    assert missing(str(out), HostNeeds(wheels=(need,))) == []
    locked = locked_requirements(str(out), need)
    assert "torch==2.14.0+rocm10.0.0 --hash=sha256:" in " ".join(locked)
