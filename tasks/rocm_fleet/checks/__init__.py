"""The node checks: what a converged ROCm + PyTorch node looks like, checked from outside
with testinfra (rocminfo reports the expected GPUs, torch is the ROCm build and sees them,
the apt source, pin and packages are the release's, the users can reach the GPU).

They ship in the wheel, so a node is checked with what installed it::

    rocm-fleet check inventories/fleet.py [--limit GROUP]
    rocm-fleet check --hosts 'paramiko://admin@ws01?sudo=true' --rocm-version 6.4.3 \\
        --expected-gfx gfx1100
    pytest --pyargs rocm_fleet.checks --rocm-inventory inventories/fleet.py

What each host should have comes from the same model the deploy uses
(``rocm_fleet.model.config.load_config`` on the host's inventory data, group_data
included); with nothing to compare against the run fails with one reason. ``plugin`` is
the pytest plugin (options, hosts from an inventory; registered through the ``pytest11``
entry point and inert unless these checks are collected), ``test_node`` the checks.
"""
