"""GPU containers: Docker and Podman given the node's GPUs through AMD's container toolkit;
compose ``gpu_containers()`` after ``rocm_node(composed=[CONCERN])``."""

from rocm_fleet.containers.deploy import gpu_containers
from rocm_fleet.model.node_settings import CONTAINERS as CONCERN

__all__ = ["CONCERN", "gpu_containers"]
