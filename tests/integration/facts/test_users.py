"""rocm_fleet.facts.users: group membership, parsed and run on this machine."""

from __future__ import annotations

from rocm_fleet.facts.users import GroupMembership
from unit.facts.support import run_sh


def test_group_membership_in_one_read():
    fact = GroupMembership()
    output = ["__group video", "__user alice alice video", "__nouser bob"]
    assert fact.process(output) == {
        "groups": ["video"],
        "users": {"alice": ["alice", "video"], "bob": None},
    }
    # The command runs under dash and reports this machine's root and a missing user.
    command = fact.command(groups=["root", "no-such-group"], users=["root", "no-such-user"])
    parsed = fact.process(run_sh(command)[1])
    assert parsed["groups"] == ["root"]
    assert parsed["users"]["root"][0] == "root" and parsed["users"]["no-such-user"] is None
    assert fact.default() == {"groups": [], "users": {}}
