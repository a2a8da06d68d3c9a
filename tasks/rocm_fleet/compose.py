"""The whole node: the core's checklist, then each feature a node may have, in order. What
``deploy.py`` and pull mode's deploy on the node run: the one place features are composed
(nothing in the package imports it; tests/unit/test_layers.py)."""

from rocm_fleet.engine.speedups import importing

# The deploy's modules imported with rocm-fleet's faster pyinfra internals (engine.speedups).
with importing():
    from rocm_fleet import containers, deploy


def fleet_node() -> None:
    """``rocm_node()``, told it is composed with GPU containers, then them
    (``rocm_containers_engines``; nothing without it)."""
    containers.read_with_survey()
    deploy.rocm_node(composed=[containers.CONCERN])
    containers.gpu_containers()
