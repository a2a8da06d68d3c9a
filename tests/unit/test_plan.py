"""Plan-level tests: what the deploy would do on hosts the lab can't build (Ubuntu), and on
hosts preflight refuses or that are already converged.

The deploy is planned through pyinfra's API (``unit.surveys.plan``) for one host whose only
source of facts is preflight's survey: ``fresh_survey`` (a freshly installed machine) or
``converged_survey`` (the same machine after the deploy ran). Nothing connects anywhere;
the assertions read the planned operations and their commands.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
from pyinfra.api.exceptions import PyinfraError
from pyinfra.facts.server import Which

from rocm_fleet.assets import text
from rocm_fleet.facts.round_trip import Survey
from rocm_fleet.model import paths
from rocm_fleet.model.config import ConfigError
from rocm_fleet.model.matrix import HOST_RUNTIMES, release
from rocm_fleet.model.streams import CLASSIC, CLASSIC_REPOSITORY
from unit.locks import lock_hash
from unit.surveys import (
    SurveyHost,
    changed,
    checked,
    converged_survey,
    digest,
    fresh_survey,
    plan,
    script_call,
)

ALICE = {"groups": ["video"], "users": {"alice": ["alice", "video"]}}


def fresh(os_name: str, data: dict, **survey):
    return plan(data, SurveyHost(fresh_survey(os_name, **{"groups": ALICE, **survey})))


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
def test_source_line_pin_packages_and_groups_per_distro(os_name, version, line):
    planned = fresh(os_name, {"rocm_version": version, "rocm_users": ["alice"]})
    assert not planned.refused
    (source,) = planned.find("Point apt at the ROCm release").commands
    assert script_call(source) == (
        "text-file",
        [
            paths.ROCM_SOURCE,
            "644",
            f"deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] {line}\n",
        ],
    )
    (pin,) = planned.find("Pin AMD's repository").commands
    assert script_call(pin) == (
        "text-file",
        [paths.ROCM_PIN, "644", "Package: *\nPin: release o=repo.radeon.com\nPin-Priority: 600\n"],
    )
    (tools,) = planned.find("Install the tools that fetch").commands
    assert script_call(tools) == (  # curl is already there
        "packages-install", [paths.PACKAGE_LEDGER, "ca-certificates", "gnupg"]
    )  # fmt: skip
    (install,) = planned.find("Install the ROCm packages").commands
    assert script_call(install) == (
        "release-switch", [f"[.]{release(version).numeric_tag}-", "want:rocm-hip-runtime"]
    )  # fmt: skip
    groupadd, usermod = planned.find("Give the GPU users video and render").commands
    assert str(groupadd) == "groupadd --system render"
    assert str(usermod) == "usermod -a -G render alice"  # already in video


def test_the_loader_and_path_snippets_are_the_packaged_files():
    planned = fresh("ubuntu-24.04", {"rocm_version": "6.4.3"})
    (ld_conf,) = planned.find("dynamic loader path").commands
    assert script_call(ld_conf) == ("text-file", [paths.LD_CONF, "644", text("rocm-ld.conf")])
    assert text("rocm-ld.conf") == "/opt/rocm/lib\n/opt/rocm/lib64\n"
    rebuild = planned.find("Rebuild the loader cache")
    assert rebuild.conditional and [str(c) for c in rebuild.commands] == ["ldconfig"]
    (profile,) = planned.find("login shells' PATH").commands
    assert script_call(profile) == ("text-file", [paths.PROFILE, "644", text("rocm-profile.sh")])


@pytest.mark.parametrize(
    ("os_name", "version", "index", "wheels"),
    [
        ("ubuntu-24.04", "7.2.1", "rocm7.2",
         ["torch==2.14.1+rocm7.2", "torchvision==0.29.1+rocm7.2"]),
        ("debian-12", "6.4.3", "rocm6.4",
         ["torch==2.9.1+rocm6.4", "torchaudio==2.9.1+rocm6.4", "torchvision==0.24.1+rocm6.4"]),
    ],
)  # fmt: skip
def test_torch_comes_from_the_matching_index(os_name, version, index, wheels):
    planned = fresh(os_name, {"rocm_version": version})
    (venv_tools,) = planned.find("Install python3-venv").commands
    assert script_call(venv_tools) == ("packages-install", [paths.PACKAGE_LEDGER, "python3-venv"])
    (venv,) = planned.find("Create the PyTorch venv").commands
    assert script_call(venv) == ("venv-create", [paths.DEFAULT_VENV, paths.DIRECTORY_LEDGER])
    (pip,) = planned.find("Install the torch wheels").commands
    # Every wheel pinned by the controller's lock (unit.conftest.UpstreamLocks stands in).
    python = HOST_RUNTIMES[os_name.replace("-", " ")].python
    pinned = " ".join(f"'{w} --hash=sha256:{lock_hash(w, python)}'" for w in wheels)
    assert str(pip) == checked(paths.venv_python(paths.DEFAULT_VENV)) + (
        f"printf '%s\\n' {pinned} | /opt/rocm-fleet/venv/bin/python -m pip install --no-input "
        "--disable-pip-version-check --no-cache-dir --require-hashes --only-binary=:all: "
        f"--index-url https://download.pytorch.org/whl/{index} -r /dev/stdin"
    )


def test_key_is_fetched_and_checked_before_anything_is_written():
    planned = fresh("ubuntu-22.04", {"rocm_version": "6.4.3"})
    key = planned.names.index(planned.find("signing key").name)
    assert key < planned.names.index(planned.find("Point apt at").name)
    assert key < planned.names.index(planned.find("Refresh apt lists").name)
    (fetch,) = planned.ops[key].commands
    name, args = script_call(fetch)
    assert (name, args) == (
        "verified-keyring",
        [CLASSIC_REPOSITORY.key_url, CLASSIC.key_fingerprint, paths.ROCM_KEYRING],
    )
    script = text("scripts/verified-keyring.sh")
    assert script.index("gpg --batch --with-colons --list-keys") < script.index("--export")
    everything = " ".join(str(c) for op in planned.ops for c in op.commands)
    assert "apt-key" not in everything and "trusted=yes" not in everything


def test_apt_lists_are_refreshed_after_the_source_and_key_with_a_stamp():
    planned = fresh("debian-12", {"rocm_version": "6.4.3"})
    names = planned.names
    refresh = planned.find("Refresh apt lists after a source or key change")
    assert names.index(refresh.name) > names.index(planned.find("Pin AMD's repository").name)
    update, stamp = refresh.commands
    assert script_call(update) == ("apt-get", ["update"])
    assert str(stamp) == f"mkdir -p {paths.STATE_DIR} && touch {paths.APT_LISTS_STAMP}"


# --- refused hosts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("os_name", "version", "survey", "reason"),
    [
        ("ubuntu-24.04", "6.1.2", {},
         "ROCm 6.1.2 (ROCm (repo.radeon.com)) publishes no packages for ubuntu 24.04"),
        ("debian-11", "6.4.3", {}, "debian 11 is not supported"),
        ("ubuntu-22.04", "6.4.3", {"arch": "arm64"}, "architecture is arm64"),
        ("debian-12", "6.4.3", {"identity": {"uid": 1000, "user": "admin"}},
         "connected as admin (uid 1000), not root"),
    ],
)  # fmt: skip
def test_a_refused_host_gets_no_operation_and_the_reason_on_its_line(
    caplog, os_name, version, survey, reason
):
    caplog.set_level(logging.ERROR, logger="pyinfra")
    arch = survey.pop("arch", "amd64")
    host = SurveyHost(fresh_survey(os_name, arch, **survey))
    planned = plan({"rocm_version": version}, host)
    assert planned.refused
    assert [op.name for op in planned.ops if not op.name.startswith("Preflight")] == []
    assert planned.changes == []
    (record,) = [r for r in caplog.records if "refused:" in r.getMessage()]
    assert record.levelno == logging.ERROR
    assert "[node]" in record.getMessage() and reason in record.getMessage()
    assert host.extra_reads == []  # the one survey was enough to refuse it


def test_an_unreadable_host_is_refused_with_how_to_connect(caplog):
    caplog.set_level(logging.ERROR, logger="pyinfra")

    class Unreadable(SurveyHost):
        def __call__(self, fact, *args, **kwargs):
            return None  # what host.get_fact gives for a fact that failed (_ignore_errors)

    planned = plan({"rocm_version": "6.4.3"}, Unreadable({}))
    assert planned.refused and planned.ops == []
    assert "preflight could not read node (see the error above): connect as root" in caplog.text


@pytest.mark.parametrize(
    ("output", "reason"),
    [(["__survey_section=0", "ID=debian", "__survey_section=0"],
      "preflight refused node's survey (output names section '0' twice: refused): a file or "
      "tool on the host printed a line posing as a survey section marker, so no answer can be "
      "trusted; find that line in what the survey reads (pyinfra -vvv prints its output, the "
      "host's untrusted text) and remove it"),
     (["__survey_section=0", "ID=debian\x1b]0;owned\x07"],
      "preflight could not take node's survey output as answers (incomplete survey output: "
      "'__survey_section=0\\nID=debian\\x1b]0;owned\\x07'): a read's output ran into the next "
      "section or was cut short; pyinfra -vvv prints the survey's output (the host's untrusted "
      "text)")],
)  # fmt: skip
def test_a_survey_output_not_taken_as_answers_says_what_happened_not_how_to_connect(
    caplog, output, reason
):
    """A section named twice (a host's text posing as another read's) or missing is no
    connection problem: the refusal says what happened, with no advice about root or sudo."""
    caplog.set_level(logging.ERROR, logger="pyinfra")

    class Unreadable(SurveyHost):
        def __call__(self, fact, *args, **kwargs):
            if fact is Survey:
                survey = Survey()
                survey.command(reads=kwargs["reads"])
                return survey.process(output)
            return super().__call__(fact, *args, **kwargs)

    host = Unreadable({})
    planned = plan({"rocm_version": "6.4.3", "_sudo": True}, host)
    assert planned.refused and planned.ops == []
    assert planned.reason == reason
    assert host.extra_reads == []  # no look for sudo: it is not the problem
    assert "\x1b" not in caplog.text and "\x07" not in caplog.text  # the host's text escaped


@pytest.mark.parametrize(
    ("data", "sudo", "reason"),
    [({}, None, "connect as root, or set _sudo: True"),
     ({"_sudo": True}, None, "_sudo is set but node has no sudo (sudo: not found): install it"),
     ({"_sudo": True}, "/usr/bin/sudo", "through sudo (see the error above): give the SSH user "
      "passwordless sudo, or set _sudo_password")],
)  # fmt: skip
def test_an_unreadable_host_gets_the_advice_that_fits(caplog, data, sudo, reason):
    """With _sudo set, "set _sudo: True" is the wrong advice: one more look (``command -v
    sudo``, without sudo) tells a host without sudo from a sudo that refused."""
    caplog.set_level(logging.ERROR, logger="pyinfra")

    class Unreadable(SurveyHost):
        def __call__(self, fact, *args, **kwargs):
            if fact is Which:
                assert kwargs == {"command": "sudo", "_sudo": False, "_ignore_errors": True}
                return sudo
            return None

    planned = plan({"rocm_version": "6.4.3", **data}, Unreadable({}))
    assert planned.refused and reason in planned.reason
    assert "\n" not in planned.reason


def test_bad_data_stops_planning():
    with pytest.raises((ConfigError, PyinfraError), match="'rocm_users' has value 'alice'"):
        fresh("ubuntu-22.04", {"rocm_version": "6.4.3", "rocm_users": "alice"})


# --- converged hosts --------------------------------------------------------------------------

DEBIAN = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1,
          "rocm_users": ["alice"]}  # fmt: skip
UBUNTU = {"rocm_version": "7.2.0", "expected_gfx": "gfx1100", "rocm_users": ["alice", "bob"]}


@pytest.mark.parametrize("driver", ["inbox", "dkms"])
@pytest.mark.parametrize(("os_name", "data"), [("debian-12", DEBIAN), ("ubuntu-24.04", UBUNTU)])
def test_a_converged_host_plans_no_change_from_the_one_survey(os_name, data, driver):
    data = {**data, "rocm_driver": driver}
    host = SurveyHost(converged_survey(data, os_name))
    planned = plan(data, host)
    assert not planned.refused
    assert planned.changes == []
    assert host.extra_reads == []
    # Every concern was planned (as noops), so "no change" is not "nothing planned".
    concerns = {op.name.split(" | ")[0] for op in planned.ops}
    assert {"ROCm apt repository", "ROCm packages", "GPU groups", "PyTorch",
            "Reboot", "Verify"} <= concerns  # fmt: skip
    assert ({"amdgpu driver", "Secure Boot"} <= concerns) is (driver == "dkms")


def test_the_converged_survey_is_what_the_fresh_plan_writes():
    data = {**DEBIAN, "rocm_driver": "dkms"}
    survey = converged_survey(data, "debian-12")
    assert survey.keyrings[paths.ROCM_KEYRING] == [CLASSIC.key_fingerprint]
    stamp = survey.files[paths.APT_LISTS_STAMP]["mtime"]
    assert stamp > survey.files[paths.ROCM_SOURCE]["mtime"]
    assert stamp > survey.files[paths.ROCM_KEYRING]["mtime"]
    packages = survey.packages
    assert packages["rocm-hip-runtime"] == "6.4.3.60403-128~22.04"
    assert packages["amdgpu-dkms"].startswith("1:") and ".60403-" in packages["amdgpu-dkms"]
    assert {"linux-headers-6.1.0-31-amd64", "mokutil", "openssl", "gnupg"} <= set(packages)
    assert survey.venv["torchvision"] == "0.24.1+rocm6.4"
    assert survey.groups == {"groups": ["video", "render"],
                                "users": {"alice": ["alice", "video", "render"]}}  # fmt: skip
    assert survey.secure_boot["state"] == "disabled"


@pytest.mark.parametrize(
    ("change", "drifted"),
    [
        ({"files": {paths.ROCM_PIN: None}}, ["ROCm apt repository | Pin AMD's repository above "
                                            "the distribution's own ROCm packages"]),
        ({"groups": {"groups": ["video", "render"], "users": {"alice": ["alice", "video"]}}},
         ["GPU groups | Give the GPU users video and render"]),
        ({"venv": {"torch": "2.9.0+rocm6.4", "torchvision": "0.24.0+rocm6.4",
                   "torchaudio": "2.9.0+rocm6.4"}},
         ["PyTorch | Install the torch wheels built for the ROCm release"]),
    ],
)  # fmt: skip
def test_one_drifted_resource_is_the_only_change(change, drifted):
    survey = converged_survey(DEBIAN, "debian-12")
    survey = changed(survey, **change)
    host = SurveyHost(survey)
    assert plan(DEBIAN, host).changes == drifted
    assert host.extra_reads == []


# --- pytorch_install: true -> false: the venv rocm-fleet created goes ---------------------------

REMOVE_VENV = "PyTorch | Remove the PyTorch venv rocm-fleet created (pytorch_install: false)"
NO_TORCH = {**DEBIAN, "pytorch_install": False}
# The GPU check vouched for torch too: without it, it checks once more (and records that).
VERIFY = "Verify | Check rocminfo and torch see the expected GPUs"


def verified(data: dict, survey: dict) -> dict:
    """``survey`` with the record of a passed GPU check for ``data`` (as converged_survey)."""
    check = plan(data, SurveyHost(survey)).find("Check rocminfo and torch")
    if check.commands:
        path, mode, content = script_call(check.commands[-1])[1]
        survey.files[path] = digest(content, mode)
    return survey


def test_pytorch_install_false_removes_the_venv_rocm_fleet_created_on_one_run():
    survey = converged_survey(DEBIAN, "debian-12")
    ledger = survey.ledgers[paths.DIRECTORY_LEDGER]
    assert ledger == ["/opt/rocm-fleet", paths.DEFAULT_VENV]
    host = SurveyHost(survey)
    planned = plan(NO_TORCH, host)
    # --dry and the audit (the same plan) name it; nothing read beyond the survey.
    assert planned.changes == [REMOVE_VENV, VERIFY]
    assert host.extra_reads == []
    (remove,) = planned.find(REMOVE_VENV).commands
    assert script_call(remove) == ("venv-remove", [paths.DEFAULT_VENV, paths.DIRECTORY_LEDGER])
    # Recorded by a deploy from before the venv itself was: its directory says it made it.
    survey.ledgers[paths.DIRECTORY_LEDGER] = ["/opt/rocm-fleet"]
    assert plan(NO_TORCH, SurveyHost(survey)).changes == [REMOVE_VENV, VERIFY]


@pytest.mark.parametrize("ledger", [[], ["/opt/other"], ["/opt/rocm-fleet/venv2"]])
def test_pytorch_install_false_keeps_a_venv_rocm_fleet_did_not_create(ledger):
    survey = converged_survey(DEBIAN, "debian-12")
    survey.ledgers[paths.DIRECTORY_LEDGER] = ledger
    host = SurveyHost(verified(NO_TORCH, survey))
    planned = plan(NO_TORCH, host)
    assert planned.changes == []
    assert host.extra_reads == []
    assert planned.find(REMOVE_VENV).commands == []


def test_pytorch_install_false_a_second_run_changes_nothing_and_has_no_pytorch_concern():
    survey = converged_survey(DEBIAN, "debian-12")
    survey.files[paths.venv_marker(paths.DEFAULT_VENV)] = None
    survey = replace(survey, venv=None)
    survey.ledgers[paths.DIRECTORY_LEDGER] = []
    host = SurveyHost(verified(NO_TORCH, survey))
    planned = plan(NO_TORCH, host)
    assert planned.changes == []
    assert host.extra_reads == []
    assert not any(name.startswith("PyTorch") for name in planned.names)


# --- composing: a project of one's own around rocm_node() -------------------------------------

OWN_DEPLOY = """
from pyinfra import host
from pyinfra.operations import server

from rocm_fleet.deploy import refused, rocm_node

server.shell(name="mine before", commands=["touch /srv/before"])
rocm_node()
host.data.seen_refusal = refused()
if not refused():
    server.shell(name="mine after", commands=["touch /srv/after"])
"""


@pytest.mark.parametrize("accepted", [True, False])
def test_an_own_deploy_asks_whether_the_host_was_refused(tmp_path, accepted):
    """``refused()`` gives the reason after ``rocm_node()``; a refused host is failed the
    pyinfra way (``state.failed_hosts``: the run executes none of its operations, the user's
    "mine before" included), and the guarded "mine after" isn't even planned."""
    own = tmp_path / "own.py"
    own.write_text(OWN_DEPLOY)
    data = {**DEBIAN, "rocm_users": ["alice"] if accepted else ["alice", "mallory"]}
    survey = converged_survey(DEBIAN, "debian-12")
    survey.groups["users"]["mallory"] = None
    planned = plan(data, SurveyHost(survey), deploy_file=own)
    node = planned.state.inventory.get_host("node")
    if accepted:
        assert not planned.refused and node.data.seen_refusal is None
        assert planned.names[0] == "mine before" and planned.names[-1] == "mine after"
        return
    assert planned.refused and node not in planned.state.active_hosts
    assert node.data.seen_refusal == planned.reason
    assert "rocm_users names mallory, not a user on this host" in planned.reason
    assert "mine after" not in planned.names
    from rocm_fleet.deploy import refused

    assert refused(node) == planned.reason


@pytest.mark.parametrize("spelling", ["lower", "spaced"])
def test_a_fingerprint_in_lower_case_is_a_no_op_on_a_converged_host(spelling):
    fpr = CLASSIC.key_fingerprint
    given = (
        fpr.lower() if spelling == "lower" else " ".join(fpr[i : i + 4] for i in range(0, 40, 4))
    )
    host = SurveyHost(converged_survey(DEBIAN, "debian-12"))
    planned = plan({**DEBIAN, "rocm_key_fingerprint": given}, host)
    assert not planned.refused and planned.changes == []


def test_the_nvidia_packages_a_refusal_summarises_are_listed_in_full_with_v(caplog, monkeypatch):
    from pyinfra.api import State

    nvidia = {f"libnvidia-compute-{n}": "535.216.01-1" for n in range(8)}
    survey = fresh_survey("debian-12", packages={**fresh_survey("debian-12").packages, **nvidia})
    caplog.set_level(logging.INFO, logger="pyinfra")
    planned = plan({"rocm_version": "6.4.3"}, SurveyHost(survey))
    assert planned.refused and "and 3 more (pyinfra -v or rocm-fleet audit --json" in planned.reason
    assert "NVIDIA packages:" not in caplog.text
    monkeypatch.setattr(State, "print_fact_info", True)  # pyinfra -v
    plan({"rocm_version": "6.4.3"}, SurveyHost(survey))
    assert f"NVIDIA packages: {', '.join(sorted(nvidia))}" in caplog.text


def test_a_survey_that_cant_run_leaves_its_refusal_without_pyinfras_fact_line(caplog):
    """pyinfra logs a fact that failed as one line naming the fact and its arguments (for the
    survey, thousands of characters of reads); the refusal says why, so that line is dropped,
    and every other warning stays."""
    from pyinfra.api.util import log_error_or_warning

    from rocm_fleet.engine import surveying

    caplog.set_level(logging.WARNING, logger="pyinfra")
    name = f"{surveying.Survey.__module__}.{surveying.Survey.__name__}"

    class Failing:
        print_prefix = "[node] "

        def get_fact(self, fact, **kwargs):
            log_error_or_warning(self, True, description=f"could not load fact: {name} reads=[…]")
            log_error_or_warning(self, True, description="could not load fact: other.Fact x=1")
            return None

    assert surveying.read_apart(Failing(), []) is None
    assert f"could not load fact: {name}" not in caplog.text
    assert "could not load fact: other.Fact x=1" in caplog.text


# --- acceptance tools (rocm_acceptance) ---------------------------------------------------

ACCEPTING = {**DEBIAN, "rocm_acceptance": "quick"}
RVS_INSTALL = "ROCm packages | Install the ROCm packages of the release"
RVS_RECORD = "ROCm packages | Record the acceptance tools installed (rocm_acceptance)"
RVS_REMOVE = "ROCm packages | Remove the acceptance tools (rocm_acceptance off)"


def test_acceptance_on_installs_rvs_from_the_release_and_records_it_once():
    survey = converged_survey(DEBIAN, "debian-12")
    host = SurveyHost(survey)
    planned = plan(ACCEPTING, host)
    assert host.extra_reads == []
    assert planned.changes == [RVS_INSTALL, RVS_RECORD]
    (switch,) = planned.find(RVS_INSTALL).commands
    assert "want:rocm-validation-suite" in script_call(switch)[1]
    (record,) = planned.find(RVS_RECORD).commands
    assert script_call(record) == ("text-file", [paths.ACCEPTANCE_LEDGER, "600",
                                                 "rocm-validation-suite\n"])  # fmt: skip
    # converged with it: a second run changes nothing
    assert plan(ACCEPTING, SurveyHost(converged_survey(ACCEPTING, "debian-12"))).changes == []


def test_acceptance_off_purges_only_what_acceptance_installed():
    survey = converged_survey(ACCEPTING, "debian-12")
    assert "rocm-validation-suite" in survey.packages
    planned = plan(DEBIAN, SurveyHost(survey))
    assert planned.changes == [RVS_REMOVE]
    purge, forget = planned.find(RVS_REMOVE).commands
    assert script_call(purge) == ("apt-get", ["purge", "rocm-validation-suite"])
    assert str(forget) == f"rm -f {paths.ACCEPTANCE_LEDGER}"
    # installed by hand (no ledger), or named in rocm_packages: left alone
    survey.files[paths.ACCEPTANCE_LEDGER] = None
    survey.ledgers[paths.ACCEPTANCE_LEDGER] = []
    assert plan(DEBIAN, SurveyHost(survey)).changes == []
    kept = converged_survey(ACCEPTING, "debian-12")
    wanted = {**DEBIAN, "rocm_packages": ["rocm-hip-runtime", "rocm-validation-suite"]}
    (forget_only,) = plan(wanted, SurveyHost(kept)).find(RVS_REMOVE).commands
    assert str(forget_only) == f"rm -f {paths.ACCEPTANCE_LEDGER}"
