"""GPU containers: Docker and Podman given the node's GPUs through AMD's container toolkit;
compose ``gpu_containers()`` after ``rocm_node()``."""

from rocm_fleet.containers.deploy import gpu_containers

__all__ = ["gpu_containers"]
