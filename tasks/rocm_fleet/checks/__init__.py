"""The node checks: a converged node checked from outside with testinfra against the deploy's own
model of each host (``rocm-fleet check``, or ``pytest --pyargs rocm_fleet.checks``); ``plugin``
is the pytest plugin, ``test_node`` the checks.
"""
