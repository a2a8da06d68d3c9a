"""Torch for the ROCm Core SDK 10.x from AMD's own stable index (issue 16 item 3): the release
row names https://stable.repo.amd.com/rocm/whl-next/ and the exact builds of AMD's install
page, the requirements carry the [device-*] extras, the deploy installs and then leaves a
converged host alone, a change of target removes the old target's device wheels, and the
node check accepts exactly the pinned build."""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from rocm_fleet.model import matrix, torch_builds
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.decisions import owned_wheels, torch_install
from rocm_fleet.model.sources import torch_wheels
from unit.surveys import SurveyHost, converged_survey, fresh_survey, plan

AMD = "https://stable.repo.amd.com/rocm/whl-next/"
DATA = {"rocm_version": "10.1.0", "expected_gfx": "gfx1100", "rocm_users": ["alice"]}


def test_10x_rows_name_amds_stable_index_and_the_builds_of_its_page():
    ten = matrix.release("10.0.0")
    assert ten.torch_index is None and ten.amd_wheels is torch_builds.AMD_WHEELS["10.0.0"]
    assert ten.amd_wheels.url == AMD and ten.amd_wheels.label == "rocm10.0.0"
    assert [(b.torch, b.torchvision, b.torchaudio) for b in ten.torch_builds] == [
        ("2.11.0", "0.26.0", "2.11.0"), ("2.12.0", "0.27.0", "2.11.0"),
        ("2.13.0", "0.28.0", "2.11.0.2"),
    ]  # fmt: skip
    one = matrix.release("10.1.0")
    assert [b.torch for b in one.torch_builds] == ["2.12.0", "2.13.0", "2.14.0"]
    assert one.torch_builds[-1].torchvision == "0.29.0a0"  # AMD's pin, a pre-release
    assert "gfx908" in ten.amd_wheels.targets and "gfx908" not in one.amd_wheels.targets
    assert one.torch_runtime == "rocm[libraries]==10.1.0"
    # the other releases keep PyTorch's own indexes
    assert matrix.release("7.14.1").amd_wheels is None


def test_requirements_carry_device_extras_on_torch_and_torchvision_and_the_runtime():
    torch = load_config(DATA).torch
    assert torch.index_url == AMD
    assert torch.requirements() == [
        "torch[device-gfx1100]==2.14.0+rocm10.1.0",
        "torchaudio==2.11.0.3+rocm10.1.0",
        "torchvision[device-gfx1100]==0.29.0a0+rocm10.1.0",
        "rocm[libraries]==10.1.0",
    ]
    for line in torch.requirements():
        assert str(Requirement(line)) == line  # what pip parses
    assert torch.runtime_from_pip


def test_several_targets_are_several_extras_and_none_is_device_all():
    rel = matrix.release("10.0.0")
    build = rel.torch_builds[-1]
    two = torch_install(rel, build, "", ["gfx942", "gfx90a"]).requirements()
    assert two[0] == "torch[device-gfx90a,device-gfx942]==2.13.0+rocm10.0.0"
    none = torch_install(rel, build, "", []).requirements()
    assert none[0] == "torch[device-all]==2.13.0+rocm10.0.0"
    assert none[-1] == "rocm[libraries]==10.0.0"


def test_torch_version_picks_a_build_of_the_page():
    torch = load_config({**DATA, "torch_version": "2.12.0"}).torch
    assert torch.requirements()[:3] == [
        "torch[device-gfx1100]==2.12.0+rocm10.1.0", "torchaudio==2.11.0+rocm10.1.0",
        "torchvision[device-gfx1100]==0.27.0+rocm10.1.0",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match=r"did you mean '2.13.0'\?"):
        load_config({**DATA, "torch_version": "2.13"})


def test_gfx1150_gets_the_one_build_amds_linux_page_offers_it():
    """AMD's 10.x pages print torch 2.12.0 for gfx1150 on Linux under every selector."""
    apu = {**DATA, "expected_gfx": "gfx1150"}
    assert load_config(apu).torch.build.torch == "2.12.0"
    with pytest.raises(ConfigError, match=r"for expected_gfx 'gfx1150' \(AMD's Linux page\)"):
        load_config({**apu, "torch_version": "2.14.0"})
    # a host with gfx1150 beside another target gets what both are offered
    both = load_config({**DATA, "expected_gfx": ["gfx1100", "gfx1150"]}).torch
    assert both.requirements()[0] == "torch[device-gfx1100,device-gfx1150]==2.12.0+rocm10.1.0"


@pytest.mark.parametrize("gfx", ["gfx1151", "gfx1152", "gfx1103"])  # gfx1153: not in the matrix
def test_apus_take_a_device_extra_on_the_stable_index_not_a_per_target_index(gfx):
    """AMD's per-target indexes (repo.amd.com/rocm/whl/<family>/) were the 7.13 route; its
    10.x pages select Ryzen APUs by a device extra on the one stable index, like any GPU."""
    torch = load_config({**DATA, "expected_gfx": gfx}).torch
    assert torch.index_url == AMD
    assert torch.requirements()[0] == f"torch[device-{gfx}]==2.14.0+rocm10.1.0"


def test_a_target_without_a_device_extra_is_refused_before_anything():
    with pytest.raises(ConfigError) as err:
        load_config({**DATA, "expected_gfx": "gfx908"})
    assert err.value.key == "expected_gfx"
    assert "gfx908 has none on AMD's install page" in str(err.value)
    assert "pytorch_install: False" in str(err.value)
    # 10.0.0's page still has gfx908
    assert load_config({**DATA, "rocm_version": "10.0.0", "expected_gfx": "gfx908"}).torch


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("2.14.0+rocm10.1.0", True),
        ("2.14.0+rocm10.1.0.git1234abcd", False),  # not the label AMD's page pins
        ("2.13.0+rocm10.1.0", False),  # another build
        ("2.14.0", False),  # PyPI's CUDA build
        ("2.14.0+cu128", False),
        (None, False),
    ],
)
def test_the_node_check_accepts_exactly_the_pinned_build(version, ok):
    assert load_config(DATA).torch.accepts("torch", version) is ok


def test_the_deploy_installs_from_amds_index_alone(upstream_locks):
    planned = plan(DATA, SurveyHost(fresh_survey("ubuntu-24.04")))
    assert not planned.refused
    (pip,) = planned.find("Install the torch wheels").commands
    # The controller locks the set AMD's page gives (the extras select the target) against
    # AMD's index, and the host installs the lock's lines alone, hash-pinned, from it.
    (request,) = upstream_locks.requests
    assert request.index_url == AMD
    assert sorted(request.requirements) == [
        "rocm[libraries]==10.1.0",
        "torch[device-gfx1100]==2.14.0+rocm10.1.0",
        "torchaudio==2.11.0.3+rocm10.1.0",
        "torchvision[device-gfx1100]==0.29.0a0+rocm10.1.0",
    ]
    assert str(pip).endswith(
        "/opt/rocm-fleet/venv/bin/python -m pip install --no-input --disable-pip-version-check "
        f"--no-cache-dir --require-hashes --only-binary=:all: --index-url {AMD} -r /dev/stdin"
    )
    assert "'torch[device-gfx1100]==2.14.0+rocm10.1.0 --hash=sha256:" in str(pip)
    assert "--extra-index-url" not in str(pip)  # AMD's commands name no second index


def test_a_converged_10x_host_reads_nothing_beyond_the_survey():
    survey = converged_survey(DATA, "ubuntu-24.04")
    assert survey.venv["torch"] == "2.14.0+rocm10.1.0"
    assert survey.venv["rocm"] == "10.1.0"
    host = SurveyHost(survey)
    planned = plan(DATA, host)
    assert not planned.refused
    assert planned.changes == []
    assert host.extra_reads == []


def test_the_device_wheels_of_a_former_target_go():
    """The host's card was a gfx942 and is now a gfx1100: the gfx942 device wheels go, the
    gfx1100 ones stay."""
    survey = converged_survey(DATA, "ubuntu-24.04")
    survey.venv.update({
        "amd-torch-device-gfx942": "2.14.0+rocm10.1.0",
        "amd-torchvision-device-gfx942": "0.29.0a0+rocm10.1.0",
        "rocm-sdk-device-gfx942": "10.1.0",
        "amd-torch-device-gfx1100": "2.14.0+rocm10.1.0", "rocm-sdk-device-gfx1100": "10.1.0",
    })  # fmt: skip
    planned = plan(DATA, SurveyHost(survey))
    commands = [str(c) for c in planned.find("Install the torch wheels").commands]
    # the torch pins are met already: only the uninstall of the old target's wheels
    assert len(commands) == 1 and "pip uninstall" in commands[0]
    assert commands[0].endswith(
        "amd-torch-device-gfx942 amd-torchvision-device-gfx942 rocm-sdk-device-gfx942"
    )


def test_device_wheels_are_owned_except_the_targets_installed():
    def owned(data):
        return owned_wheels(load_config({**DATA, **data}).torch)

    two = owned({"expected_gfx": ["gfx942", "gfx1100"]})
    assert two[1] == r"amd-torch(?:vision)?-device-(?!(?:gfx1100|gfx942)$).+"
    assert two[2] == r"rocm-sdk-device-(?!(?:gfx1100|gfx942)$).+"
    assert owned({"expected_gfx": None}) == ["torch|torchvision|torchaudio"]  # device-all
    # back to a PyTorch index: every AMD device wheel is stale, the runtime too (classic)
    classic = owned({"rocm_version": "7.2.1", "expected_gfx": "gfx1100"})
    assert r"amd-torch(?:vision)?-device-.+" in classic and "^rocm(-sdk-.+)?$" in classic


def test_the_bundle_needs_amds_index_with_the_extras():
    config = load_config(DATA)
    need = torch_wheels(config)
    assert need.index_url == AMD and need.requirements() == config.torch.requirements()
