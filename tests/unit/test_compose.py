"""What a node's deploy runs: the push's ``deploy.py`` and the deploy pull mode writes on the node
(``files/templates/pull-deploy.py.j2``) compose the same deploys (``rocm_fleet.compose``),
features included, planned through pyinfra's API (``unit.surveys.plan``)."""

from __future__ import annotations

from dataclasses import MISSING

import pytest

from rocm_fleet.containers.engines import SOURCE as CONTAINER_SOURCE
from rocm_fleet.deploy import pull
from rocm_fleet.deploy.node import InventoryError
from rocm_fleet.facts.round_trip import Survey
from rocm_fleet.model.node_settings import CONTAINERS
from rocm_fleet.model.secrets import shown_value
from rocm_fleet.model.settings import SETTINGS, uncomposed
from unit.containers.test_plan import BOTH, container_facts, containers_of, core_converged
from unit.surveys import SurveyHost, plan


def test_a_pulled_node_plans_its_gpu_containers_as_a_push_does(tmp_path):
    pulled = tmp_path / "deploy.py"
    pulled.write_text(pull.deploy_file())
    host = SurveyHost(core_converged(), other=container_facts())
    pushed = plan(BOTH, host)
    assert containers_of(pushed) and not pushed.refused
    by_pull = plan(BOTH, SurveyHost(core_converged(), other=container_facts()), deploy_file=pulled)
    assert [op.name for op in by_pull.ops] == [op.name for op in pushed.ops]


# --- rocm_node() alone: a host that wants a feature's deploy is refused, never skipped --------

ROCM_NODE_ALONE = "from rocm_fleet.deploy import rocm_node\n\nrocm_node()\n"
CONTAINER_KEYS = [key for key, f in SETTINGS.items() if f.metadata["concern"] == CONTAINERS]


def test_the_containers_keys_are_the_rocm_containers_settings():
    assert [key for key in SETTINGS if key.startswith("rocm_containers_")] == CONTAINER_KEYS
    assert len(CONTAINER_KEYS) == 6


@pytest.mark.parametrize("key", CONTAINER_KEYS)
def test_a_feature_key_is_refused_by_rocm_node_alone_and_composed_by_fleet_node(key):
    value = SETTINGS[key].default_factory() if SETTINGS[key].default is MISSING else None
    data = {"rocm_version": "7.2.0", key: SETTINGS[key].default if value is None else value}
    refused = uncomposed(data, "gpu01", (), lambda k: "fleet.py line 3")
    assert refused == (
        key,
        f"gpu01: inventory key {key!r} has value {shown_value(key, data[key])} (set in fleet.py "
        "line 3); expected it unset when running rocm_fleet.deploy.rocm_node alone, which "
        "deploys no GPU containers: run rocm_fleet.compose.fleet_node (deploy.py), which runs "
        "rocm_node and then GPU containers",
    )
    assert uncomposed(data, "gpu01", (CONTAINERS,), None) is None
    assert uncomposed({"rocm_version": "7.2.0"}, "gpu01", (), None) is None


def test_rocm_node_alone_refuses_a_host_with_container_settings_before_planning_anything(
    tmp_path,
):
    """The whole run stops as for bad inventory data, at the key, naming the deploy to run;
    deploy.py (``fleet_node``) plans the same host, and rocm_node alone plans a host without
    them as deploy.py plans its core."""
    alone = tmp_path / "alone.py"
    alone.write_text(ROCM_NODE_ALONE)
    with pytest.raises(InventoryError) as raised:
        plan(BOTH, SurveyHost(core_converged(), other=container_facts()), deploy_file=alone)
    assert raised.value.key == "rocm_containers_engines"
    assert str(raised.value).startswith(
        "node: inventory key 'rocm_containers_engines' has value ['docker', 'podman']; "
        "expected it unset when running rocm_fleet.deploy.rocm_node alone"
    )
    assert not plan(BOTH, SurveyHost(core_converged(), other=container_facts())).refused
    core = {key: value for key, value in BOTH.items() if key not in CONTAINER_KEYS}
    by_core = plan(core, SurveyHost(core_converged(), other=container_facts()), deploy_file=alone)
    whole = plan(core, SurveyHost(core_converged(), other=container_facts()))
    assert not by_core.refused and by_core.names == whole.names


def test_a_host_wanting_gpu_containers_reads_their_files_in_the_nodes_one_survey(tmp_path):
    """``fleet_node`` has the survey read the containers' files (``read_with_survey``): one
    survey, and the same plan as when they were read in a round trip of their own."""

    class Counted(SurveyHost):
        def __call__(self, fact, *args, **kwargs):
            if fact is Survey:
                self.surveys = [*getattr(self, "surveys", []), kwargs["reads"]]
            return super().__call__(fact, *args, **kwargs)

    host = Counted(core_converged(), other=container_facts())
    planned = plan(BOTH, host)
    assert len(host.surveys) == 1, [[r.key for r in reads] for reads in host.surveys]
    assert f"files {CONTAINER_SOURCE}" in [read.key for read in host.surveys[0]]
    apart_file = tmp_path / "apart.py"  # the files read in a round trip of their own
    apart_file.write_text("from rocm_fleet import containers, deploy\n\n"
                          "deploy.rocm_node(composed=[containers.CONCERN])\n"
                          "containers.gpu_containers()\n")  # fmt: skip
    apart_host = Counted(core_converged(), other=container_facts())
    apart = plan(BOTH, apart_host, deploy_file=apart_file)
    assert len(apart_host.surveys) == 2
    assert [(op.name, op.commands) for op in planned.ops] == [
        (op.name, op.commands) for op in apart.ops
    ]


def test_bad_data_of_a_host_wanting_gpu_containers_is_refused_as_without_them():
    """``read_with_survey`` reads the host's settings first: bad data still gets
    ``rocm_node``'s message (every host's refusals), not another."""
    bad = {**BOTH, "rocm_users": "alice"}
    with pytest.raises(InventoryError, match="'rocm_users' has value 'alice'") as raised:
        plan(bad, SurveyHost(core_converged(), other=container_facts()))
    core = {key: value for key, value in bad.items() if not key.startswith("rocm_containers")}
    with pytest.raises(InventoryError) as without:
        plan(core, SurveyHost(core_converged()))
    assert str(raised.value) == str(without.value)
