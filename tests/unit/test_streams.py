"""The two streams, planned: the classic stream and the ROCm Core SDK on hosts the lab can't
build (Ubuntu 22.04, 24.04, 26.04) and on Debian, moves between them, the Core SDK's torch
runtime and driver key, planned through pyinfra's API against surveys (``unit.surveys``).
Nothing connects anywhere; the assertions read the planned operations, the scripts they run
and those scripts' arguments."""

from __future__ import annotations

import shlex

import pytest

from rocm_fleet.model import paths
from rocm_fleet.model.config import load_config
from unit import surveys
from unit.conftest import DRIVERLESS
from unit.surveys import SurveyHost, converged_survey, digest, fresh_survey, plan, script_call

RX7900 = {"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x744c", "class": "0x030000",
          "driver": None}  # fmt: skip
MI300X = {"slot": "0000:1b:00.0", "vendor": "0x1002", "device": "0x74a1", "class": "0x120000",
          "driver": None}  # fmt: skip
MI300X_8 = [
    {**MI300X, "slot": f"0000:{bus:02x}:00.0"}
    for bus in (0x1B, 0x3D, 0x4E, 0x5F, 0x9D, 0xBD, 0xCD, 0xDD)
]
IGPU = {"slot": "0000:76:00.0", "vendor": "0x1002", "device": "0x164e", "class": "0x030000",
        "driver": None}  # fmt: skip
CLASSIC_721 = {"rocm-core": "7.2.1.70201-81~24.04", "rocminfo": "1.0.0.70201-81~24.04",
               "rocm-hip-runtime": "7.2.1.70201-81~24.04"}  # fmt: skip
CORE_100 = {"amdrocm10.0-gfx1100": "10.0.0-4", "amdrocm-core10.0-gfx1100": "10.0.0-4",
            "amdrocm-base10.0": "10.0.0-4", "amdrocm-runtime10.0": "10.0.0-4"}  # fmt: skip


# A kernel each distro's minimum (matrix.MIN_KERNEL) allows: 26.04 ships 7.0.
KERNELS = {"ubuntu-26.04": "7.0.0-22-generic"}


def plan_for(os_name: str, data: dict, **survey):
    survey.setdefault("kernel", KERNELS.get(os_name, "6.12.38+deb13-amd64"))
    host = SurveyHost(fresh_survey(os_name, **survey))
    return plan(data, host), host


def args(planned, fragment: str) -> list[str]:
    """The arguments of the one script the operation runs."""
    (command,) = planned.find(fragment).commands
    return script_call(command)[1]


def written(planned, fragment: str) -> str:
    """The content a text_file operation writes."""
    return args(planned, fragment)[2]


@pytest.mark.parametrize(
    ("os_name", "version", "path", "line"),
    [
        ("ubuntu-22.04", "6.4.3", paths.ROCM_SOURCE,
         "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
         "https://repo.radeon.com/rocm/apt/6.4.3 jammy main\n"),
        ("ubuntu-24.04", "7.2.0", paths.ROCM_SOURCE,
         "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
         "https://repo.radeon.com/rocm/apt/7.2 noble main\n"),
        ("debian-12", "6.4.3", paths.ROCM_SOURCE,
         "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
         "https://repo.radeon.com/rocm/apt/6.4.3 jammy main\n"),
        ("debian-13", "7.14.1", paths.ROCM_SOURCE,
         "deb [arch=amd64 signed-by=/etc/apt/keyrings/amdrocm.gpg] "
         "https://repo.amd.com/rocm/packages-multi-arch/debian13 stable main\n"),
        ("ubuntu-26.04", "7.14.0", paths.ROCM_SOURCE,
         "deb [arch=amd64 signed-by=/etc/apt/keyrings/amdrocm.gpg] "
         "https://repo.amd.com/rocm/packages-multi-arch/ubuntu2604 stable main\n"),
        # AMD's 10.0 page, verbatim but for the distro directory.
        ("ubuntu-26.04", "10.0.0", paths.AMDROCM_SOURCE,
         "X-Repo-Id: amdrocm-stable\nTypes: deb\n"
         "URIs: https://stable.repo.amd.com/rocm/core/packages/ubuntu2604/\nSuites: stable\n"
         "Components: main\nArchitectures: amd64\nSigned-By: /etc/apt/keyrings/amdrocm.gpg\n"
         "Enabled: yes\n"),
        ("debian-12", "10.1.0", paths.AMDROCM_SOURCE,
         "X-Repo-Id: amdrocm-stable\nTypes: deb\n"
         "URIs: https://stable.repo.amd.com/rocm/core/packages/debian12/\nSuites: stable\n"
         "Components: main\nArchitectures: amd64\nSigned-By: /etc/apt/keyrings/amdrocm.gpg\n"
         "Enabled: yes\n"),
    ],
)  # fmt: skip
def test_source_per_distro_and_stream(os_name, version, path, line):
    planned, _ = plan_for(os_name, {"rocm_version": version, "pytorch_install": False})
    assert not planned.refused
    source_path, mode, content = args(planned, "Point apt at the ROCm release")
    assert (source_path, mode, content) == (path, "644", line)


@pytest.mark.parametrize(
    ("version", "pin_path", "origin", "keyring", "url", "fingerprint"),
    [
        ("7.2.1", paths.ROCM_PIN, "repo.radeon.com", paths.ROCM_KEYRING,
         "https://repo.radeon.com/rocm/rocm.gpg.key", "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"),
        ("7.14.0", paths.AMDROCM_PIN, "AMD ROCm", paths.AMDROCM_KEYRING,
         "https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg",
         "D0F004A0025A1145C7807FCD0701EAC4D5E02107"),
        ("10.0.0", paths.AMDROCM_PIN, "AMD ROCm", paths.AMDROCM_KEYRING,
         "https://stable.repo.amd.com/rocm/gpg/packages.gpg",
         "D0F004A0025A1145C7807FCD0701EAC4D5E02107"),
    ],
)  # fmt: skip
def test_each_stream_has_its_key_and_pin(version, pin_path, origin, keyring, url, fingerprint):
    planned, _ = plan_for("debian-13", {"rocm_version": version, "pytorch_install": False})
    assert args(planned, "Pin AMD's repository") == [
        pin_path, "644", f"Package: *\nPin: release o={origin}\nPin-Priority: 600\n"
    ]  # fmt: skip
    assert args(planned, "Install AMD's signing key") == [url, fingerprint, keyring]
    names = planned.names
    key = names.index(next(n for n in names if "signing key" in n))
    assert key < names.index(next(n for n in names if "Point apt at" in n))
    (fetch,) = planned.find("signing key").commands
    script = str(fetch)
    assert script.index("--list-keys") < script.index("--export")
    assert "apt-key" not in script and "trusted=yes" not in str(planned.ops)


@pytest.mark.parametrize(
    ("data", "pci", "packages"),
    [
        ({"expected_gfx": "gfx1100"}, [RX7900], ["amdrocm10.1-gfx1100"]),
        ({"expected_gfx": "gfx942", "expected_gpu_count": 8}, MI300X_8,
         ["amdrocm10.1-gfx942"]),
        ({}, [RX7900], ["amdrocm10.1"]),  # expected_gfx unset: every target
        ({"expected_gfx": "gfx1100"}, [IGPU, RX7900], ["amdrocm10.1"]),  # an unnamed iGPU
        ({"expected_gfx": "gfx1100", "rocm_packages": ["amdrocm-core-sdk10.1-gfx1100"]},
         [RX7900], ["amdrocm-core-sdk10.1-gfx1100"]),
    ],
)  # fmt: skip
def test_core_sdk_packages_per_target_when_expected_gfx_names_every_gpu(data, pci, packages):
    base = {"rocm_version": "10.1.0", "pytorch_install": False}
    planned, _ = plan_for("ubuntu-24.04", {**base, **data}, pci=pci)
    regex, *items = args(planned, "Install the ROCm packages")
    assert regex == "^10[.]1[.]0-"
    assert items == [f"want:{name}" for name in packages]


def test_ubuntu_26_04_is_refused_for_the_classic_stream_with_the_releases_that_serve_it():
    planned, _ = plan_for("ubuntu-26.04", {"rocm_version": "7.2.4"}, kernel="7.0.0-22-generic")
    assert planned.refused and planned.ops == []


@pytest.mark.parametrize(
    ("os_name", "version", "reason"),
    [
        ("ubuntu-26.04", "7.2.4", "ROCm 7.2.4 (ROCm (repo.radeon.com)) publishes no packages for "
         "ubuntu 26.04; ubuntu 26.04 packages come with ROCm Core SDK 7.14.0 and newer"),
        ("ubuntu-24.04", "6.1.2", "ubuntu 24.04 packages come with ROCm (repo.radeon.com) 6.2.0 "
         "and newer, ROCm Core SDK 7.14.0 and newer"),
        ("debian-11", "6.4.3", "debian 11 is not supported"),
    ],
)  # fmt: skip
def test_unpublished_pairings_name_the_releases_that_publish(os_name, version, reason):
    from rocm_fleet.model.findings import findings

    config = load_config({"rocm_version": version, "pytorch_install": False})
    result = findings(config, fresh_survey(os_name, kernel="7.0.0-22-generic"))
    assert any(reason in problem for problem in result.problems), result.problems


def test_ubuntu_26_04_takes_the_core_sdk_and_its_kernel_minimum():
    data = {"rocm_version": "10.1.0", "pytorch_install": False, "expected_gfx": "gfx1100"}
    planned, _ = plan_for("ubuntu-26.04", data, pci=[RX7900], kernel="7.0.0-22-generic")
    assert not planned.refused
    from rocm_fleet.model.findings import findings

    old = findings(load_config(data), fresh_survey("ubuntu-26.04", kernel="6.17.0-5-generic"))
    assert any("older than 7.0, the one AMD lists for ubuntu 26.04" in p for p in old.problems)


def test_radeon_on_debian_is_allowed_with_a_warning_in_both_streams():
    from rocm_fleet.model.findings import findings

    for version, whom in (
        ("7.2.1", "Instinct"),
        ("10.1.0", "Instinct MI355X, MI350X, MI350P, MI325X, MI300X (gfx950, gfx942)"),
    ):
        config = load_config({"rocm_version": version, "expected_gfx": "gfx1100",
                              "pytorch_install": False})  # fmt: skip
        result = findings(config, fresh_survey("debian-13", pci=[RX7900]))
        assert result.problems == []
        assert f"AMD lists debian 13 for {whom} only; gfx1100 on it is unofficial" in (
            result.warnings
        )


@pytest.mark.parametrize(
    ("distro", "gfx", "pci", "warned"),
    [("debian-13", "gfx942", MI300X, False), ("debian-12", "gfx90a", None, False),
     ("debian-13", "gfx90a", None, True), ("debian-12", "gfx908", None, True)],
)  # fmt: skip
def test_core_sdk_debian_support_is_per_instinct_model(distro, gfx, pci, warned):
    """os-support.yaml: Debian 13 lists MI35x, MI325X, MI300X; Debian 12 also MI300A, MI250X,
    MI250; neither lists MI210 or MI100 (gfx908)."""
    from rocm_fleet.model.findings import findings

    config = load_config({"rocm_version": "10.0.0", "expected_gfx": gfx,
                          "pytorch_install": False})  # fmt: skip
    result = findings(config, fresh_survey(distro, pci=[pci] if pci else []))
    text = [w for w in result.warnings if f"{gfx} on it is unofficial" in w]
    assert bool(text) is warned, result.warnings


# --- moving between streams ---------------------------------------------------------------


def test_classic_to_core_sdk_purges_the_classic_stream_first_and_announces_it():
    from rocm_fleet.model.findings import findings

    data = {"rocm_version": "10.0.0", "expected_gfx": "gfx1100", "pytorch_install": False}
    installed = {**CLASSIC_721, "curl": "7.88.1-10+deb12u14", "amdgpu-dkms": "1:6.12.12.70201-1"}
    keyrings = {paths.ROCM_KEYRING: ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"]}
    survey = {"packages": installed, "pci": [RX7900], "keyrings": keyrings,
              "files": {paths.ROCM_SOURCE: digest("deb ... rocm/apt/7.2.1 noble main\n"),
                        paths.ROCM_PIN: digest("Package: *\n")}}  # fmt: skip
    planned, _ = plan_for("debian-13", data, **survey)
    regex, *items = args(planned, "Install the ROCm packages")
    assert regex == "^10[.]0[.]0-"
    assert items == [
        "foreign:rocm-core",
        "foreign:rocm-hip-runtime",
        "foreign:rocminfo",
        "want:amdrocm10.0-gfx1100",
    ]  # fmt: skip (the driver and Debian's packages stay)
    changes = planned.changes
    for gone in (paths.ROCM_SOURCE, paths.ROCM_PIN, paths.ROCM_KEYRING):
        assert any(name.endswith(gone) for name in changes), (gone, changes)
    result = findings(load_config(data), fresh_survey("debian-13", **survey))
    assert any(
        w.startswith("moving from ROCm (repo.radeon.com) (rocm-core 7.2.1.70201-81~24.04")
        and "to ROCm Core SDK 10.0.0" in w
        for w in result.warnings
    ), result.warnings


def test_core_sdk_to_classic_purges_the_core_sdk_first():
    data = {"rocm_version": "7.2.1", "expected_gfx": "gfx1100", "pytorch_install": False}
    survey = {"packages": CORE_100, "pci": [RX7900],
              "keyrings": {paths.AMDROCM_KEYRING: ["D0F004A0025A1145C7807FCD0701EAC4D5E02107"]},
              "files": {paths.AMDROCM_SOURCE: digest("Types: deb\n"),
                        paths.AMDROCM_PIN: digest("Package: *\n")}}  # fmt: skip
    planned, _ = plan_for("debian-13", data, **survey)
    regex, *items = args(planned, "Install the ROCm packages")
    assert regex == "[.]70201-"
    assert items[:4] == [f"foreign:{name}" for name in sorted(CORE_100)]
    assert items[4:] == ["want:rocm-hip-runtime"]
    for gone in (paths.AMDROCM_SOURCE, paths.AMDROCM_PIN, paths.AMDROCM_KEYRING):
        assert any(name.endswith(gone) for name in planned.changes), gone


def test_a_release_move_within_the_core_sdk_moves_its_packages():
    data = {"rocm_version": "10.1.0", "expected_gfx": "gfx1100", "pytorch_install": False}
    planned, _ = plan_for("debian-13", data, packages=CORE_100, pci=[RX7900])
    _, *items = args(planned, "Install the ROCm packages")
    assert items == ["want:amdrocm10.1-gfx1100"] + [f"stale:{n}" for n in sorted(CORE_100)]


# --- PyTorch ------------------------------------------------------------------------------


def pip_words(planned) -> list[list[str]]:
    """Each pip command's words; an install's hash-locked lines (piped into it, sorted;
    unit.locks stands in for the controller's lock) come last, without their hashes."""
    commands = []
    for command in planned.find("Install the torch wheels").commands:
        found = surveys.unchecked(shlex.split(str(command)))
        if found[0] == "printf":
            bar = found.index("|")
            locked = [line.split(" --hash=sha256:")[0] for line in found[2:bar]]
            found = found[bar + 1 :] + locked
        commands.append(found)
    return commands


def test_core_sdk_torch_brings_its_pip_runtime_from_the_same_index():
    planned, _ = plan_for("debian-13", {"rocm_version": "7.14.1", "expected_gfx": "gfx1100"})
    (install,) = pip_words(planned)
    assert install[install.index("--index-url") + 1] == "https://download.pytorch.org/whl/rocm7.14"
    assert "--require-hashes" in install
    assert install[-3:] == [
        "rocm[device-all,libraries]==7.14.*", "torch==2.14.1+rocm7.14",
        "torchvision==0.29.1+rocm7.14",
    ]  # fmt: skip


def test_moving_back_to_a_bundling_index_uninstalls_the_runtime_and_old_companions():
    venv = {"torch": "2.14.1+rocm7.14", "torchvision": "0.29.1+rocm7.14",
            "rocm": "7.14.0.post1", "rocm_sdk_core": "7.14.0", "rocm_sdk_device_gfx1100": "7.14.0",
            "numpy": "2.3.5", "pip": "25.1"}  # fmt: skip
    data = {"rocm_version": "7.2.1", "expected_gfx": "gfx1100", "torch_version": "2.11.0"}
    planned, _ = plan_for(
        "debian-13", data, venv=venv, files={"/opt/rocm-fleet/venv/pyvenv.cfg": digest("home\n")}
    )
    install, uninstall = pip_words(planned)
    assert install[-3:] == [
        "torch==2.11.0+rocm7.2", "torchaudio==2.11.0+rocm7.2", "torchvision==0.26.0+rocm7.2"
    ]  # fmt: skip
    assert uninstall[3:5] == ["uninstall", "--yes"]
    assert uninstall[-3:] == ["rocm", "rocm-sdk-core", "rocm-sdk-device-gfx1100"]


def test_a_torchaudio_the_build_no_longer_has_is_uninstalled():
    venv = {"torch": "2.11.0+rocm7.2", "torchvision": "0.26.0+rocm7.2",
            "torchaudio": "2.11.0+rocm7.2"}  # fmt: skip
    planned, _ = plan_for(
        "debian-13",
        {"rocm_version": "7.2.1"},
        venv=venv,
        files={"/opt/rocm-fleet/venv/pyvenv.cfg": digest("home\n")},
    )
    install, uninstall = pip_words(planned)
    assert "torch==2.14.1+rocm7.2" in install and uninstall[-1] == "torchaudio"


def test_10x_gets_torch_from_amds_index_where_pytorch_has_none():
    torch = load_config({"rocm_version": "10.1.0"}, "n").torch
    assert torch.index_url == "https://stable.repo.amd.com/rocm/whl-next/"
    assert torch.requirements()[0] == "torch[device-all]==2.14.0+rocm10.1.0"
    assert torch.requirements()[-1] == "rocm[libraries]==10.1.0"


# --- the driver -----------------------------------------------------------------------------


def test_dkms_under_the_core_sdk_installs_repo_radeon_com_key_for_the_driver_alone():
    data = {"rocm_version": "10.0.0", "pytorch_install": False, "rocm_driver": "dkms",
            "expected_gfx": "gfx1100"}  # fmt: skip
    planned, _ = plan_for("ubuntu-24.04", data, pci=[RX7900], kernel="6.8.0-50-generic")
    assert args(planned, "signing key for the driver") == [
        "https://repo.radeon.com/rocm/rocm.gpg.key", "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C",
        paths.ROCM_KEYRING,
    ]  # fmt: skip
    assert written(planned, "amdgpu driver repository") == (
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] "
        "https://repo.radeon.com/amdgpu/31.50/ubuntu noble main\n"
    )
    assert not any("Remove the other ROCm stream's keyring" in n for n in planned.changes)
    assert not any(paths.ROCM_KEYRING in n and "Remove" in n for n in planned.names)


def test_dkms_under_the_classic_stream_shares_the_rocm_keyring():
    data = {"rocm_version": "7.2.4", "pytorch_install": False, "rocm_driver": "dkms",
            "expected_gfx": "gfx1100"}  # fmt: skip
    planned, _ = plan_for("ubuntu-24.04", data, pci=[RX7900], kernel="6.8.0-50-generic")
    assert not any("for the driver" in name for name in planned.names)
    assert "amdgpu/30.30.4/ubuntu noble main" in written(planned, "amdgpu driver repository")


def test_dkms_is_refused_for_a_release_whose_driver_the_matrix_does_not_know(
    upstream_publishes_site_rows,
):
    data = {**DRIVERLESS, "pytorch_install": False, "rocm_driver": "dkms",
            "expected_gfx": "gfx1100"}  # fmt: skip
    planned, _ = plan_for("ubuntu-24.04", data, pci=[RX7900], kernel="6.8.0-50-generic")
    assert planned.refused and planned.beyond_preflight == []
    assert "which amdgpu driver ROCm 10.9.0 ships" in planned.reason


# --- a converged Core SDK host --------------------------------------------------------------


@pytest.mark.parametrize(
    ("os_name", "data"),
    [
        ("debian-13", {"rocm_version": "7.14.1", "expected_gfx": "gfx1100",
                       "expected_gpu_count": 1, "rocm_users": ["alice"]}),
        ("ubuntu-26.04", {"rocm_version": "10.1.0", "expected_gfx": "gfx1100",
                          "pytorch_install": False}),
    ],
)  # fmt: skip
def test_a_converged_core_sdk_host_plans_no_change_from_one_survey(os_name, data):
    survey = converged_survey(data, os_name, pci=[RX7900])
    assert survey.rocm_version.startswith(data["rocm_version"] + "-")
    host = SurveyHost(survey)
    planned = plan(data, host)
    assert not planned.refused
    assert planned.changes == [], planned.changes
    assert host.extra_reads == []


# --- a desired state is the whole state: the card swap ----------------------------------------

RX9070XT = {"slot": "0000:03:00.0", "vendor": "0x1002", "device": "0x7550", "class": "0x030000",
            "driver": None}  # fmt: skip
GFX1100 = {"rocm_version": "7.14.1", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
           "rocm_users": ["alice"]}  # fmt: skip


def swapped_survey():
    """A gfx1100 Core SDK host whose card became an RX 9070 XT (gfx1201), as a deploy that
    only adds leaves it: the new target's packages beside the old one's."""
    survey = converged_survey({**GFX1100, "expected_gfx": "gfx1201"}, "debian-13", pci=[RX9070XT])
    version = survey.packages["amdrocm7.14-gfx1201"]
    survey.packages["amdrocm7.14-gfx1100"] = version
    survey.packages["amdrocm-core7.14-gfx1100"] = version  # what the per-target one pulls in
    return survey


def test_the_card_swap_purges_the_old_targets_packages_on_the_same_run():
    data = {**GFX1100, "expected_gfx": "gfx1201"}
    planned = plan(data, SurveyHost(swapped_survey()))
    assert not planned.refused
    _, *items = args(planned, "Install the ROCm packages")
    assert items == [
        "drop:amdrocm-core7.14-gfx1100",
        "drop:amdrocm7.14-gfx1100",
    ]


@pytest.mark.parametrize(
    ("installed", "packages", "dropped"),
    [
        # per-target to the every-target package: nothing goes (it depends on every target)
        (["amdrocm7.14-gfx1100"], ["amdrocm7.14"], []),
        # every-target to per-target: the meta and the other targets go
        (["amdrocm7.14", "amdrocm7.14-gfx1100", "amdrocm-core7.14-gfx1100",
          "amdrocm7.14-gfx942", "amdrocm-core7.14", "amdrocm-base7.14"],
         ["amdrocm7.14-gfx1100"], ["amdrocm7.14", "amdrocm7.14-gfx942"]),
        # two targets kept, one dropped; shared packages never
        (["amdrocm7.14-gfx1100", "amdrocm7.14-gfx942", "amdrocm7.14-gfx90a", "amdrocm-core7.14"],
         ["amdrocm7.14-gfx942", "amdrocm7.14-gfx90a"], ["amdrocm7.14-gfx1100"]),
        # rocm_packages naming no target: nothing is a target's
        (["amdrocm7.14-gfx1100"], ["amdrocm-hpc7.14"], []),
    ],
)  # fmt: skip
def test_only_packages_of_targets_no_longer_wanted_are_dropped(installed, packages, dropped):
    from rocm_fleet.model.matrix import release

    rel = release("7.14.1")
    assert rel.stream.unwanted_targets(rel, packages, installed) == dropped


def test_a_classic_release_has_no_target_packages_to_drop():
    from rocm_fleet.model.matrix import release

    rel = release("6.4.3")
    assert rel.stream.unwanted_targets(rel, ["rocm-hip-runtime"], ["rocm", "rocm-core"]) == []


def test_the_audit_flags_the_old_targets_packages_until_they_go():
    from rocm_fleet.audit.rows import drift_by_concern
    from rocm_fleet.engine.host_plans import planned_operations

    data = {**GFX1100, "expected_gfx": "gfx1201"}
    planned = plan(data, SurveyHost(swapped_survey()))
    host = planned.state.inventory.get_host("node")
    drift = drift_by_concern(planned_operations(planned.state, host))
    assert drift["ROCm packages"] == ["Install the ROCm packages of the release"]
    # and once they went: no drift
    converged = converged_survey(data, "debian-13", pci=[RX9070XT])
    planned = plan(data, SurveyHost(converged))
    assert planned.changes == []


def test_moving_from_amds_10x_torch_to_a_pytorch_index_uninstalls_its_device_wheels():
    venv = {"torch": "2.13.0+rocm10.0.0", "torchvision": "0.28.0+rocm10.0.0",
            "torchaudio": "2.11.0.2+rocm10.0.0", "amd_torch_device_gfx1100": "2.13.0+rocm10.0.0",
            "rocm": "10.0.0", "rocm_sdk_core": "10.0.0", "pip": "25.1"}  # fmt: skip
    data = {"rocm_version": "7.14.1", "expected_gfx": "gfx1100"}
    planned, _ = plan_for(
        "debian-13", data, venv=venv, files={"/opt/rocm-fleet/venv/pyvenv.cfg": digest("home\n")}
    )
    install, uninstall = pip_words(planned)
    assert "rocm[device-all,libraries]==7.14.*" in install
    assert uninstall[-2:] == ["amd-torch-device-gfx1100", "torchaudio"]


def test_a_converged_amd_10x_venv_uninstalls_nothing():
    venv = {"torch": "2.13.0+rocm10.0.0", "torchvision": "0.28.0+rocm10.0.0",
            "torchaudio": "2.11.0.2+rocm10.0.0", "amd_torch_device_gfx1100": "2.13.0+rocm10.0.0",
            "rocm": "10.0.0", "rocm_sdk_core": "10.0.0", "pip": "25.1"}  # fmt: skip
    data = {"rocm_version": "10.0.0", "expected_gfx": "gfx1100"}
    planned, _ = plan_for(
        "debian-13", data, venv=venv, files={"/opt/rocm-fleet/venv/pyvenv.cfg": digest("home\n")}
    )
    assert planned.find("Install the torch wheels").commands == []
