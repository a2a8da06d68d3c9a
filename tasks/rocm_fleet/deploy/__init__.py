"""One ``@deploy`` per concern, each composing operations; ``rocm_node`` runs them as the
checklist. The public API for composing rocm-fleet into your own deploys."""

from rocm_fleet.deploy.node import rocm_node

__all__ = ["rocm_node"]
