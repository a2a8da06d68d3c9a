"""The node checks: what a converged ROCm + PyTorch node looks like, checked from outside with
testinfra against the deploy's own model of each host::

    rocm-fleet check inventories/fleet.py [--limit GROUP]
    pytest --pyargs rocm_fleet.checks --rocm-inventory inventories/fleet.py

``plugin`` is the pytest plugin (``pytest11`` entry point, inert unless these checks are
collected), ``test_node`` the checks.
"""
