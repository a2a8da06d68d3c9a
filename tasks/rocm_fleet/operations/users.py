"""User and group operations."""

from pyinfra import host
from pyinfra.api import QuoteString, StringCommand, operation

from rocm_fleet.engine.factcache import read_fact
from rocm_fleet.facts.users import GroupMembership
from rocm_fleet.operations._script import failure


@operation()
def gpu_access(groups: list[str], users: list[str]):
    """The ``groups`` exist (system groups) and each of ``users`` is in all of them, keeping their
    other groups; a missing user fails the host."""
    current = read_fact(GroupMembership, groups=groups, users=users)
    absent_users = [user for user in users if current["users"].get(user) is None]
    if absent_users:
        yield failure(f"user(s) {', '.join(absent_users)} do not exist on {host.name}")
        return
    changes = [
        StringCommand("groupadd", "--system", QuoteString(group))
        for group in groups
        if group not in current["groups"]
    ]
    for user in users:
        missing = ",".join(g for g in groups if g not in (current["users"][user] or []))
        if missing:
            changes.append(StringCommand("usermod", "-a", "-G", *map(QuoteString, (missing, user))))
    if not changes:
        host.noop(f"{', '.join(groups)} exist" + (f"; {', '.join(users)} in them" if users else ""))
        return
    yield from changes
