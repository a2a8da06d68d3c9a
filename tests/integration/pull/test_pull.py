"""The tests of tests/unit/pull/test_pull.py that start a process or a loopback server (the
integration tier; the pure ones stay there)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from integration.rootless import stat_double
from rocm_fleet import assets
from rocm_fleet.deploy import pull
from rocm_fleet.model import paths
from rocm_fleet.model.config import load_config
from rocm_fleet.model.fleet import Fleet
from rocm_fleet.operations._script import script
from rocm_fleet.version import PULL_PROTOCOL
from unit.conftest import DRIVERLESS_SITE
from unit.pull.test_pull import PULLING
from unit.pullrepo import NODE, SETTINGS, PullFleet


@pytest.fixture
def fleet(tmp_path):
    """The administrators' repository served by a loopback web server."""
    made = PullFleet(tmp_path / "fleet")
    yield made
    made.close()


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
    stat_bin = stat_double(tmp_path / "stat-bin", tmp_path)

    def options(text: str) -> list[str]:
        run.write_text(text)
        env = {"PATH": f"{stat_bin}:/usr/bin:/bin", "ROCM_FLEET_PULL_LOCKED": "1"}
        subprocess.run(["sh", str(run)], capture_output=True, text=True, env=env)
        return shown_args.read_text().split()

    shown = options(body)
    assert shown[shown.index("--repository") + 1] == source
    assert shown[-2:] == ["--ca", paths.MIRROR_CA]
    assert "--ca" not in options(body.replace(source, "https://data.example/fleet/"))


def push_mark(tmp_path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {"PATH": f"{stat_double(tmp_path / 'stat-bin', tmp_path)}:/usr/bin:/bin"}
    return subprocess.run(["sh", "-c", str(script("push-mark", *args))], capture_output=True,
                          text=True, timeout=timeout, env=env)  # fmt: skip


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

    def __init__(
        self, root: Path, fleet: PullFleet, node: str = NODE, owners: dict[Path, str] | None = None
    ):
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
            "PULL_SEAL_KEY": str(root / "seal-key.pem"),  # none until a test puts it there
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
        helpers = assets.text("scripts/safe-path.sh")
        self.script.write_text(header + helpers + assets.text("rocm-fleet-pull.sh"))
        # Who owns what, as the safe path rule reads it (rootless.py): root's unless named.
        self.path = f"{stat_double(root / 'stat-bin', root, owners)}:{os.environ['PATH']}"

    def run(self) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["sh", str(self.script)], capture_output=True, text=True, timeout=60,
            env={**os.environ, "PATH": self.path},
        )  # fmt: skip

    def ran(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def status(self) -> str:
        return self.status_file.read_text()


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


def test_a_sealed_target_is_opened_with_the_key_the_push_installed(tmp_path, fleet):
    """rocm_pull_seal_keys: the target is sealed to the node's key; the script hands the key
    the push installed to pull-fetch, and without it the pull is refused, nothing written."""
    from rocm_fleet.pull import sealed

    key = sealed.node_key(tmp_path / "seal-keys", NODE)
    fleet.repository.publish({NODE: SETTINGS}, 24, recipients={NODE: key.public_key()})
    fleet.mirror()
    node = PullNode(tmp_path / "node", fleet)
    without = node.run()
    assert without.returncode == 1 and "refused (sealed)" in without.stderr
    assert not node.data.exists()
    shutil.copy(tmp_path / "seal-keys" / f"{NODE}.pem", node.root / "seal-key.pem")
    opened = node.run()
    assert opened.returncode == 0, opened.stderr
    assert json.loads(node.data.read_text())["rocm_version"] == SETTINGS["rocm_version"]


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


def test_a_pull_follows_a_root_key_rotation_keeping_the_root_the_push_installed(tmp_path, fleet):
    """The administrators rotate the root key (root v2, signed by the v1 and v2 keys) and
    publish a change: the node, which a push gave root v1, follows to v2 through its pull
    and hands the change to its deploy; the root the push installed stays as it was."""
    fleet.publish({NODE: SETTINGS})
    node = PullNode(tmp_path / "node", fleet)
    assert node.run().returncode == 0
    pushed = fleet.trusted_root.read_bytes()
    fleet.repository.rotate("root", 24)
    fleet.publish({NODE: {**SETTINGS, "rocm_pull_random_delay": "2min"}})
    pulled_run = node.run()
    assert pulled_run.returncode == 0, pulled_run.stderr
    assert json.loads(node.data.read_text())["rocm_pull_random_delay"] == "2min"
    assert json.loads((fleet.metadata / "root.json").read_text())["signed"]["version"] == 2
    assert fleet.trusted_root.read_bytes() == pushed
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in node.status()


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
            str(root / "stamp"), pull.oldest_python(), str(PULL_PROTOCOL)]  # fmt: skip
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    refused_run = subprocess.run(["sh", "-c", body, "pull-venv", *args], capture_output=True,
                                 text=True, env=env)  # fmt: skip
    assert refused_run.returncode == 1
    assert f"python3 is 3.10, older than {pull.oldest_python()}" in refused_run.stderr
    assert "requires-python" in refused_run.stderr
    assert not root.exists()


#: python3 for pull-venv: new enough; ``-m venv DIR`` makes ``DIR/bin/python``, whose pip
#: installs nothing and whose rocm-fleet speaks the pull protocol ``$SPEAKS`` (none when empty:
#: a rocm-fleet from before ``PULL_PROTOCOL``, whose import fails).
VENV_PYTHON = """#!/bin/sh
case "$1 $2" in
"-m venv") mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && touch "$3/pyvenv.cfg" ;;
"-m pip") echo "pip $*" >> "${0%/bin/python}.pip" ;;
"-I -c") [ -n "$SPEAKS" ] && echo "$SPEAKS" || exit 1 ;;
esac
"""


@pytest.mark.parametrize("speaks", ["", "0", str(PULL_PROTOCOL), str(PULL_PROTOCOL + 1)])
def test_pull_venv_fails_a_pinned_rocm_fleet_older_than_the_pull_protocol_without_a_stamp(
    tmp_path, speaks
):
    """A lock pinning a rocm-fleet older than the pushing one's pull protocol (its deploy
    imports ``rocm_fleet.compose``): the host fails, naming the lock, both protocols and the
    settings to change, with no stamp (the next push checks again); as new or newer: stamped
    with the lock's SHA-256 and the protocol it speaks."""
    bin_dir = stat_double(tmp_path / "bin", tmp_path / "node")
    (bin_dir / "python3").write_text(VENV_PYTHON)
    (bin_dir / "python3").chmod(0o755)
    root = tmp_path / "node/pull"
    lock = tmp_path / "node/requirements.txt"
    lock.parent.mkdir()
    lock.write_text("rocm-fleet==0.1.0 --hash=sha256:" + "0" * 64 + "\n")
    sha256 = hashlib.sha256(lock.read_bytes()).hexdigest()
    command = script("pull-venv", str(root), str(root / "venv"), str(lock), sha256,
                     str(root / "stamp"), pull.oldest_python(), str(PULL_PROTOCOL))  # fmt: skip
    done = subprocess.run(["sh", "-c", str(command)], capture_output=True, text=True,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SPEAKS": speaks})  # fmt: skip
    assert (root / "venv.pip").read_text().startswith("pip -m pip install ")
    if speaks and int(speaks) >= PULL_PROTOCOL:
        assert done.returncode == 0, done.stderr
        assert (root / "stamp").read_text() == f"{sha256}\npull protocol {speaks}\n"
        return
    assert done.returncode == 1
    assert done.stderr == (
        f"pull mode: rocm_pull_lock {lock} pins a rocm-fleet of pull protocol {speaks or 0}, "
        f"older than the pushing rocm-fleet's {PULL_PROTOCOL} (its pull deploy runs "
        "rocm_fleet.compose.fleet_node): lock a rocm-fleet at least as new as the pushing one "
        "(rocm_pull_lock, rocm_pull_lock_sha256); this push wrote none of the pull's files\n"
    )
    assert not (root / "stamp").exists()


def test_a_pull_venv_in_a_directory_another_user_owns_is_never_run(tmp_path, fleet):
    """Who: the owner of the pull venv (or of a directory above it), who could swap what it
    runs between deploys. With: that directory. The pull refuses before it runs anything of
    the venv's; a run directory of hers is refused before the lock is taken."""
    fleet.publish({NODE: SETTINGS})
    root = tmp_path / "node"
    node = PullNode(root, fleet, owners={root / "venv": "1000 alice"})
    run = node.run()
    assert run.returncode == 1
    assert f"{root}/venv is owned by alice (mode " in run.stderr
    assert "(the safe path rule)" in run.stderr
    assert f"the pull venv {root}/venv was not run; nothing changed" in run.stderr
    assert node.ran() == [] and not node.data.exists()
    early = PullNode(tmp_path / "early", fleet, owners={tmp_path / "early/run": "1000 alice"})
    (tmp_path / "early/run").mkdir()
    run = early.run()
    assert run.returncode == 1 and "this pull did not run; nothing changed" in run.stderr
    assert f"{tmp_path}/early/run is owned by alice" in run.stderr
    assert not (tmp_path / "early/run/lock").exists() and early.ran() == []


def test_the_metrics_go_where_prometheus_may_own_the_directory_and_nowhere_another_user_does(
    tmp_path, fleet
):
    """Debian's prometheus-node-exporter makes /var/lib/prometheus prometheus's (its postinst):
    the pull writes its metrics there; in a directory of any other user's it writes none."""
    fleet.publish({NODE: SETTINGS})
    root = tmp_path / "node"
    node = PullNode(root, fleet, owners={root / "textfiles": "110 prometheus"})
    assert node.run().returncode == 0
    assert 'rocm_fleet_pull_last_run{result="converged"} 1' in node.status()
    other = PullNode(tmp_path / "other", fleet, owners={tmp_path / "other/textfiles": "1000 eve"})
    run = other.run()
    assert run.returncode == 0 and not other.status_file.exists()
    assert "is owned by eve" in run.stderr
    assert not any("audit" in call for call in other.ran())
