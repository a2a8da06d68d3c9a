"""The integration tier: the CLI in-process (``main(argv)``) and as a process, loopback sshd
and HTTP servers, gpg, the docs build, shell scripts under dash. The pure tier's fixtures
(tests/unit/conftest.py) are this tier's too."""

from unit.conftest import (  # noqa: F401  (fixtures)
    _process_stays_unpatched,
    fleet_rows,
    group_rows,
    plain_inventories,
    upstream_locks,
    upstream_publishes_site_rows,
)
