"""The pure decisions of GPU containers: engine versions, Docker's mode, daemon.json merged and
unmerged, the CDI spec against KFD, subordinate ID ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocm_fleet.containers import engines
from rocm_fleet.containers.engines import (
    DaemonJson,
    NotJson,
    SubIds,
    daemon_json,
    docker_fragment,
    docker_mode,
    engine_version,
    subids_needed,
)
from rocm_fleet.containers.facts import ContainerEngines, RunningContainers
from rocm_fleet.containers.operations import docker_gpus
from rocm_fleet.facts.files import FileDigest, FileLines, Ledger
from rocm_fleet.model.container_toolkit import cdi_render_nodes, cdi_spec_state
from rocm_fleet.model.gpu_containers import others_subids
from unit.opcases import run_op
from unit.surveys import script_call

SPEC = (Path(__file__).parents[2] / "fixtures" / "cdi" / "amd-ctk-two-gpus.json").read_text()


def kfd(*minors: int | None) -> list[dict]:
    return [{"node": i + 1, "gfx": "gfx942", "drm_render_minor": m} for i, m in enumerate(minors)]


@pytest.mark.parametrize(
    ("text", "version"),
    [
        # dockerd --version of Debian 12's docker.io 20.10.24+dfsg1-1 (bookworm)
        ("Docker version 20.10.24+dfsg1, build 297e128", (20, 10, 24)),
        ("Docker version 26.1.5+dfsg1, build a72d7cd", (26, 1, 5)),  # Debian 13's docker.io
        ("podman version 4.3.1", (4, 3, 1)),  # Debian 12's podman
        ("podman version 3.4.4", (3, 4, 4)),  # Ubuntu 22.04's podman
        ("20.10.24+dfsg1-1+deb12u1", (20, 10, 24)),  # apt-cache policy's candidate
        ("5:25.0.3-1~ubuntu.22.04~jammy", (25, 0, 3)),  # docker-ce, with an epoch
        ("4.9", (4, 9, 0)),
        (None, None),
        ("", None),
        ("Docker version unknown", None),
    ],
)
def test_engine_versions_are_read_from_the_tools_and_apts_words(text, version):
    assert engine_version(text) == version


@pytest.mark.parametrize(
    ("version", "mode"),
    [((20, 10, 24), "runtime"), ((24, 0, 9), "runtime"), ((25, 0, 0), "cdi"), ((28, 2, 2), "cdi")],
)
def test_docker_gets_cdi_from_25_and_amds_runtime_before(version, mode):
    assert docker_mode(version) == mode


def test_the_docker_fragments_are_amd_ctks_keys():
    assert docker_fragment("cdi") == {"features": {"cdi": True}}
    assert docker_fragment("runtime") == {
        "runtimes": {"amd": {"path": "amd-container-runtime", "args": []}}
    }


SITE = (
    '{\n  "log-driver": "journald",\n  "features": {"buildkit": true},\n'
    '  "runtimes": {"crun": {"path": "/usr/bin/crun"}}\n}\n'
)


def test_a_sites_daemon_json_keeps_its_keys_and_gets_ours_merged():
    result = daemon_json(SITE, None, docker_fragment("cdi"))
    assert json.loads(result.text) == {
        "log-driver": "journald",
        "features": {"buildkit": True, "cdi": True},
        "runtimes": {"crun": {"path": "/usr/bin/crun"}},
    }
    assert result.ours == {"features": {"cdi": True}}
    # the runtime goes beside the site's runtimes, never replacing them
    runtime = json.loads(daemon_json(SITE, None, docker_fragment("runtime")).text)
    assert set(runtime["runtimes"]) == {"crun", "amd"}


def test_a_daemon_json_already_holding_our_keys_is_left_byte_for_byte():
    text = '{"features":{"cdi":true},"debug":false}'
    assert daemon_json(text, None, docker_fragment("cdi")) == DaemonJson(
        text, {"features": {"cdi": True}}
    )


def test_a_docker_upgraded_past_25_moves_from_the_runtime_to_cdi():
    before = daemon_json(SITE, None, docker_fragment("runtime"))
    after = daemon_json(before.text, before.ours, docker_fragment("cdi"))
    assert json.loads(after.text) == json.loads(
        daemon_json(SITE, None, docker_fragment("cdi")).text
    )


def test_removal_takes_only_our_keys_and_a_file_of_ours_alone_goes():
    merged = daemon_json(SITE, None, docker_fragment("cdi"))
    removed = daemon_json(merged.text, merged.ours, None)
    assert json.loads(removed.text) == json.loads(SITE)
    assert removed.ours is None
    alone = daemon_json(None, None, docker_fragment("runtime"))
    assert daemon_json(alone.text, alone.ours, None) == DaemonJson(None, None)


def test_removal_leaves_a_key_the_site_changed_since():
    text = json.dumps({"features": {"cdi": False}})
    assert json.loads(daemon_json(text, {"features": {"cdi": True}}, None).text) == {
        "features": {"cdi": False}
    }


@pytest.mark.parametrize("text", ["{", "[1, 2]", '"text"', "{'single': 1}"])
def test_a_daemon_json_that_is_no_json_object_is_refused_not_overwritten(text):
    with pytest.raises(NotJson, match=r"daemon\.json is not"):
        daemon_json(text, None, docker_fragment("cdi"))


def test_the_cdi_spec_names_the_render_nodes_of_its_numbered_devices():
    assert cdi_render_nodes(SPEC) == ["/dev/dri/renderD128", "/dev/dri/renderD136"]


@pytest.mark.parametrize(
    ("spec", "found", "state"),
    [
        (SPEC, kfd(128, 136), "current"),
        (SPEC, kfd(136, 128), "current"),  # KFD's order is not the spec's
        (SPEC, kfd(128, 144), "stale"),  # a card swapped for one on another minor
        (SPEC, kfd(128), "stale"),  # a card gone
        (SPEC, kfd(128, 136, 144), "stale"),  # a card added
        (SPEC, None, "unknown"),  # KFD not there: nothing to compare with
        (None, kfd(128), "missing"),
        ("not json", kfd(128), "missing"),
        (json.dumps({"kind": "nvidia.com/gpu", "devices": []}), kfd(128), "missing"),
        (json.dumps({"kind": "amd.com/gpu", "devices": "x"}), kfd(128), "stale"),
    ],
)
def test_the_cdi_spec_is_compared_with_the_gpus_kfd_reports(spec, found, state):
    assert cdi_spec_state(spec, found) == state


def test_subordinate_ids_start_above_every_range_and_skip_users_that_have_one():
    subuid = ["root:100000:65536", "carol:165536:65536", "garbage line"]
    subgid = ["root:100000:65536", "carol:165536:65536", "dave:300000:1000"]
    needed = subids_needed(["alice", "carol", "bob"], subuid, subgid)
    assert [ids.line for ids in needed] == [
        "alice uid 301000 65536",
        "alice gid 301000 65536",
        "bob uid 366536 65536",
        "bob gid 366536 65536",
    ]
    assert subids_needed(["alice"], [], []) == [
        SubIds("alice", "uid", 100000),
        SubIds("alice", "gid", 100000),
    ]


@pytest.mark.parametrize(
    "line", ["alice uid 1", "alice pid 1 2", "alice uid -1 2", "alice uid 1 2 3", ""]
)
def test_a_ledger_line_that_is_not_ours_is_not_read_as_one(line):
    assert others_subids([line], keep=()) == []  # (model.gpu_containers: the audit's too)
    assert others_subids(["bob  uid 100000 65536", line], keep=()) == ["bob uid 100000 65536"]


def test_the_engine_fact_reads_versions_and_apts_candidates():
    output = [
        "__docker Docker version 20.10.24+dfsg1, build 297e128",
        "__policy docker.io: ",
        "__policy Installed: 20.10.24+dfsg1-1+deb12u1",
        "__policy Candidate: 20.10.24+dfsg1-1+deb12u1",
        "__policy Version table: ",
        "__policy podman: ",
        "__policy Installed: (none)",
        "__policy Candidate: 4.3.1+ds1-8+b1",
    ]
    assert ContainerEngines().process(output) == {
        "installed": {"docker": "Docker version 20.10.24+dfsg1, build 297e128", "podman": None},
        "candidate": {
            "docker.io": "20.10.24+dfsg1-1+deb12u1",
            "docker-cli": None,
            "podman": "4.3.1+ds1-8+b1",
        },
    }
    assert ContainerEngines().process(["__policy podman: ", "__policy Candidate: (none)"]) == {
        "installed": {"docker": None, "podman": None},
        "candidate": {"docker.io": None, "docker-cli": None, "podman": None},
    }


def test_dockers_keys_follow_the_docker_installed_when_the_operation_runs():
    """Planned before the install (apt's candidate 20.10: the runtime), run after it (26.1)."""
    facts = {
        ContainerEngines: {
            "installed": {"docker": "Docker version 26.1.5+dfsg1, build a72d7cd"},
            "candidate": {"docker.io": "20.10.24+dfsg1-1+deb12u1"},
        },
        Ledger: [], FileLines: None, FileDigest: None, RunningContainers: 0,
    }  # fmt: skip
    ran = run_op(
        docker_gpus, facts, executing=True, path=engines.DAEMON_JSON,
        ledger=engines.DAEMON_LEDGER, stamp=engines.DOCKER_STAMP, allow_running=False,
    )  # fmt: skip
    _mkdir, daemon, _ledger, restart = ran.commands
    daemon, restart = script_call(daemon), script_call(restart)
    assert json.loads(daemon[1][2]) == {"features": {"cdi": True}}
    assert restart == ("engine-restart", ["docker", engines.DOCKER_STAMP])
