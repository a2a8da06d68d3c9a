"""One ``@deploy`` per concern, each composing operations; ``rocm_node`` runs them as the
checklist. The public API for composing rocm-fleet into your own deploys:

``rocm_node()``
    the whole node (preflight first; a host it refuses gets nothing);
``refused(host=None)``
    why preflight refused a host (the current one by default), or None. A refused host is
    failed the pyinfra way: the run executes none of its operations, rocm-fleet's or yours,
    before ``rocm_node()`` or after, and exits 1; guard your later operations with
    ``if not refused(): ...`` so ``--dry`` doesn't list them for it either.
"""

from rocm_fleet.deploy.node import rocm_node
from rocm_fleet.deploy.preflight import refused

__all__ = ["refused", "rocm_node"]
