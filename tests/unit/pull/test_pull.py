"""Pull mode (deploy/pull.py): its settings, the files and units it writes, and its plans on
fresh, converged and leaving hosts (planned against recorded surveys, as in test_plan)."""

from __future__ import annotations

import configparser
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocm_fleet.deploy import pull
from rocm_fleet.model import paths
from rocm_fleet.model.answers import LastPull
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.host_survey import PER_PATH, HostSurvey
from rocm_fleet.version import PULL_PROTOCOL
from unit.surveys import SurveyHost, converged_survey, fresh_survey, plan, script_call

LOCK_SHA256 = "3f" * 32
#: A TUF root as `rocm-fleet publish --init` makes it (its keys thrown away).
TRUSTED_ROOT = Path(__file__).resolve().parents[2] / "fixtures/pull/root.json"
PULL = {
    "rocm_pull": True,
    "rocm_pull_source": "http://mirror.lab:8080/fleet/",
    "rocm_pull_trusted_root": str(TRUSTED_ROOT),
    "rocm_pull_lock": "http://mirror.lab:8080/rocm-fleet/requirements.txt",
    "rocm_pull_lock_sha256": LOCK_SHA256,
}
DATA = {"rocm_version": "6.4.3", "expected_gfx": "gfx1100", "expected_gpu_count": 1}
PULLING = {**DATA, **PULL}


def unit(text: str) -> configparser.ConfigParser:
    """A unit file read as INI (its indented line is a continuation, as configparser has it)."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str  # systemd's keys are case-sensitive
    parser.read_string(text.replace("\\\n", "\n"))
    return parser


# --- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "missing",
    ["rocm_pull_source", "rocm_pull_trusted_root", "rocm_pull_lock", "rocm_pull_lock_sha256"],
)
def test_pull_on_requires_its_source_and_pinned_lock(missing):
    data = {k: v for k, v in PULLING.items() if k != missing}
    with pytest.raises(ConfigError, match=f"'{missing}' is required with rocm_pull") as caught:
        load_config(data, "node")
    assert caught.value.key == missing


@pytest.mark.parametrize(
    ("key", "value", "valid"),
    [
        ("rocm_pull_interval", "1 fortnight", "a systemd time span"),
        ("rocm_pull_interval", "3600", "a systemd time span"),
        ("rocm_pull_interval", "1h\nExecStart=/bin/evil", "a systemd time span"),
        ("rocm_pull_random_delay", "0min", "a systemd time span"),
        ("rocm_pull_source", "mirror.lab/node.json", "an http:// or https:// URL"),
        ("rocm_pull_source", "/srv/fleet/node.json", "an http:// or https:// URL"),
        ("rocm_pull_trusted_root", "fleet/root.json", "an absolute path"),
        ("rocm_pull_node", "../node2", "letters, digits"),
        ("rocm_pull_node", "node\nExecStart=/bin/evil", "letters, digits"),
        ("rocm_pull_source", "http://user:pw@mirror.lab/n.json", "without user or password"),
        ("rocm_pull_lock_sha256", "3F" * 32, "64 lower-case hexadecimal digits"),
        ("rocm_pull", "yes", "true or false"),
    ],
)
def test_a_bad_pull_setting_names_the_key_the_value_and_the_valid_form(key, value, valid):
    with pytest.raises(ConfigError, match=valid) as caught:
        load_config({**PULLING, key: value}, "node")
    assert caught.value.key == key
    assert f"inventory key {key!r}" in str(caught.value)
    assert "pw@" not in str(caught.value)


def test_pull_is_off_by_default():
    assert load_config(DATA, "node").rocm_pull is False
    config = load_config(PULLING, "node")
    assert config.rocm_pull_source == "http://mirror.lab:8080/fleet/"
    assert config.rocm_pull_interval == "1h"
    assert config.rocm_pull_node is None  # the inventory name


# --- what it writes ---------------------------------------------------------------------------


def test_the_service_runs_the_script_which_takes_the_lock_and_logs_to_the_journal():
    service = unit(pull.service_unit())
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["ExecStart"].split() == [paths.SHELL, paths.PULL_SCRIPT]
    # 75 is the script's skip while a push changes the node, never a lock held by another.
    assert service["Service"]["SuccessExitStatus"] == "75"
    assert "StandardOutput" not in service["Service"]  # the journal, systemd's default
    assert service["Unit"]["After"] == "network-online.target"
    # The lock lives in root's own directory, not the world-writable /run/lock.
    assert paths.PULL_LOCK.startswith(paths.PULL_RUN_DIR + "/")
    assert not paths.PULL_LOCK.startswith("/run/lock/")


def test_the_timer_runs_after_boot_and_every_interval_with_a_random_delay():
    config = load_config({**PULLING, "rocm_pull_interval": "30min"}, "node")
    timer = unit(pull.timer_unit(config))
    assert timer["Timer"]["OnBootSec"] == "5min"
    assert timer["Timer"]["OnUnitActiveSec"] == "30min"
    assert timer["Timer"]["RandomizedDelaySec"] == "10min"
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_the_inventory_is_this_node_with_the_fetched_data_read_as_json(tmp_path):
    data = tmp_path / "inventory.json"
    source = pull.inventory_file().replace(paths.PULL_DATA, str(data))
    data.write_text(json.dumps(PULLING))
    found: dict = {}
    exec(compile(source, "inventory.py", "exec"), found)
    assert found[pull.PULL_GROUP] == (["@local"], PULLING)
    data.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        exec(compile(source, "inventory.py", "exec"), {})


# --- plans ------------------------------------------------------------------------------------


def pull_ops(planned) -> list[str]:
    return [name for name in planned.names if name.startswith("Pull mode | ")]


def test_a_fresh_host_gets_the_venv_files_and_units_after_it_is_verified():
    planned = plan(PULLING, SurveyHost(fresh_survey("debian-12")))
    assert pull_ops(planned) == [
        "Pull mode | Install python3-venv, curl and gpgv",
        "Pull mode | Install the pinned rocm-fleet for pulls",
        "Pull mode | Install the TUF root the pulls trust",
        "Pull mode | Write the pull script",
        "Pull mode | Write the pull's deploy",
        "Pull mode | Write the pull's inventory",
        "Pull mode | Write the pull service",
        "Pull mode | Write the pull timer",
        "Pull mode | Enable the pull timer",
    ]
    assert planned.names.index(pull_ops(planned)[0]) > max(
        i for i, name in enumerate(planned.names) if name.startswith("Verify | ")
    )
    name, args = script_call(planned.find("Install the pinned rocm-fleet").commands[0])
    assert (name, args) == (
        "pull-venv",
        [paths.PULL_ROOT, paths.PULL_VENV, PULL["rocm_pull_lock"], LOCK_SHA256,
         paths.PULL_INSTALLED, pull.oldest_python(), str(PULL_PROTOCOL)],
    )  # fmt: skip
    name, args = script_call(planned.find("Enable the pull timer").commands[0])
    assert (name, args[0]) == ("pull-units", "enable")


def test_a_converged_pulling_host_plans_no_change_from_the_one_survey():
    host = SurveyHost(converged_survey(PULLING, "debian-12"))
    planned = plan(PULLING, host)
    assert planned.changes == []
    assert len(pull_ops(planned)) == 9
    assert host.extra_reads == []


@pytest.mark.parametrize(
    ("change", "drifted"),
    [
        # (The timer's restart follows when it runs: its stamp is older than the timer file
        # written before it, as apt's lists follow a changed source.)
        ({"rocm_pull_interval": "2h"}, ["Write the pull timer"]),
        ({"rocm_pull_lock_sha256": "4e" * 32}, ["Install the pinned rocm-fleet for pulls"]),
        ({"rocm_pull_source": "https://fleet.example/"}, ["Write the pull script"]),
        ({"rocm_pull_node": "gpu-7"}, ["Write the pull script"]),
    ],
)
def test_a_changed_pull_setting_changes_only_what_it_is_in(change, drifted):
    host = SurveyHost(converged_survey(PULLING, "debian-12"))
    planned = plan({**PULLING, **change}, host)
    assert planned.changes == [f"Pull mode | {name}" for name in drifted]
    assert host.extra_reads == []


def test_pull_turned_off_removes_the_units_and_the_venv_and_then_nothing_is_planned():
    survey = converged_survey(PULLING, "debian-12")
    host = SurveyHost(survey)
    planned = plan(DATA, host)
    assert planned.changes == [
        "Pull mode | Remove the pull service and timer",
        "Pull mode | Remove the pull venv and files",
    ]
    assert host.extra_reads == []
    name, args = script_call(planned.find("Remove the pull service").commands[0])
    assert (name, args) == (
        "pull-units",
        ["disable", paths.PULL_TIMER, paths.PULL_TIMER_LINK, paths.PULL_STAMP, paths.PULL_SERVICE],
    )
    # Once they are gone (the removal's effect on the survey), no Pull mode concern is left.
    gone = replace(survey, **{
        name: {path: value for path, value in getattr(survey, name).items()
               if paths.PULL_ROOT not in path}
        for name in PER_PATH
    })  # fmt: skip
    gone.files.update({paths.PULL_SERVICE: None, paths.PULL_TIMER: None, paths.PULL_STAMP: None})
    gone.directories[paths.PULL_ROOT] = False
    assert pull_ops(plan(DATA, SurveyHost(gone))) == []


def test_a_host_that_never_pulled_has_no_pull_concern():
    assert pull_ops(plan(DATA, SurveyHost(converged_survey(DATA, "debian-12")))) == []


# --- a push and a pull never change a node at once --------------------------------------------


def test_a_push_to_a_node_whose_pull_is_running_is_refused_naming_the_lock():
    survey = converged_survey(PULLING, "debian-12")
    planned = plan(PULLING, SurveyHost(replace(survey, pull_running=True)))
    assert planned.refused
    assert "a pull (rocm-fleet-pull.service) is converging node right now" in planned.reason
    assert paths.PULL_LOCK in planned.reason and "systemctl stop rocm-fleet-pull.timer" in (
        planned.reason
    )
    assert planned.beyond_preflight == []


def test_the_pulls_own_run_is_not_refused_for_the_lock_it_holds():
    survey = HostSurvey(pull_running=True)
    # The pull's own run has the node's name from the push (pull-fetch's settings).
    config = load_config({**PULLING, "rocm_pull_node": "node"}, "node")
    pulling = SimpleNamespace(name="@local", groups=[pull.PULL_GROUP])
    pushing = SimpleNamespace(name="node", groups=["gpu"])
    assert pull.pull_problems(pulling, survey, config) == []
    assert len(pull.pull_problems(pushing, survey, config)) == 1
    assert pull.pull_problems(pushing, HostSurvey(pull_running=False), config) == []


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "can't be read"), ("{}", "is not TUF root metadata"),
     ('{"signed": {"_type": "targets"}, "signatures": []}', "is not TUF root metadata")],
)  # fmt: skip
def test_a_push_with_a_trusted_root_that_is_not_one_is_refused_naming_it(tmp_path, content, said):
    root = tmp_path / "root.json"
    if content is not None:
        root.write_text(content)
    config = load_config({**PULLING, "rocm_pull_trusted_root": str(root)}, "node")
    pushing = SimpleNamespace(name="node", groups=["gpu"])
    (problem,) = pull.pull_problems(pushing, HostSurvey(), config)
    assert f"rocm_pull_trusted_root {root} {said}" in problem


def test_a_node_whose_name_cant_name_a_target_is_refused_naming_the_setting():
    config = load_config(PULLING, "node")
    (problem,) = pull.pull_problems(
        SimpleNamespace(name="@ssh/odd", groups=[]), HostSurvey(), config
    )
    assert "'@ssh/odd' can't name a pull node's target" in problem
    assert "rocm_pull_node" in problem


def test_pull_turned_off_removes_the_pulls_metrics_too():
    """What the pulls wrote for node_exporter goes with them: left, it would report the last
    pull's state forever. Planned only for the files that are there."""
    survey = converged_survey(PULLING, "debian-12")
    survey.files[paths.PULL_STATUS_METRICS] = {"mode": "644", "sha256": "0" * 64, "mtime": 1}
    planned = plan(DATA, SurveyHost(survey))
    assert planned.changes == [
        "Pull mode | Remove the pull service and timer",
        "Pull mode | Remove the pull venv and files",
        f"Pull mode | Remove the pulls' metrics ({paths.PULL_STATUS_METRICS})",
    ]
    # The metrics alone (the rest already gone) still make a Pull mode concern.
    only = converged_survey(DATA, "debian-12")
    only.files[paths.PULL_METRICS] = {"mode": "644", "sha256": "1" * 64, "mtime": 1}
    assert f"Pull mode | Remove the pulls' metrics ({paths.PULL_METRICS})" in (
        plan(DATA, SurveyHost(only)).changes
    )


# --- the last pull's refusal, in --dry and the audit ------------------------------------------


def test_the_pulls_status_is_read_from_its_own_gauges_only():
    from rocm_fleet.facts.files import PullStatus

    written = [
        "rocm_fleet_pull_last_run_timestamp_seconds 1764460800",
        "rocm_fleet_pull_last_run_exit_status 1",
        'rocm_fleet_pull_last_run{result="bad-signature"} 1',
    ]
    assert PullStatus().process(written) == LastPull(result="bad-signature", started=1764460800)
    # The collector's user can write the directory: a line of another shape is not taken.
    forged = ['rocm_fleet_pull_last_run{result="converged\\"; echo"} 1']
    assert PullStatus().process(forged) == LastPull(result="unknown", started=0)
    from rocm_fleet.facts._shell import ABSENT

    assert PullStatus().process([ABSENT]) is None


@pytest.mark.parametrize("result", ["bad-signature", "expired", "rollback", "deploy-failed"])
def test_a_push_or_audit_shows_the_last_pulls_refusal_as_a_warning(result):
    from rocm_fleet.engine.refuse import outcome

    survey = converged_survey(PULLING, "debian-12")
    survey = replace(survey, pull_status=LastPull(result=result, started=1764460800))
    planned = plan(PULLING, SurveyHost(survey))
    assert not planned.refused and planned.changes == []
    warnings = outcome(planned.state, "node").findings.warnings
    (warning,) = [w for w in warnings if "the last pull" in w]
    assert warning == (
        f"the last pull (started 2025-11-30 00:00 UTC) did not converge this node: {result} "
        "(journalctl -u rocm-fleet-pull says why)"
    )


def test_a_converged_or_skipped_pull_is_no_warning():
    for result in pull.PULL_FINE:
        survey = HostSurvey(pull_status=LastPull(result=result, started=1))
        assert pull.pull_warnings(load_config(PULLING, "node"), survey) == []
    survey = HostSurvey(pull_status=LastPull(result="bad-signature", started=1))
    assert pull.pull_warnings(load_config(DATA, "node"), survey) == []  # not a pull node


# --- the node's seal key (rocm_pull_seal_keys) ------------------------------------------------


def seal_keys(tmp_path: Path, mode: int = 0o600) -> Path:
    """A directory of node keys as ``rocm-fleet publish`` makes it, holding "node"'s."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    directory = tmp_path / "seal-keys"
    directory.mkdir(mode=0o700)
    pem = X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )  # fmt: skip
    (directory / "node.pem").write_bytes(pem)
    (directory / "node.pem").chmod(mode)
    return directory


def test_the_push_installs_the_nodes_own_seal_key_alone_private(tmp_path):
    directory = seal_keys(tmp_path)
    planned = plan({**PULLING, "rocm_pull_seal_keys": str(directory)},
                   SurveyHost(fresh_survey("debian-12")))  # fmt: skip
    ops = pull_ops(planned)
    assert ops.index("Pull mode | Install the node's seal key") == 3
    name, args = script_call(planned.find("Install the node's seal key").commands[0])
    assert paths.PULL_SEAL_KEY in args and "600" in args, (name, args)
    # The node's key, never the directory's others; never part of what a target carries.
    assert "rocm_pull_seal_keys" in pulled_push_only()


def pulled_push_only() -> tuple[str, ...]:
    from rocm_fleet.model import pulled

    return pulled.PUSH_ONLY


@pytest.mark.parametrize(
    ("mode", "present", "said"),
    [(0o600, False, "can't be read"), (0o644, True, "is mode 0644: a private key must be 0600")],
)
def test_a_missing_or_readable_seal_key_is_a_preflight_problem(tmp_path, mode, present, said):
    directory = seal_keys(tmp_path, mode)
    if not present:
        (directory / "node.pem").unlink()
    config = load_config({**PULLING, "rocm_pull_seal_keys": str(directory)}, "node")
    pushing = SimpleNamespace(name="node", groups=["gpu"])
    (problem,) = pull.pull_problems(pushing, HostSurvey(pull_running=False), config)
    assert str(directory / "node.pem") in problem and said in problem
