"""The node deploy: ``rocm_node()`` (the checklist) and ``refused(host=None)`` (why preflight
refused a host, or None)."""

from rocm_fleet.deploy.node import rocm_node
from rocm_fleet.deploy.preflight import refused

__all__ = ["refused", "rocm_node"]
