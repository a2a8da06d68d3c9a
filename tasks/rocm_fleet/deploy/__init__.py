"""The node deploy: ``rocm_node()`` and ``refused(host=None)``."""

from rocm_fleet.deploy.node import rocm_node
from rocm_fleet.deploy.preflight import refused

__all__ = ["refused", "rocm_node"]
