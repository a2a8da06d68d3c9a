"""Operations pyinfra's built-ins get wrong for this job, one module per thing touched.

Each reads facts through ``engine.factcache.read_fact`` and yields the commands that close the
gap, or ``host.noop`` with why nothing is needed: a second run and ``--dry`` report real drift
only. Adding and removing a resource is one operation with ``present``."""
