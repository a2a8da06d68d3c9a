"""GPU containers: Docker and Podman given the node's GPUs through AMD's container toolkit;
compose ``gpu_containers()`` after ``rocm_node(composed=[CONCERN])`` (``read_with_survey()``
first: their files read in the node's survey)."""

from rocm_fleet.containers.deploy import gpu_containers, read_with_survey
from rocm_fleet.model.node_settings import CONTAINERS as CONCERN

__all__ = ["CONCERN", "gpu_containers", "read_with_survey"]
