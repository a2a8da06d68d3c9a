"""GPU containers: Docker and Podman given the node's AMD GPUs through AMD's
container toolkit (CDI, or AMD's runtime for a Docker without CDI). A feature on the core:
compose ``gpu_containers()`` after ``rocm_node()`` (``deploy.py`` does)."""

from rocm_fleet.containers.deploy import gpu_containers

__all__ = ["gpu_containers"]
