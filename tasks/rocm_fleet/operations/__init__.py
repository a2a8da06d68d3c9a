"""Operations that pyinfra's built-ins get wrong for this job, grouped by what they touch.

``apt`` (packages, keyrings, lists, dpkg), ``files``, ``users``, ``python`` (venvs, wheels),
``kernel`` (newer kernels, DKMS), ``secureboot`` (signing key, MOK), ``reboot``, ``gpu``
(the GPU check) and ``host``. Each reads its facts through ``engine.factcache.read_fact``,
compares them with what is wanted, and either yields the commands that close the gap or
calls ``host.noop`` with the reason nothing is needed, so a second run reports no change
and ``--dry`` reports real drift only. Operations that add and remove the same resource are
one operation with a ``present`` switch. Multi-line shell lives in ``files/scripts``.
"""
