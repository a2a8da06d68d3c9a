"""The node checks: testinfra against the deploy's model of each host (``rocm-fleet check``, or
``pytest --pyargs rocm_fleet.checks``)."""
