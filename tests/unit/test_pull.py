"""Pull mode (deploy/pull.py): its settings, the files and units it writes, and its plans on
fresh, converged and leaving hosts (planned against recorded surveys, as in test_plan)."""

from __future__ import annotations

import configparser
import fcntl
import json
import shlex
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocm_fleet import assets
from rocm_fleet.deploy import pull
from rocm_fleet.model import paths
from rocm_fleet.model.config import ConfigError, load_config
from rocm_fleet.model.fleet import Fleet
from unit.surveys import SurveyHost, converged_survey, fresh_survey, plan, script_call

LOCK_SHA256 = "3f" * 32
PULL = {
    "rocm_pull": True,
    "rocm_pull_source": "http://mirror.lab:8080/inventory/node.json",
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


@pytest.mark.parametrize("missing", ["rocm_pull_source", "rocm_pull_lock", "rocm_pull_lock_sha256"])
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
        ("rocm_pull_source", "mirror.lab/node.json", "an absolute path on the host"),
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


def test_pull_is_off_by_default_and_a_path_is_a_source():
    assert load_config(DATA, "node").rocm_pull is False
    config = load_config({**PULLING, "rocm_pull_source": "/srv/fleet/node.json"}, "node")
    assert config.rocm_pull_source == "/srv/fleet/node.json"
    assert config.rocm_pull_interval == "1h"


# --- what it writes ---------------------------------------------------------------------------


def test_the_service_runs_the_script_once_at_a_time_and_logs_to_the_journal():
    service = unit(pull.service_unit())
    assert service["Service"]["Type"] == "oneshot"
    start = service["Service"]["ExecStart"].split()
    assert start[:5] == [paths.FLOCK, "--nonblock", "--conflict-exit-code", "75", paths.PULL_LOCK]
    assert start[5:] == [paths.SHELL, paths.PULL_SCRIPT]
    assert service["Service"]["SuccessExitStatus"] == "75"
    assert "StandardOutput" not in service["Service"]  # the journal, systemd's default
    assert service["Unit"]["After"] == "network-online.target"


def test_the_timer_runs_after_boot_and_every_interval_with_a_random_delay():
    config = load_config({**PULLING, "rocm_pull_interval": "30min"}, "node")
    timer = unit(pull.timer_unit(config))
    assert timer["Timer"]["OnBootSec"] == "5min"
    assert timer["Timer"]["OnUnitActiveSec"] == "30min"
    assert timer["Timer"]["RandomizedDelaySec"] == "10min"
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_the_pull_script_is_valid_shell_with_its_settings_quoted(tmp_path):
    config = load_config({**PULLING, "rocm_pull_source": "/srv/fleet~1/node.json"}, "node")
    script = pull.pull_script(config)
    (tmp_path / "pull.sh").write_text(script)
    subprocess.run(["sh", "-n", str(tmp_path / "pull.sh")], check=True)
    assert "PULL_SOURCE='/srv/fleet~1/node.json'\n" in script
    assert '"$PULL_VENV/bin/pyinfra" --yes "$PULL_INVENTORY" "$PULL_DEPLOY"' in script
    assert '"$PULL_VENV/bin/rocm-fleet" check "$PULL_INVENTORY"' in script
    assert "audit --quiet --format prometheus --output" in script
    assert "PULL_MIRROR=''\n" in script  # no TLS mirror: curl trusts the system's CAs


def test_a_source_on_a_tls_mirror_is_fetched_trusting_its_ca_alone(tmp_path):
    from rocm_fleet.model.tls import make_mirror_files

    tls = make_mirror_files(tmp_path / "tls", ["10.0.0.5"]).tls
    mirror = {**PULLING, "ssh_hostname": "10.0.0.5", "rocm_mirror_tls_ca": tls.ca,
              "rocm_mirror_tls_cert": tls.cert, "rocm_mirror_tls_key": tls.key}  # fmt: skip
    source = "https://10.0.0.5:8080/fleet/node.json"
    node = {**PULLING, "rocm_mirror": "mirror1", "rocm_pull_source": source}
    config = Fleet({"node": node, "mirror1": mirror}).config("node")
    script = pull.pull_script(config)
    assert "PULL_MIRROR=https://10.0.0.5:8080/\n" in script
    assert f"PULL_MIRROR_CA={paths.MIRROR_CA}\n" in script
    run = tmp_path / "run.sh"
    # The script's choice of curl's options, run with a curl that prints them.
    script = script.replace(paths.PULL_DATA, str(tmp_path / "data" / "node.json"))
    body = script.split('case "$PULL_SOURCE" in\nhttp://', 1)[0]
    run.write_text(body + 'printf "%s\\n" "$@"\n')
    shown = subprocess.run(["sh", str(run)], capture_output=True, text=True, check=True).stdout
    assert shown.split() == ["--cacert", paths.MIRROR_CA]
    elsewhere = body.replace(source, "https://data.example/node.json")
    run.write_text(elsewhere + 'printf "%s\\n" "$@"\n')
    assert subprocess.run(["sh", str(run)], capture_output=True, text=True).stdout.split() == []


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
        "Pull mode | Install python3-venv and curl",
        "Pull mode | Install the pinned rocm-fleet for pulls",
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
         paths.PULL_INSTALLED],
    )  # fmt: skip
    name, args = script_call(planned.find("Enable the pull timer").commands[0])
    assert (name, args[0]) == ("pull-units", "enable")


def test_a_converged_pulling_host_plans_no_change_from_the_one_survey():
    host = SurveyHost(converged_survey(PULLING, "debian-12"))
    planned = plan(PULLING, host)
    assert planned.changes == []
    assert len(pull_ops(planned)) == 8
    assert host.extra_reads == []


@pytest.mark.parametrize(
    ("change", "drifted"),
    [
        # (The timer's restart follows when it runs: its stamp is older than the timer file
        # written before it, as apt's lists follow a changed source.)
        ({"rocm_pull_interval": "2h"}, ["Write the pull timer"]),
        ({"rocm_pull_lock_sha256": "4e" * 32}, ["Install the pinned rocm-fleet for pulls"]),
        ({"rocm_pull_source": "/srv/node.json"}, ["Write the pull script"]),
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
    gone = {key: value for key, value in survey.items() if paths.PULL_ROOT not in key}
    gone.update({f"file {paths.PULL_SERVICE}": None, f"file {paths.PULL_TIMER}": None,
                 f"file {paths.PULL_STAMP}": None, f"dir {paths.PULL_ROOT}": False})  # fmt: skip
    assert pull_ops(plan(DATA, SurveyHost(gone))) == []


def test_a_host_that_never_pulled_has_no_pull_concern():
    assert pull_ops(plan(DATA, SurveyHost(converged_survey(DATA, "debian-12")))) == []


# --- a push and a pull never change a node at once --------------------------------------------


def test_a_push_to_a_node_whose_pull_is_running_is_refused_naming_the_lock():
    survey = converged_survey(PULLING, "debian-12")
    planned = plan(PULLING, SurveyHost({**survey, "pull running": True}))
    assert planned.refused
    assert "a pull (rocm-fleet-pull.service) is converging node right now" in planned.reason
    assert paths.PULL_LOCK in planned.reason and "systemctl stop rocm-fleet-pull.timer" in (
        planned.reason
    )
    assert planned.beyond_preflight == []


def test_the_pulls_own_run_is_not_refused_for_the_lock_it_holds():
    survey = {"pull running": True}
    pulling = SimpleNamespace(name="@local", groups=[pull.PULL_GROUP])
    pushing = SimpleNamespace(name="node", groups=["gpu"])
    assert pull.pull_problems(pulling, survey) == []
    assert len(pull.pull_problems(pushing, survey)) == 1
    assert pull.pull_problems(pushing, {"pull running": False}) == []


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
    """The pull script run on this machine with its paths under ``root``, the pinned venv's
    pyinfra and rocm-fleet as recorders of their arguments (a unit test: what the script
    does around them)."""

    def __init__(self, root: Path, source: str):
        self.root = root
        venv = root / "venv/bin"
        venv.mkdir(parents=True)
        self.calls = root / "calls"
        for program in ("pyinfra", "rocm-fleet"):
            (venv / program).write_text(f'#!/bin/sh\necho "{program} $*" >> {self.calls}\n')
            (venv / program).chmod(0o755)
        (root / "textfiles").mkdir()
        variables = {
            "PULL_SOURCE": source, "PULL_ROOT": str(root), "PULL_VENV": str(root / "venv"),
            "PULL_DATA": str(root / "run/inventory.json"), "PULL_INVENTORY": "inventory.py",
            "PULL_DEPLOY": "deploy.py", "TEXTFILES": str(root / "textfiles"),
            "PULL_METRICS": str(root / "textfiles/rocm_fleet.prom"),
            "PULL_STATUS_METRICS": str(root / "textfiles/rocm_fleet_pull.prom"),
            "PULL_DATA_MAX_BYTES": "1000", "PULL_FETCH_SECONDS": "10",
            "PUSH_MARKER": str(root / "push-running"), "PUSH_MARKER_EXPIRY": "3600",
            "PULL_MIRROR": "", "PULL_MIRROR_CA": "",  # no TLS mirror: the system's CAs
        }  # fmt: skip
        header = "".join(f"{k}={shlex.quote(v)}\n" for k, v in variables.items())
        self.script = root / "pull.sh"
        self.script.write_text(header + assets.text("rocm-fleet-pull.sh"))

    def run(self) -> subprocess.CompletedProcess:
        return subprocess.run(["sh", str(self.script)], capture_output=True, text=True, timeout=60)

    def ran(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def status(self) -> str:
        return (self.root / "textfiles/rocm_fleet_pull.prom").read_text()


def test_a_pull_skips_while_a_push_is_marked_and_goes_on_past_a_stale_mark(tmp_path):
    data = tmp_path / "node.json"
    data.write_text(json.dumps(PULLING))
    node = PullNode(tmp_path / "node", str(data))
    (node.root / "push-running").write_text(f"{int(time.time()) - 60}\n")
    skipped = node.run()
    assert skipped.returncode == 75, skipped.stderr
    assert "a push has been changing this node since" in skipped.stdout
    assert node.ran() == []
    assert 'rocm_fleet_pull_last_run{result="skipped-push-running"} 1' in node.status()
    # A mark older than the expiry is from a push that never took it away: pulls go on.
    (node.root / "push-running").write_text(f"{int(time.time()) - 3601}\n")
    pulled = node.run()
    assert pulled.returncode == 0, pulled.stderr
    assert "ignoring a push mark older than 3600s" in pulled.stderr
    assert node.ran()[0] == "pyinfra --yes inventory.py deploy.py"
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in node.status()
    assert "rocm_fleet_pull_last_run_exit_status 0" in node.status()


class _Unsized(BaseHTTPRequestHandler):
    """Answers with a body of ``size`` bytes and no Content-Length (HTTP/1.0, the end of
    the body is the end of the connection), or with one when the path says /sized/."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        size = int(self.path.rsplit("/", 1)[1])
        self.send_response(200)
        if self.path.startswith("/sized/"):
            self.send_header("Content-Length", str(size))
        self.end_headers()
        self.wfile.write(b" " * (size - 2) + b"{}")


@pytest.fixture
def data_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Unsized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("path", ["/sized/5000", "/unsized/5000", "/unsized/5000000"])
def test_fetched_data_over_the_size_limit_is_refused_and_nothing_runs(tmp_path, data_server, path):
    node = PullNode(tmp_path / "node", data_server + path)
    refused = node.run()
    assert refused.returncode == 1
    assert "rocm-fleet pull:" in refused.stderr
    assert node.ran() == []
    assert not (node.root / "run/inventory.json").exists()
    assert 'rocm_fleet_pull_last_run{result="fetch-failed"} 1' in node.status()
    assert "rocm_fleet_pull_last_run_exit_status 1" in node.status()


@pytest.mark.parametrize("path", ["/sized/900", "/unsized/900"])
def test_fetched_data_under_the_limit_is_what_the_deploy_reads(tmp_path, data_server, path):
    node = PullNode(tmp_path / "node", data_server + path)
    pulled = node.run()
    assert pulled.returncode == 0, pulled.stderr
    assert (node.root / "run/inventory.json").read_bytes().endswith(b"{}")
    assert len((node.root / "run/inventory.json").read_bytes()) == 900


def test_pull_turned_off_removes_the_pulls_metrics_too():
    """What the pulls wrote for node_exporter goes with them: left, it would report the last
    pull's state forever. Planned only for the files that are there."""
    survey = converged_survey(PULLING, "debian-12")
    survey[f"file {paths.PULL_STATUS_METRICS}"] = {"mode": "644", "sha256": "0" * 64, "mtime": 1}
    planned = plan(DATA, SurveyHost(survey))
    assert planned.changes == [
        "Pull mode | Remove the pull service and timer",
        "Pull mode | Remove the pull venv and files",
        f"Pull mode | Remove the pulls' metrics ({paths.PULL_STATUS_METRICS})",
    ]
    # The metrics alone (the rest already gone) still make a Pull mode concern.
    only = {key: value for key, value in converged_survey(DATA, "debian-12").items()}
    only[f"file {paths.PULL_METRICS}"] = {"mode": "644", "sha256": "1" * 64, "mtime": 1}
    assert f"Pull mode | Remove the pulls' metrics ({paths.PULL_METRICS})" in (
        plan(DATA, SurveyHost(only)).changes
    )
