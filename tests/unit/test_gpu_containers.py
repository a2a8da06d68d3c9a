"""GPU containers as the audit judges them (model.gpu_containers), the fact that reads a node's
container side (facts.containers), the audit's cell and metrics, and the node check's parsing."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from rocm_fleet.audit.cells import ObservedCells
from rocm_fleet.audit.rows import containers_cell
from rocm_fleet.facts.containers import ENGINE, SPEC_START, GpuContainersFact
from rocm_fleet.model.container_toolkit import cdi_render_nodes as spec_render_nodes
from rocm_fleet.model.gpu_containers import ContainerView, judge

SPEC = (Path(__file__).parents[1] / "fixtures/cdi/amd-2gpu.json").read_text()


def kfd(*minors):
    return [{"node": i + 1, "gfx": "gfx942", "drm_render_minor": m} for i, m in enumerate(minors)]


def test_the_spec_names_the_render_nodes_of_its_numbered_devices():
    assert spec_render_nodes(SPEC) == ["/dev/dri/renderD128", "/dev/dri/renderD129"]


@pytest.mark.parametrize(
    "text", [None, "", "{", "[]", json.dumps({"kind": "nvidia.com/gpu", "devices": []})]
)
def test_no_spec_or_anothers_is_none(text):
    assert spec_render_nodes(text) is None


def test_a_spec_matching_the_gpus_is_current_and_works():
    view = ContainerView(("docker", "podman"), SPEC, {"video": ("alice",), "render": ("alice",)})
    verdict = judge(["docker", "podman"], ["alice"], view, kfd(128, 129))
    assert verdict.problems == () and verdict.spec == "current"


def test_a_card_swap_leaves_a_stale_spec_naming_both_sides():
    verdict = judge(["podman"], [], ContainerView(("podman",), SPEC), kfd(128, 130))
    assert verdict.spec == "stale"
    assert verdict.gone == ("/dev/dri/renderD129",) and verdict.missed == ("/dev/dri/renderD130",)
    assert verdict.problems == (
        "the CDI spec names GPUs that are gone (/dev/dri/renderD129)",
        "the CDI spec misses GPUs (/dev/dri/renderD130)",
    )


def test_a_missing_spec_an_absent_engine_and_a_user_out_of_render_are_each_said():
    view = ContainerView(("podman",), None, {"video": ("alice",), "render": ()})
    verdict = judge(["docker", "podman"], ["alice"], view, kfd(128))
    assert verdict.spec == "missing"
    assert verdict.problems == (
        "docker is not installed",
        "no CDI spec (/etc/cdi/amd.json)",
        "rootless user alice is not in render",
    )


def test_without_kfd_the_spec_cannot_be_compared():
    assert judge(["podman"], [], ContainerView(("podman",), SPEC), None).spec == "unknown"


def test_the_fact_reads_engines_groups_and_the_spec():
    out = [f"{ENGINE}docker", "video:x:44:alice,bob", "render:x:110:", SPEC_START,
           *SPEC.splitlines()]  # fmt: skip
    view = GpuContainersFact().process(out)
    assert view.installed == ("docker",)
    assert view.members == {"video": ("alice", "bob"), "render": ()}
    assert json.loads(view.spec) == json.loads(SPEC)
    assert GpuContainersFact().process([]) == ContainerView()


def config(engines, users=()):
    return SimpleNamespace(rocm_containers_engines=list(engines),
                           rocm_containers_rootless_users=list(users))  # fmt: skip


def test_the_audit_cell_is_drift_when_containers_would_not_work():
    view = ContainerView(("podman",), SPEC)
    cell = containers_cell(config(["podman"]), judge(["podman"], [], view, kfd(128)))
    assert cell.drift and not cell.works and cell.spec == "stale"
    assert cell.text == "! the CDI spec names GPUs that are gone (/dev/dri/renderD129)"
    good = containers_cell(config(["podman"]), judge(["podman"], [], view, kfd(128, 129)))
    assert good.text == "ok (podman; CDI spec current)" and not good.drift
    assert containers_cell(config([]), None) is None
    assert containers_cell(config(["docker"]), None).text == "unknown (the read failed)"


def test_the_column_shows_only_where_a_host_has_the_cell():
    from rocm_fleet.audit.cells import AuditRow
    from rocm_fleet.audit.metrics import render
    from rocm_fleet.audit.screens import column_ids

    verdict = judge(["podman"], [], ContainerView(("podman",), SPEC), kfd(128))
    cell = containers_cell(config(["podman"]), verdict)
    plain = AuditRow("a", "ok", cells=ObservedCells(distro=None))
    wanting = AuditRow("b", "drift", cells=ObservedCells(containers=cell))
    assert "containers" not in column_ids([plain])["observed"]
    assert column_ids([plain, wanting])["observed"]["containers"] == "GPU CONTAINERS"
    text = render([plain, wanting], now=0.0)
    assert 'rocm_fleet_gpu_containers_ok{host="b"} 0.0' in text
    assert 'rocm_fleet_cdi_spec_stale{host="b"} 1.0' in text
    assert 'rocm_fleet_gpu_containers_ok{host="a"}' not in text


def test_the_check_reads_kfd_and_the_render_nodes_a_container_lists():
    from rocm_fleet.checks.test_node import container_devices, docker_gpu_args

    busybox = "/dev/kfd\n\n/dev/dri:\nrenderD129\nrenderD128\n"
    assert container_devices(busybox) == (True, ["renderD128", "renderD129"])
    assert container_devices("ls: /dev/kfd: No such file or directory\n") == (False, [])
    assert docker_gpu_args("20.10.24+dfsg1") == "--runtime=amd -e AMD_VISIBLE_DEVICES=all"
    assert docker_gpu_args("26.1.5+dfsg1") == "--device amd.com/gpu=all"


def test_a_host_with_engines_fetches_the_toolkit_signed_by_the_radeon_key():
    from rocm_fleet.model import matrix
    from rocm_fleet.model.config import load_config
    from rocm_fleet.model.sources import host_needs

    debian13 = next(d for d in matrix.DISTROS if d.key == "debian 13")
    base = {"rocm_version": "7.2.1", "expected_gfx": "gfx942"}
    assert len(host_needs(load_config(base), debian13).apt) == 1  # no engines: no toolkit
    config = load_config({**base, "rocm_containers_engines": ["podman"]})
    rocm, toolkit = host_needs(config, debian13).apt
    assert toolkit.packages == ("amd-container-toolkit=1.3.0*",)  # the release the node pins
    repository = toolkit.repository
    assert (repository.url, repository.suite) == (
        "https://repo.radeon.com/amd-container-toolkit/apt", "noble"
    )  # fmt: skip
    assert repository.key == rocm.repository.key  # one key signs both on repo.radeon.com
    # beside a Core SDK release, the amdgpu repository's key (rocm_amdgpu_key_*) signs it
    core = load_config({"rocm_version": "7.14.1", "expected_gfx": "gfx942",
                        "rocm_containers_engines": ["docker"],
                        "rocm_amdgpu_key_fingerprint": "AB" * 20})  # fmt: skip
    (_, toolkit) = host_needs(core, debian13).apt
    assert toolkit.repository.key.fingerprint == "AB" * 20


@pytest.mark.parametrize(
    ("version", "daemon", "problem"),
    [
        ("Docker version 26.1.5+dfsg1, build a72d7cd", '{"features": {"cdi": true}}', None),
        ("Docker version 26.1.5+dfsg1, build a72d7cd", '{"storage-driver": "vfs"}',
         "Docker reads no CDI spec (/etc/docker/daemon.json lacks features.cdi)"),
        ("Docker version 20.10.24+dfsg1, build 297e128",
         '{"runtimes": {"amd": {"path": "amd-container-runtime", "args": []}}}', None),
        ("Docker version 20.10.24+dfsg1, build 297e128", None,
         "Docker has no AMD runtime (/etc/docker/daemon.json lacks runtimes.amd)"),
        ("Docker version 26.1.5", "{", "/etc/docker/daemon.json is not JSON"),
        (None, None, None),
    ],
)  # fmt: skip
def test_docker_needs_what_its_version_reads_in_daemon_json(version, daemon, problem):
    view = ContainerView(("docker",), SPEC, {}, version, daemon)
    verdict = judge(["docker"], [], view, kfd(128, 129))
    assert verdict.problems == ((problem,) if problem else ())


def test_the_fact_reads_dockerd_and_daemon_json_without_a_newline_at_its_end():
    from rocm_fleet.facts.containers import DAEMON_START, DOCKERD

    version = "Docker version 26.1.5+dfsg1, build a72d7cd"
    out = [f"{ENGINE}docker", f"{DOCKERD}{version}", "", DAEMON_START, "{",
           '    "features": {"cdi": true}', "}", "", SPEC_START, "{}"]  # fmt: skip
    view = GpuContainersFact().process(out)
    assert view.docker_version == version
    assert json.loads(view.daemon_json) == {"features": {"cdi": True}} and view.spec == "{}"


@pytest.mark.parametrize(
    ("version", "problem"),
    [
        ("podman version 5.4.2", None),  # Debian 13's
        ("podman version 4.4.0", None),  # the floor
        ("podman version 4.3.1", "Podman 4.3.1 can't read the CDI spec AMD's toolkit writes"),
        ("podman version 3.4.4", "Podman 3.4.4 predates CDI (4.1)"),  # Ubuntu 22.04's
        (None, None),  # not read: nothing said of it
    ],
)  # fmt: skip
def test_a_podman_below_the_deploys_floor_is_unfit_as_the_deploy_says(version, problem):
    view = ContainerView(("podman",), SPEC, podman_version=version)
    verdict = judge(["podman"], [], view, kfd(128, 129))
    if problem is None:
        assert verdict.problems == ()
    else:
        (said,) = verdict.problems
        assert said.startswith(problem)
        cell = containers_cell(config(["podman"]), verdict)
        assert cell.drift and not cell.works
    # the floor is Podman's alone: a node whose inventory wants only Docker isn't judged by it
    assert judge(["docker"], [], ContainerView(("docker", "podman"), SPEC, podman_version=version),
                 kfd(128, 129)).problems == ()  # fmt: skip


def test_the_fact_reads_podmans_version():
    from rocm_fleet.facts.containers import PODMAN

    view = GpuContainersFact().process([f"{ENGINE}podman", f"{PODMAN}podman version 4.3.1"])
    assert view.installed == ("podman",) and view.podman_version == "podman version 4.3.1"
    assert "podman --version" in GpuContainersFact().command()
