"""The audit and the deploy agree on GPU containers (``audit.rows``, ``containers.deploy``): a
node the feature converged whose inventory then drops the engines, Docker, a rootless user or an
image, and one whose containers are broken by hand. For each, the deploy (its plan: what
``--dry`` prints) changes exactly what the inventory no longer wants or what broke; the audit
says drift (the GPU CONTAINERS cell, its JSON, the status metric) until the deploy ran and
nothing after. The node is ``unit.containers.test_plan``'s: its survey and facts as the deploy
leaves them, the deploy's own commands applied to it."""

from __future__ import annotations

import copy
import json

import pytest

from rocm_fleet.audit import metrics
from rocm_fleet.containers import engines
from rocm_fleet.facts.apt import DpkgInterrupted, InstalledPackages
from rocm_fleet.facts.containers import GpuContainersFact
from rocm_fleet.facts.files import DirectoryExists, FileDigest, FileLines
from rocm_fleet.model import container_toolkit as toolkit
from rocm_fleet.model.gpu_containers import ContainerView, leftovers
from rocm_fleet.model.host_survey import HostSurvey
from unit.audit.test_audit import gather
from unit.containers.test_plan import BOTH, CORE, INSTALLED, SUBIDS, containers_of, spec_for
from unit.containers.test_plan import converged as converged_node
from unit.surveys import SurveyHost, digest, fact_key, plan

#: ``BOTH``'s node (Debian 13: Docker 26, Podman 5, rootless bob, an image)
NONE = {**CORE, "rocm_version": BOTH["rocm_version"]}
TAKE_KEYS = "Take rocm-fleet's keys out of /etc/docker/daemon.json (Docker restarted)"
#: the removal's operations that change a converged node (its apt update is ``_if``-gated)
REMOVAL = [
    TAKE_KEYS, SUBIDS, f"Remove {toolkit.CDI_SPEC}", "Purge AMD's container toolkit",
    "Remove the container toolkit's pin", "Remove the container toolkit's keyring",
    "Remove the container toolkit's source", "Remove rocm-fleet's containers state",
]  # fmt: skip
SETUP_LEFT = "rocm-fleet's GPU container setup is still there (AMD's toolkit or its apt source)"
KEYS_LEFT = "rocm-fleet's keys are still in /etc/docker/daemon.json (docker is not wanted)"


def node() -> SurveyHost:
    """The converged node, answering the audit's read of its container side as well."""
    survey, other = converged_node()
    daemon = "\n".join(other[fact_key(FileLines, path=engines.DAEMON_JSON)])
    minors = [gpu["drm_render_minor"] for gpu in survey.kfd]
    other[GpuContainersFact] = ContainerView(
        ("docker", "podman"), spec_for(*minors), {"video": ("bob",), "render": ("bob",)},
        INSTALLED["debian-13"]["docker"], daemon, INSTALLED["debian-13"]["podman"],
    )  # fmt: skip
    return SurveyHost(survey, other=other)


def changes(data: dict, host: SurveyHost) -> list[str]:
    planned = plan(data, copy.deepcopy(host))
    assert not planned.refused, planned.reason
    return [name.split(" | ")[-1] for name in planned.changes]


def audited(monkeypatch, data: dict, host: SurveyHost):
    (row,) = gather(monkeypatch, {"node": (data, copy.deepcopy(host))})
    return row


def status(row) -> float:
    families = {name: samples for name, _, samples, _ in metrics.families([row], 0.0)}
    samples = families["rocm_fleet_audit_status"]
    (drift,) = [value for labels, value in samples if labels["status"] == "drift"]
    return drift


def removed(host: SurveyHost, *, keys: bool = False, subids: bool = False) -> SurveyHost:
    """``host`` after the removal ran: all of it, or only Docker's keys or the ranges."""
    host = copy.deepcopy(host)
    survey, view = host.survey, host.other[GpuContainersFact]
    if keys or not subids:
        ours = json.loads(view.daemon_json)
        site = json.dumps({key: value for key, value in ours.items() if key != "features"})
        host.other[fact_key(FileLines, path=engines.DAEMON_JSON)] = [site]
        host.other[GpuContainersFact] = ContainerView(**{**vars(view), "daemon_json": site})
        survey.ledgers[engines.DAEMON_LEDGER] = []
    if subids or not keys:
        survey.ledgers[engines.SUBID_LEDGER] = []
    if not keys and not subids:
        del survey.packages[toolkit.PACKAGE]
        survey.sources[:] = [s for s in survey.sources if s[0] != engines.SOURCE]
        for path in (toolkit.CDI_SPEC, engines.PIN, engines.SOURCE, engines.KEYRING):
            survey.files.pop(path, None)
            survey.ledgers.pop(path, None)
        survey.keyrings.pop(engines.KEYRING, None)
        survey.directories[engines.STATE_DIR] = False
    return host


def test_a_converged_node_is_clean_to_the_audit_and_the_deploy():
    host = node()
    assert changes(BOTH, host) == []


def test_a_converged_node_is_audited_ok(monkeypatch):
    row = audited(monkeypatch, BOTH, node())
    assert row.status == "ok", row.drift
    assert row.cells.containers.text == "ok (docker, podman; CDI spec current)"
    assert "leftovers" not in row.to_json()["cells"]["containers"]  # JSON as it was


def test_engines_dropped_the_audit_sees_the_setup_left_until_the_deploy_took_it(monkeypatch):
    host = node()
    assert changes(NONE, host) == REMOVAL  # what --dry shows, and nothing else
    row = audited(monkeypatch, NONE, host)
    assert (row.status, row.drift) == ("drift", ("containers",))
    shown = row.to_json()["cells"]["containers"]
    assert shown == {"text": f"! {SETUP_LEFT}", "drift": True, "engines": [],
                     "spec": "unknown", "gone": [], "missed": [], "problems": [],
                     "leftovers": [SETUP_LEFT]}  # fmt: skip
    assert status(row) == 1.0
    families = {name: s for name, _, s, _ in metrics.families([row], 0.0)}
    assert families["rocm_fleet_gpu_containers_ok"] == []  # no engines: nothing to work
    after = removed(host)
    assert changes(NONE, after) == []
    row = audited(monkeypatch, NONE, after)
    assert (row.status, row.cells.containers) == ("ok", None)
    assert status(row) == 0.0


@pytest.mark.parametrize(
    ("dropped", "change", "said", "undone"),
    [
        ({"rocm_containers_engines": ["podman"]}, TAKE_KEYS, KEYS_LEFT, {"keys": True}),
        ({"rocm_containers_rootless_users": []}, SUBIDS,
         "subordinate IDs rocm-fleet gave bob are still there", {"subids": True}),
    ],
    ids=["docker", "rootless bob"],
)  # fmt: skip
def test_an_engine_or_user_dropped_what_it_had_is_drift_until_taken_back(
    monkeypatch, dropped, change, said, undone
):
    data = {**BOTH, **dropped}
    host = node()
    assert changes(data, host) == [change]
    row = audited(monkeypatch, data, host)
    assert (row.status, row.cells.containers.text) == ("drift", f"! {said}")
    assert row.cells.containers.works  # GPU containers still work: only the leftover is drift
    after = removed(host, **undone)
    assert changes(data, after) == []
    assert audited(monkeypatch, data, after).status == "ok"


def test_an_image_dropped_stays_and_is_no_drift(monkeypatch):
    """Images pulled are the site's (docs/decisions/gpu-containers.md): nothing to take back."""
    fewer = {**BOTH, "rocm_containers_images": []}
    host = node()
    assert changes(fewer, host) == []
    assert audited(monkeypatch, fewer, host).status == "ok"


@pytest.mark.parametrize(
    ("broken", "says", "fix"),
    [
        ("card swapped",
         "the CDI spec names GPUs that are gone (/dev/dri/renderD128); the CDI spec misses GPUs "
         "(/dev/dri/renderD136)", "Generate /etc/cdi/amd.json from the node's GPUs"),
        ("features.cdi taken out by hand",
         "Docker reads no CDI spec (/etc/docker/daemon.json lacks features.cdi)",
         "Give Docker the GPUs in /etc/docker/daemon.json (restarted for a change)"),
    ],
)  # fmt: skip
def test_broken_containers_are_drift_and_the_deploy_fixes_only_that(monkeypatch, broken, says, fix):
    host = node()
    if broken == "card swapped":
        host.survey.kfd[0]["drm_render_minor"] = 136
    else:
        site = '{"storage-driver": "vfs"}'
        host.other[fact_key(FileLines, path=engines.DAEMON_JSON)] = [site]
        host.survey.files[engines.DAEMON_JSON] = digest(site + "\n", "644", 1_800_000_020)
        view = host.other[GpuContainersFact]
        host.other[GpuContainersFact] = ContainerView(**{**vars(view), "daemon_json": site})
    row = audited(monkeypatch, BOTH, host)
    assert (row.status, row.cells.containers.text) == ("drift", f"! {says}")
    assert changes(BOTH, host) == [fix]


@pytest.mark.parametrize(
    ("engines_", "users", "setup", "daemon", "subids", "found"),
    [
        ((), (), False, [], [], ()),
        ((), (), True, [], [], (SETUP_LEFT,)),
        (("docker",), (), True, ['{"features": {"cdi": true}}'], [], ()),
        (("podman",), (), True, ['{"features": {"cdi": true}}'], [], (KEYS_LEFT,)),
        (("podman",), (), True, ["not json"], [], ()),  # no record: nothing the deploy takes
        (("podman",), ("bob",), True, [], ["bob uid 100000 65536", "carol gid 165536 65536"],
         ("subordinate IDs rocm-fleet gave carol are still there",)),
    ],
)  # fmt: skip
def test_leftovers_are_what_the_deploy_takes_back(engines_, users, setup, daemon, subids, found):
    assert leftovers(engines_, users, setup, daemon, subids) == found


def test_rocm_state_absent_the_setup_left_is_drift_as_long_as_the_deploy_would_remove_it(
    monkeypatch,
):
    """No survey runs for a decommissioned host: the audit asks the node as the containers'
    deploy does (its toolkit's source, its state directory), e.g. a pull node that took ROCm
    off alone (pull mode runs ``rocm_node()`` only)."""
    absent = {**BOTH, "rocm_state": "absent"}
    clean = {InstalledPackages: {"curl": "7.88.1-10+deb12u14"}, DpkgInterrupted: [],
             DirectoryExists: False}  # fmt: skip
    nothing = SurveyHost(HostSurvey(), other=clean)
    row = audited(monkeypatch, absent, nothing)
    assert (row.status, row.cells.containers) == ("ok", None)
    assert containers_of(plan(absent, copy.deepcopy(nothing))) == []
    survey, _ = converged_node()
    source = {fact_key(FileDigest, path=engines.SOURCE): survey.files[engines.SOURCE]}
    left = SurveyHost(HostSurvey(), other={**clean, **source})
    row = audited(monkeypatch, absent, left)
    assert (row.status, row.drift, row.cells.containers.text) == (
        "drift",
        ("containers",),
        f"! {SETUP_LEFT}",
    )
    assert containers_of(plan(absent, copy.deepcopy(left)))  # the removal, planned
