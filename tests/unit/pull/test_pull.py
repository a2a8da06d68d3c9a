"""Pull mode (deploy/pull.py): its settings, the files and units it writes, and its plans on
fresh, converged and leaving hosts (planned against recorded surveys, as in test_plan)."""

from __future__ import annotations

import configparser
import fcntl
import json
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocm_fleet import assets
from rocm_fleet.deploy import pull
from rocm_fleet.model import paths
from rocm_fleet.model.answers import LastPull
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.fleet import Fleet
from rocm_fleet.model.host_survey import PER_PATH, HostSurvey
from unit.conftest import DRIVERLESS_SITE
from unit.pullrepo import NODE, SETTINGS, PullFleet
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


def test_the_pull_script_is_valid_shell_with_its_settings_quoted(tmp_path):
    config = load_config(PULLING, "node")
    script = pull.pull_script(config, "node-1.lab")
    (tmp_path / "pull.sh").write_text(script)
    subprocess.run(["sh", "-n", str(tmp_path / "pull.sh")], check=True)
    assert "PULL_SOURCE=http://mirror.lab:8080/fleet/\n" in script
    assert "PULL_NODE=node-1.lab\n" in script
    assert f"PULL_TRUSTED_ROOT={paths.PULL_TRUSTED_ROOT}\n" in script
    assert '"$PULL_VENV/bin/rocm-fleet" pull-fetch --repository "$PULL_SOURCE"' in script
    assert '"$PULL_VENV/bin/pyinfra" --yes "$PULL_INVENTORY" "$PULL_DEPLOY"' in script
    assert '"$PULL_VENV/bin/rocm-fleet" check "$PULL_INVENTORY"' in script
    assert "audit --quiet --format prometheus --output" in script
    assert "PULL_MIRROR=''\n" in script  # no TLS mirror: the system's CAs


def test_a_repository_on_a_tls_mirror_is_fetched_trusting_its_ca_alone(tmp_path):
    from rocm_fleet.model.tls import make_mirror_files

    tls = make_mirror_files(tmp_path / "tls", ["10.0.0.5"]).tls
    mirror = {**PULLING, "ssh_hostname": "10.0.0.5", "rocm_mirror_tls_ca": tls.ca,
              "rocm_mirror_tls_cert": tls.cert, "rocm_mirror_tls_key": tls.key}  # fmt: skip
    source = "https://10.0.0.5:8080/fleet/"
    node = {**PULLING, "rocm_mirror": "mirror1", "rocm_pull_source": source}
    config = Fleet({"node": node, "mirror1": mirror}).config("node")
    script = pull.pull_script(config, "node")
    assert "PULL_MIRROR=https://10.0.0.5:8080/\n" in script
    assert f"PULL_MIRROR_CA={paths.MIRROR_CA}\n" in script
    # The script's choice of pull-fetch's options, run with a rocm-fleet that prints them.
    bin_dir = tmp_path / "venv/bin"
    bin_dir.mkdir(parents=True)
    shown_args = tmp_path / "args"
    (bin_dir / "rocm-fleet").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shown_args}\nexit 1\n')
    (bin_dir / "rocm-fleet").chmod(0o755)
    body = script.split('cd "$PULL_ROOT"', 1)[0]
    for path in (paths.PULL_VENV, paths.PULL_DATA, paths.PUSH_MARKER,
                 paths.NODE_EXPORTER_TEXTFILES):  # fmt: skip
        body = body.replace(f"={path}\n", f"={tmp_path}{path}\n")
    body = body.replace(f"PULL_VENV={tmp_path}{paths.PULL_VENV}", f"PULL_VENV={tmp_path}/venv")
    run = tmp_path / "run.sh"

    def options(text: str) -> list[str]:
        run.write_text(text)
        env = {"PATH": "/usr/bin:/bin", "ROCM_FLEET_PULL_LOCKED": "1"}
        subprocess.run(["sh", str(run)], capture_output=True, text=True, env=env)
        return shown_args.read_text().split()

    shown = options(body)
    assert shown[shown.index("--repository") + 1] == source
    assert shown[-2:] == ["--ca", paths.MIRROR_CA]
    assert "--ca" not in options(body.replace(source, "https://data.example/fleet/"))


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
         paths.PULL_INSTALLED, pull.oldest_python()],
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


def push_mark(tmp_path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    body = assets.text("scripts/push-mark.sh")
    return subprocess.run(["sh", "-c", body, "push-mark", *args], capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def test_a_push_marks_the_node_and_takes_the_mark_away(tmp_path):
    marker, lock = tmp_path / "run/push-running", tmp_path / "pull.lock"
    before = int(time.time())
    started = push_mark(tmp_path, "start", str(marker), str(lock), "1")
    assert started.returncode == 0, started.stderr
    assert before <= int(marker.read_text()) <= time.time()
    assert push_mark(tmp_path, "end", str(marker)).returncode == 0
    assert not marker.exists()


def test_a_push_waits_a_bounded_time_for_a_running_pull_then_fails_unmarked(tmp_path):
    marker, lock = tmp_path / "push-running", tmp_path / "pull.lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # what flock(1) in the pull's ExecStart takes
        started = time.monotonic()
        refused = push_mark(tmp_path, "start", str(marker), str(lock), "1")
        assert refused.returncode == 1
        assert 1 <= time.monotonic() - started < 10
        assert "a pull (rocm-fleet-pull.service) is converging this host" in refused.stderr
        assert not marker.exists()
    # The pull over (its lock free): the push goes ahead, marked.
    assert push_mark(tmp_path, "start", str(marker), str(lock), "1").returncode == 0
    assert marker.exists()


class PullNode:
    """The pull script run on this machine with its paths under ``root``: its repository a
    real TUF repository over loopback (``unit.pullrepo``), fetched and verified by the real
    ``rocm-fleet pull-fetch``; the pinned venv's pyinfra and the rest of rocm-fleet are
    recorders of their arguments (a unit test: what the script does around them)."""

    def __init__(self, root: Path, fleet: PullFleet, node: str = NODE):
        self.root = root
        self.fleet = fleet
        venv = root / "venv/bin"
        venv.mkdir(parents=True)
        self.calls = root / "calls"
        record = f'echo "$(basename "$0") $*" >> {self.calls}\n'
        # What TLS the deploy trusts (its environment), beside its arguments.
        self.ca_seen = root / "ca-seen"
        trust = f'echo "${{REQUESTS_CA_BUNDLE:-certifi}}" > {self.ca_seen}\n'
        (venv / "pyinfra").write_text(f"#!/bin/sh\n{trust}{record}")
        fetch = f'[ "$1" != pull-fetch ] || exec {sys.executable} -m rocm_fleet.cli "$@"\n'
        (venv / "rocm-fleet").write_text(f"#!/bin/sh\n{fetch}{record}")
        for program in ("pyinfra", "rocm-fleet"):
            (venv / program).chmod(0o755)
        (root / "textfiles").mkdir()
        self.data = root / "run/inventory.json"
        self.status_file = root / "textfiles/rocm_fleet_pull.prom"
        variables = {
            "PULL_SOURCE": fleet.url, "PULL_NODE": node,
            "PULL_TRUSTED_ROOT": str(fleet.trusted_root), "PULL_METADATA": str(fleet.metadata),
            "PULL_ROOT": str(root), "PULL_VENV": str(root / "venv"),
            "PULL_RUN_DIR": str(root / "run"), "PULL_LOCK": str(root / "run/lock"),
            "PULL_DATA": str(self.data), "PULL_INVENTORY": "inventory.py",
            "PULL_DEPLOY": "deploy.py", "TEXTFILES": str(root / "textfiles"),
            "PULL_METRICS": str(root / "textfiles/rocm_fleet.prom"),
            "PULL_STATUS_METRICS": str(self.status_file),
            "PUSH_MARKER": str(root / "push-running"), "PUSH_MARKER_EXPIRY": "3600",
            "PULL_MIRROR": "", "PULL_MIRROR_CA": "",  # no TLS mirror: the system's CAs
            "SYSTEM_CA_BUNDLE": str(root / "ca-certificates.crt"),  # none until a test makes it
        }  # fmt: skip
        header = "".join(f"{k}={shlex.quote(v)}\n" for k, v in variables.items())
        self.script = root / "pull.sh"
        self.script.write_text(header + assets.text("rocm-fleet-pull.sh"))

    def run(self) -> subprocess.CompletedProcess:
        return subprocess.run(["sh", str(self.script)], capture_output=True, text=True, timeout=60)

    def ran(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def status(self) -> str:
        return self.status_file.read_text()


@pytest.fixture
def fleet(tmp_path):
    made = PullFleet(tmp_path / "fleet")
    yield made
    made.close()


def test_a_pull_applies_the_signed_settings_with_the_push_only_ones_from_the_push(tmp_path, fleet):
    serial = fleet.publish({NODE: SETTINGS})
    node = PullNode(tmp_path / "node", fleet)
    pulled_run = node.run()
    assert pulled_run.returncode == 0, pulled_run.stderr
    assert f"verified serial {serial} of {NODE}" in pulled_run.stderr
    assert node.ran()[0] == "pyinfra --yes inventory.py deploy.py"
    assert json.loads(node.data.read_text()) == {
        **SETTINGS, "rocm_pull_source": fleet.url,
        "rocm_pull_trusted_root": str(fleet.trusted_root), "rocm_pull_node": NODE,
    }  # fmt: skip
    assert node.data.stat().st_mode & 0o777 == 0o600
    assert (node.root / "run").stat().st_mode & 0o777 == 0o700
    assert fleet.applied() == serial
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in node.status()


def test_a_pulled_site_file_is_written_beside_the_settings_and_named_by_them(tmp_path, fleet):
    site = DRIVERLESS_SITE.read_text()
    fleet.publish({NODE: {**SETTINGS, "rocm_version": "10.9.0"}}, matrix_data={NODE: site})
    node = PullNode(tmp_path / "node", fleet)
    assert node.run().returncode == 0
    copy = node.data.with_name("matrix-data.json")
    assert copy.read_text() == site and copy.stat().st_mode & 0o777 == 0o600
    settings = json.loads(node.data.read_text())
    assert settings["rocm_matrix_data"] == str(copy)  # the pull's deploy reads that copy
    assert Path(paths.PULL_MATRIX_DATA).parent == Path(paths.PULL_DATA).parent
    # The administrators stop publishing it: the copy goes, the settings name none.
    fleet.publish({NODE: SETTINGS})
    assert node.run().returncode == 0
    assert not copy.exists()
    assert "rocm_matrix_data" not in json.loads(node.data.read_text())


def test_the_pulls_deploy_trusts_the_systems_cas_not_the_venvs(tmp_path, fleet, monkeypatch):
    """The deploy checks a site file's rows against upstream itself: with the CAs the
    node's apt and pip trust (where the system has them), not certifi's in the pull venv."""
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)  # a service's environment
    fleet.publish({NODE: SETTINGS})
    node = PullNode(tmp_path / "node", fleet)
    assert node.run().returncode == 0
    assert node.ca_seen.read_text() == "certifi\n"  # no system bundle: requests' own
    (node.root / "ca-certificates.crt").write_text("")
    assert node.run().returncode == 0
    assert node.ca_seen.read_text() == f"{node.root / 'ca-certificates.crt'}\n"


def test_a_pull_skips_while_a_push_is_marked_and_goes_on_past_a_stale_mark(tmp_path, fleet):
    fleet.publish({NODE: SETTINGS})
    node = PullNode(tmp_path / "node", fleet)
    (node.root / "push-running").write_text(f"{int(time.time()) - 60}\n")
    skipped = node.run()
    assert skipped.returncode == 75, skipped.stderr
    assert "a push has been changing this node since" in skipped.stdout
    assert node.ran() == []
    assert 'rocm_fleet_pull_last_run{result="skipped-push-running"} 1' in node.status()
    # A mark older than the expiry is from a push that never took it away: pulls go on.
    (node.root / "push-running").write_text(f"{int(time.time()) - 3601}\n")
    pulled_run = node.run()
    assert pulled_run.returncode == 0, pulled_run.stderr
    assert "ignoring a push mark older than 3600s" in pulled_run.stderr
    assert node.ran()[0] == "pyinfra --yes inventory.py deploy.py"
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in node.status()
    assert "rocm_fleet_pull_last_run_exit_status 0" in node.status()


def test_settings_edited_on_the_mirror_without_the_key_change_nothing(tmp_path, fleet):
    """Who: anyone who can write the mirror's published directory. With what: the node's
    target edited in place to rocm_pull: false, the rest of the repository untouched."""
    fleet.publish({NODE: SETTINGS})
    node = PullNode(tmp_path / "node", fleet)
    assert node.run().returncode == 0
    applied, calls = fleet.applied(), node.ran()
    (target,) = (fleet.served / "targets/nodes").glob(f"*.{NODE}.json")
    target.write_text(target.read_text().replace('"rocm_pull": true', '"rocm_pull": false'))
    refused_run = node.run()
    assert refused_run.returncode == 1
    assert "rocm-fleet pull: refused (unverified)" in refused_run.stderr
    assert "nothing changed" in refused_run.stderr
    assert node.ran() == calls  # no deploy, no check, no audit ran
    assert not node.data.exists() and fleet.applied() == applied
    assert 'rocm_fleet_pull_last_run{result="unverified"} 1' in node.status()
    assert "rocm_fleet_pull_last_run_exit_status 1" in node.status()


def test_a_pull_that_finds_its_lock_held_fails_and_says_so(tmp_path, fleet):
    """Who: a local process holding the pull's lock (where any user could, in /run/lock,
    the pulls "succeeded" while nothing converged). Now the lock is root's and a held lock
    is a failure in the journal and the metrics."""
    fleet.publish({NODE: SETTINGS})
    node = PullNode(tmp_path / "node", fleet)
    (node.root / "run").mkdir(mode=0o700)
    with open(node.root / "run/lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        blocked = node.run()
    assert blocked.returncode == 1, blocked.stderr
    assert f"another process holds {node.root}/run/lock" in blocked.stderr
    assert node.ran() == []
    assert 'rocm_fleet_pull_last_run{result="lock-held"} 1' in node.status()


def test_the_metrics_are_never_written_through_a_link(tmp_path, fleet):
    """Who: the user node_exporter runs as, who owns its textfile directory. With what: a
    link where the pull writes its metrics (and where it wrote its temporary file before),
    pointing at a file root owns."""
    fleet.publish({NODE: SETTINGS})
    node = PullNode(tmp_path / "node", fleet)
    victim = tmp_path / "shadow"
    victim.write_text("root's\n")
    node.status_file.symlink_to(victim)
    assert node.run().returncode == 0
    assert victim.read_text() == "root's\n"
    assert not node.status_file.is_symlink()
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in node.status()
    assert node.status_file.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in node.status_file.parent.iterdir()] == [node.status_file.name]


def test_pull_venv_refuses_a_python_older_than_rocm_fleets_requires_python(tmp_path):
    """Ubuntu 22.04's python3 is 3.10, below rocm-fleet's Requires-Python: refused, naming
    both, before the lock is fetched or a venv made."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # A python3 3.10, as far as the two questions the script asks go.
    (bin_dir / "python3").write_text(
        '#!/bin/sh\ncase "$2" in *print*) echo 3.10 ;; *) exit 1 ;; esac\n'
    )
    (bin_dir / "python3").chmod(0o755)
    body = assets.text("scripts/pull-venv.sh")
    root = tmp_path / "pull"
    args = [str(root), str(root / "venv"), "/nonexistent/requirements.txt", "0" * 64,
            str(root / "stamp"), pull.oldest_python()]  # fmt: skip
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    refused_run = subprocess.run(["sh", "-c", body, "pull-venv", *args], capture_output=True,
                                 text=True, env=env)  # fmt: skip
    assert refused_run.returncode == 1
    assert f"python3 is 3.10, older than {pull.oldest_python()}" in refused_run.stderr
    assert "requires-python" in refused_run.stderr
    assert not root.exists()


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
