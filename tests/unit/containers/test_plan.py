"""GPU containers planned through deploy.py (``unit.surveys.plan``) for hosts given by their
survey and the container facts: what a fresh host gets per distro and engine version, what
preflight refuses before any change, that a converged host plans no change and that each
drift is the only change, and that removal takes back only what rocm-fleet put there."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest

from rocm_fleet.containers import engines
from rocm_fleet.containers.deploy import CDI_RECORD
from rocm_fleet.containers.facts import ContainerEngines, ImagePresent, RunningContainers
from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages
from rocm_fleet.facts.files import DirectoryExists, FileDigest, FileLines, Ledger
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.model import container_toolkit as toolkit
from rocm_fleet.model import matrix, paths, streams
from rocm_fleet.model.host_survey import HostSurvey
from unit.surveys import (
    SurveyHost,
    checked,
    converged_survey,
    digest,
    fact_key,
    fresh_survey,
    is_script,
    plan,
    script_call,
)

FIXTURE = Path(__file__).parents[2] / "fixtures" / "cdi" / "amd-ctk-two-gpus.json"
CORE = {
    "rocm_version": "6.4.3",
    "expected_gfx": "gfx1100",
    "expected_gpu_count": 1,
    "rocm_users": ["alice"],
}
#: The core's data per distro: a release whose locks the fixtures hold and whose key binding
#: the distro's apt takes.
RELEASES = {"debian-12": "6.4.3", "debian-13": "7.2.0", "ubuntu-24.04": "7.2.0"}
IMAGES = ["registry.example.org/ml/pytorch:2.9"]
#: Both engines, on a host whose Podman reads AMD's spec (Debian 13's: ``DEBIAN_13``).
BOTH = {
    **CORE,
    "rocm_version": RELEASES["debian-13"],
    "rocm_containers_engines": ["docker", "podman"],
    "rocm_containers_rootless_users": ["bob"],
    "rocm_containers_images": IMAGES,
}
#: Docker alone, on Debian 12: its Docker 20.10 reads no CDI (AMD's runtime), its Podman 4.3
#: can't read AMD's spec (refused).
DOCKER_12 = {**CORE, "rocm_containers_engines": ["docker"], "rocm_containers_images": IMAGES}
#: What apt offers, as the lab's mirrors of Debian hold it (tests/lab/mirror.py; the same
#: versions the record's [engines] was measured with, tests/fixtures/upstream/
#: amd-container-toolkit.toml), and Ubuntu 24.04's (kept from the test's first version,
#: not measured in the lab: its Podman 4.9 is above the floor either way).
DEBIAN_12 = {"docker.io": "20.10.24+dfsg1-1+deb12u1+b6", "podman": "4.3.1+ds1-8+deb12u1+b3"}
DEBIAN_13 = {"docker.io": "26.1.5+dfsg1-9+deb13u1+b1", "podman": "5.4.2+ds1-2+b2"}
UBUNTU_24 = {"docker.io": "27.5.1-0ubuntu3~24.04.2", "podman": "4.9.3+ds1-1ubuntu0.2"}
CANDIDATES = {"debian-12": DEBIAN_12, "debian-13": DEBIAN_13, "ubuntu-24.04": UBUNTU_24}
#: ``docker --version`` / ``podman --version`` once apt installed them.
INSTALLED = {
    "debian-12": {"docker": "Docker version 20.10.24+dfsg1, build 297e128"},
    "debian-13": {
        "docker": "Docker version 26.1.5+dfsg1, build a72d7cd",
        "podman": "podman version 5.4.2",
    },
}
WRITTEN = 1_800_000_000
DOCKER = "Give Docker the GPUs in /etc/docker/daemon.json (restarted for a change)"


def spec_for(*minors: int) -> str:
    """amd-ctk's spec (the fixture's layout) for GPUs on ``minors``."""
    spec = json.loads(FIXTURE.read_text())
    kfd_node = spec["devices"][0]["containerEdits"]["deviceNodes"][-1]
    template = spec["devices"][0]["containerEdits"]["deviceNodes"][:2]
    devices = []
    for index, minor in enumerate(minors):
        card, render = copy.deepcopy(template)
        card.update(path=f"/dev/dri/card{index + 1}", minor=index + 1)
        render.update(path=f"{paths.RENDER_NODE_PREFIX}{minor}", minor=minor)
        devices.append(
            {"name": str(index), "containerEdits": {"deviceNodes": [card, render, kfd_node]}}
        )
    every = [node for device in devices for node in device["containerEdits"]["deviceNodes"][:2]]
    devices.append({"name": "all", "containerEdits": {"deviceNodes": [*every, kfd_node]}})
    return json.dumps({**spec, "devices": devices}, indent=2) + "\n"


def container_facts(candidate=DEBIAN_13, installed=None) -> dict:
    """The container facts of a host with no engine, toolkit or file of the feature yet."""
    return {
        ContainerEngines: {
            "installed": {"docker": None, "podman": None, **(installed or {})},
            "candidate": dict(candidate),
        },
        GroupMembership: {
            "groups": ["video", "render"],
            "users": {"bob": ["bob", "video", "render"]},
        },
        Ledger: [],
        RunningContainers: 0,
        ImagePresent: False,
    }


def core_converged(os_name: str = "debian-13"):
    return converged_survey({**CORE, "rocm_version": RELEASES[os_name]}, os_name)


def containers_of(planned) -> list:
    return [
        op for op in planned.ops if op.name.startswith(("GPU containers", "Remove GPU containers"))
    ]


def calls(op) -> list:
    """Each command as (script, arguments), or as its text when it is no script's or the safe
    path rule's check before a command (``checked``)."""
    return [script_call(c) if is_script(c) else str(c) for c in op.commands]


# --- a fresh node -----------------------------------------------------------------------


def fresh_node(data: dict, os_name: str, suite: str, mode: str) -> dict:
    """The GPU-container operations a fresh ``os_name`` node plans for ``data`` by name, checked
    for what every engine choice gets: AMD's source for ``suite`` with its key and pin, the
    toolkit, the spec and Docker configured for ``mode``."""
    survey = core_converged(os_name)
    planned = plan(data, SurveyHost(survey, other=container_facts(CANDIDATES[os_name])))
    assert not planned.refused, planned.reason
    ops = {op.name.split(" | ")[-1]: op for op in containers_of(planned)}
    (key,) = calls(ops["Install the container toolkit's signing key (fingerprint checked)"])
    classic = [matrix.AMDGPU_KEY_URL, streams.CLASSIC.key_fingerprint, engines.KEYRING]
    assert key == ("verified-keyring", classic)
    (source,) = calls(ops["Point apt at AMD's container toolkit"])
    assert source[1][2] == (
        f"deb [arch=amd64 signed-by={engines.KEYRING}] "
        f"https://repo.radeon.com/amd-container-toolkit/apt {suite} main\n"
    )
    (pin,) = calls(ops["Hold the container toolkit at its release"])
    assert pin[1][2] == "Package: amd-container-toolkit\nPin: version 1.3.0*\nPin-Priority: 1001\n"
    assert calls(ops["Install AMD's container toolkit at its release"]) == [
        ("packages-install", ["", "amd-container-toolkit"])
    ]
    assert calls(ops[f"Generate {toolkit.CDI_SPEC} from the node's GPUs"]) == [
        ("cdi-generate", [toolkit.CDI_SPEC, CDI_RECORD])
    ]
    mkdir, daemon, ledger, restart = calls(ops[DOCKER])
    assert mkdir == "mkdir -p -m 755 /etc/docker"
    assert daemon[:1] == ("text-file",) and daemon[1][:2] == [engines.DAEMON_JSON, "644"]
    assert json.loads(daemon[1][2]) == engines.docker_fragment(mode)
    assert ledger == (
        "text-file",
        [
            engines.DAEMON_LEDGER,
            "600",
            json.dumps(engines.docker_fragment(mode), sort_keys=True) + "\n",
        ],
    )
    assert restart == ("engine-restart", ["docker", engines.DOCKER_STAMP])
    return ops


@pytest.mark.parametrize("os_name", ["debian-13", "ubuntu-24.04"])
def test_a_node_gets_the_toolkit_source_the_spec_and_each_engine_as_its_version_needs(os_name):
    ops = fresh_node({**BOTH, "rocm_version": RELEASES[os_name]}, os_name, "noble", "cdi")
    network = "passt" if CANDIDATES[os_name]["podman"].startswith("5.") else "slirp4netns"
    assert calls(ops["Install the container engines"]) == [
        ("packages-install", ["", "docker.io", "podman", "crun", "uidmap", network])
    ]
    assert calls(ops["Give rootless users subordinate IDs (and take back others')"]) == [
        ("subids", ["add", engines.SUBID_LEDGER, "bob uid 100000 65536", "bob gid 100000 65536"])
    ]
    assert calls(ops["Pull the inventory's images with Podman"]) == [
        "podman pull --quiet registry.example.org/ml/pytorch:2.9"
    ]


def test_debian_12s_docker_gets_the_gpus_through_amds_runtime():
    """Docker 20.10 reads no CDI: AMD's runtime, from the jammy suite Debian 12 takes."""
    ops = fresh_node(DOCKER_12, "debian-12", "jammy", "runtime")
    assert calls(ops["Install the container engines"]) == [("packages-install", ["", "docker.io"])]
    assert "Pull the inventory's images with Podman" not in ops


def test_the_toolkit_is_checked_against_the_sites_classic_key_settings():
    site = {
        "rocm_amdgpu_key_url": "https://mirror.example.org/rocm.gpg.key",
        "rocm_amdgpu_key_fingerprint": "0123456789ABCDEF0123456789ABCDEF01234567",
    }
    planned = plan({**BOTH, **site}, SurveyHost(core_converged(), other=container_facts()))
    (key,) = calls(planned.find("Install the container toolkit's signing key"))
    assert key == ("verified-keyring", [*site.values(), engines.KEYRING])


def test_the_toolkit_and_spec_wait_for_amdgpu_which_its_installer_needs(caplog):
    # amdgpu not loaded yet, no KFD
    survey = fresh_survey(
        "ubuntu-24.04", groups={"groups": ["video"], "users": {"alice": ["alice"]}}
    )
    data = {**BOTH, "pytorch_install": False, "rocm_version": "7.2.1"}
    planned = plan(data, SurveyHost(survey, other=container_facts(UBUNTU_24)))
    assert not planned.refused, planned.reason
    assert planned.find("Install AMD's container toolkit").commands == []
    assert planned.find(f"Generate {toolkit.CDI_SPEC}").commands == []
    assert caplog.text.count("amdgpu is not loaded: amd-container-toolkit and") == 1


# --- refused before any change ------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "facts", "reason"),
    [
        (
            {"rocm_containers_install_engine": False},
            {},
            "docker is not installed and rocm_containers_install_engine is false",
        ),
        (
            {},
            {"candidate": {"docker.io": "20.10.24", "podman": "3.4.4+ds1-1ubuntu1"}},
            "Podman 3.4.4 predates CDI (4.1)",
        ),
        ({}, {"users": {"bob": None}}, "no user bob on the host"),
        (
            {"rocm_containers_engines": ["docker"]},
            {},
            "rocm_containers_rootless_users needs 'podman'",
        ),
        ({}, {"daemon_json": ["{", '  "debug": true,']}, "daemon.json is not valid JSON"),
        (
            # Debian 12's Podman refuses the spec amd-ctk writes (CDI 0.6.0, recorded in
            # tests/fixtures/upstream/amd-container-toolkit.toml [engines])
            {"rocm_version": RELEASES["debian-12"], "rocm_containers_rootless_users": []},
            {"os": "debian-12", "candidate": DEBIAN_12},
            "Podman 4.3.1 can't read the CDI spec AMD's toolkit writes (CDI 0.6.0; Debian 12's "
            "4.3 refuses it: `--device amd.com/gpu=all` is unresolvable) and AMD's runtime "
            "serves Docker only: use docker (with AMD's runtime where it reads no CDI), or "
            "install Podman 4.4 or newer",
        ),
        (
            {},
            {"candidate": DEBIAN_13, "installed": {"podman": "podman version 4.3.1"}},
            "Podman 4.3.1 can't read the CDI spec",
        ),
    ],
)
def test_what_cannot_work_is_refused_before_any_change(data, facts, reason):
    other = container_facts(facts.get("candidate", DEBIAN_13), facts.get("installed"))
    if "users" in facts:
        other[GroupMembership] = {"groups": ["video", "render"], "users": facts["users"]}
    if "daemon_json" in facts:
        other[fact_key(FileLines, path=engines.DAEMON_JSON)] = facts["daemon_json"]
    survey = core_converged(facts.get("os", "debian-13"))
    planned = plan({**BOTH, **data}, SurveyHost(survey, other=other))
    assert planned.refused
    assert planned.reason.startswith("GPU containers: ")
    assert reason in planned.reason
    assert planned.ops == []  # nothing of the core's either: the host is left as it is


def test_a_distro_amd_builds_no_toolkit_for_is_refused(monkeypatch):
    monkeypatch.setattr(toolkit, "SUITES", {"noble": "ubuntu 24.04"})
    host = SurveyHost(core_converged("debian-12"), other=container_facts(DEBIAN_12))
    planned = plan(DOCKER_12, host)
    assert planned.refused
    assert "AMD publishes no container toolkit for debian 12" in planned.reason


def test_a_host_preflight_refused_gets_nothing_and_is_not_read():
    survey = replace(core_converged(), arch="arm64")
    host = SurveyHost(survey, other=container_facts())
    planned = plan(BOTH, host)
    assert planned.refused and not planned.reason.startswith("GPU containers")
    assert containers_of(planned) == []
    assert not [read for read in host.extra_reads if read.fact is ContainerEngines]


def test_debian_takes_the_ubuntu_suite_of_its_rocm_with_a_warning(caplog):
    host = SurveyHost(core_converged("debian-12"), other=container_facts(DEBIAN_12))
    plan(DOCKER_12, host)
    assert "debian 12 takes its jammy packages, as it does ROCm's (unofficial)" in caplog.text


# --- converged: no change; each drift the only change --------------------------------------


def converged(data: dict = BOTH, os_name: str = "debian-13") -> tuple:
    """(survey, container facts) of an ``os_name`` host the deploy of ``data`` ran on (Debian
    13's Docker 26 and Podman 5 by default)."""
    survey = core_converged(os_name)
    other = container_facts(CANDIDATES[os_name])
    planned = plan(data, SurveyHost(copy.deepcopy(survey), other=copy.deepcopy(other)))
    assert not planned.refused, planned.reason
    other[Ledger] = []
    for op in containers_of(planned):
        for name, arguments in [c for c in calls(op) if isinstance(c, tuple)]:
            if name == "text-file":
                path, mode, content = arguments
                survey.files[path] = digest(content, mode, WRITTEN)
                other[fact_key(FileLines, path=path)] = content.splitlines()
                survey.ledgers[path] = content.splitlines()
                if path == engines.SOURCE:  # preflight's survey reads AMD's sources
                    survey.sources.append([path, content.strip()])
            elif name == "verified-keyring":
                survey.keyrings[arguments[2]] = [arguments[1]]
            elif name == "cdi-generate":
                minors = [node["drm_render_minor"] for node in survey.kfd]
                spec = spec_for(*minors)
                survey.ledgers[arguments[0]] = [line.strip() for line in spec.splitlines()]
                survey.files[arguments[0]] = digest(spec, "644", WRITTEN)
                survey.ledgers[arguments[1]] = [arguments[0]]
            elif name == "packages-install":
                survey.packages.update(dict.fromkeys(arguments[1:], "1.3.0"))
            elif name == "subids":
                for line in arguments[2:]:
                    user, kind, start, count = line.split()
                    table = engines.SUBUID if kind == "uid" else engines.SUBGID
                    survey.ledgers.setdefault(table, []).append(f"{user}:{start}:{count}")
                survey.ledgers[engines.SUBID_LEDGER] = arguments[2:]
    survey.directories[engines.STATE_DIR] = True
    stamps = [engines.LISTS_STAMP, engines.DOCKER_STAMP]
    for stamp in stamps:
        survey.files[stamp] = digest("", "600", WRITTEN + 10)
    other[ImagePresent] = True
    other[ContainerEngines]["installed"] = {
        engine: INSTALLED[os_name].get(engine) for engine in ("docker", "podman")
    }
    return survey, other


@pytest.mark.parametrize(
    ("data", "os_name", "concerns"),
    [(BOTH, "debian-13", 11), (DOCKER_12, "debian-12", 9)],  # Debian 12: no Podman, no users
)
def test_a_converged_node_plans_no_change(data, os_name, concerns):
    survey, other = converged(data, os_name)
    host = SurveyHost(survey, other=other)
    planned = plan(data, host)
    assert not planned.refused, planned.reason
    assert planned.changes == []
    # everything the feature reads came with the node's survey: no round trip of its own
    assert host.extra_reads == []
    assert len(containers_of(planned)) >= concerns  # every concern planned, as noops


@pytest.mark.parametrize(
    ("drift", "changes"),
    [
        ("spec deleted", ["Generate /etc/cdi/amd.json from the node's GPUs"]),
        ("card swapped", ["Generate /etc/cdi/amd.json from the node's GPUs"]),
        (
            "daemon.json edited",
            [
                DOCKER,
            ],
        ),
        ("bob out of render", ["Give the rootless container users video and render"]),
        ("toolkit moved", ["Install AMD's container toolkit at its release"]),
    ],
)
def test_each_drift_is_the_only_change(drift, changes):
    survey, other = converged()
    if drift == "spec deleted":
        survey.ledgers[toolkit.CDI_SPEC] = []
    elif drift == "card swapped":
        survey.kfd[0]["drm_render_minor"] = 136
    elif drift == "daemon.json edited":
        edited = '{"debug": true}\n'
        other[fact_key(FileLines, path=engines.DAEMON_JSON)] = edited.splitlines()
        survey.files[engines.DAEMON_JSON] = digest(edited, "644", WRITTEN + 20)
    elif drift == "bob out of render":
        other[GroupMembership] = {"groups": ["video", "render"], "users": {"bob": ["bob", "video"]}}
    elif drift == "toolkit moved":
        survey.packages[toolkit.PACKAGE] = "1.2.0"
    planned = plan(BOTH, SurveyHost(survey, other=other))
    assert [name.split(" | ")[-1] for name in planned.changes] == changes


def test_an_engine_apt_does_not_know_yet_is_decided_once_installed(caplog):
    other = container_facts({**DEBIAN_13, "docker.io": None})
    planned = plan(BOTH, SurveyHost(core_converged(), other=other))
    assert not planned.refused, planned.reason
    assert "apt's lists know no docker.io yet" in caplog.text
    assert [str(c) for c in planned.find(DOCKER).commands] == [
        "echo 'Docker is not installed and apt offers no docker.io' >&2 && exit 1"
    ]  # while planning; run after the install, the operation reads Docker's version


def test_docker_running_containers_is_not_restarted_unless_allowed(caplog):
    survey, other = converged()
    survey.files[engines.DOCKER_STAMP] = digest("", "600", WRITTEN - 10)
    other[RunningContainers] = 3
    planned = plan(BOTH, SurveyHost(survey, other=other))
    assert planned.find(DOCKER).commands == []
    assert "docker runs 3 container(s): its changed configuration" in caplog.text
    allowed = plan(
        {**BOTH, "rocm_containers_restart_running": True}, SurveyHost(survey, other=other)
    )
    assert calls(allowed.find(DOCKER)) == [("engine-restart", ["docker", engines.DOCKER_STAMP])]


# --- removal -------------------------------------------------------------------------------


SUBIDS = "Give rootless users subordinate IDs (and take back others')"


@pytest.mark.parametrize(
    ("data", "os_name", "mode", "subids"),
    [
        (
            BOTH,
            "debian-13",
            "cdi",
            [
                (
                    "subids",
                    ["del", engines.SUBID_LEDGER, "bob uid 100000 65536", "bob gid 100000 65536"],
                )
            ],
        ),
        (DOCKER_12, "debian-12", "runtime", None),
    ],
)
def test_the_setting_removed_takes_back_what_rocm_fleet_put_there(data, os_name, mode, subids):
    survey, other = converged(data, os_name)
    site = json.dumps({"log-driver": "journald", **engines.docker_fragment(mode)})
    other[fact_key(FileLines, path=engines.DAEMON_JSON)] = site.splitlines()
    planned = plan({**CORE, "rocm_version": RELEASES[os_name]}, SurveyHost(survey, other=other))
    assert not planned.refused, planned.reason
    ops = {op.name.split(" | ")[-1]: calls(op) for op in containers_of(planned)}
    unmerged, ledger, restart = ops[
        "Take rocm-fleet's keys out of /etc/docker/daemon.json (Docker restarted)"
    ]
    assert json.loads(unmerged[1][2]) == {"log-driver": "journald"}
    assert ledger == f"rm -f {engines.DAEMON_LEDGER}"
    assert restart == ("engine-restart", ["docker", engines.DOCKER_STAMP])
    assert ops.get(SUBIDS) == subids
    assert ops[f"Remove {toolkit.CDI_SPEC}"] == [
        f"{checked(toolkit.CDI_SPEC)}rm -f {toolkit.CDI_SPEC}"
    ]
    assert ops["Purge AMD's container toolkit"] == [("apt-get", ["purge", toolkit.PACKAGE])]
    assert ops["Remove the container toolkit's source"] == [
        f"{checked(engines.SOURCE)}rm -f {engines.SOURCE}"
    ]
    assert ops["Remove rocm-fleet's containers state"] == [
        f"{checked(engines.STATE_DIR)}rm -rf --one-file-system {engines.STATE_DIR}"
    ]
    assert not any("Install the container engines" in name for name in ops)  # engines stay


def test_a_node_that_never_had_the_feature_plans_nothing_and_reads_nothing_more():
    survey = core_converged()
    host = SurveyHost(survey)
    planned = plan(CORE, host)
    assert containers_of(planned) == []
    assert host.extra_reads == []


def test_rocm_state_absent_asks_the_node_and_removes_only_when_something_is_there():
    clean = {
        InstalledPackages: {"curl": "7.88.1-10+deb12u14"},
        DpkgInterrupted: [],
        DirectoryExists: False,
    }
    host = SurveyHost(HostSurvey(), other=clean)
    planned = plan({**BOTH, "rocm_state": "absent"}, host)
    assert containers_of(planned) == []
    assert fact_key(FileDigest, path=engines.SOURCE) in host.extra_reads
    survey, other = converged()
    # the probe asks the node alone; the removal reads the feature's files at once
    probe = {fact_key(FileDigest, path=engines.SOURCE): survey.files[engines.SOURCE]}
    files = HostSurvey(files=survey.files, keyrings=survey.keyrings, ledgers=survey.ledgers)
    host = SurveyHost(files, other={**other, **clean, **probe})
    removal = plan({**BOTH, "rocm_state": "absent"}, host)
    assert calls(removal.find("Remove the container toolkit's source")) == [
        f"{checked(engines.SOURCE)}rm -f {engines.SOURCE}"
    ]
