"""What a node's deploy runs: the push's ``deploy.py`` and the deploy pull mode writes on the node
(``files/templates/pull-deploy.py.j2``) compose the same deploys (``rocm_fleet.compose``),
features included, planned through pyinfra's API (``unit.surveys.plan``)."""

from __future__ import annotations

from rocm_fleet.deploy import pull
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
