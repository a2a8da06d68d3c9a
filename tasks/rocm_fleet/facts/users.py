"""User and group facts."""

from pyinfra.api import FactBase

from rocm_fleet.facts._shell import quote
from rocm_fleet.model.answers import GroupMembershipDict


class GroupMembership(FactBase[GroupMembershipDict]):
    """Which of ``groups`` exist, and each of ``users``' groups (None: no such user)."""

    @staticmethod
    def default() -> GroupMembershipDict:
        return {"groups": [], "users": {}}

    def command(self, groups: list[str], users: list[str]) -> str:
        group_words = " ".join(quote(g) for g in groups)
        user_words = " ".join(quote(u) for u in users)
        # getent with no key would list every group.
        listed = (
            f'getent group {group_words} | while IFS=: read -r g _; do echo "__group $g"; done; '
            if groups
            else ""
        )
        return (
            f"{listed}"
            f'for u in {user_words}; do if g=$(id -nG "$u" 2>/dev/null); '
            f'then echo "__user $u $g"; else echo "__nouser $u"; fi; done; true'
        )

    def process(self, output: list[str]) -> GroupMembershipDict:
        result: GroupMembershipDict = {"groups": [], "users": {}}
        for line in output:
            words = line.split()
            if len(words) >= 2 and words[0] == "__group":
                result["groups"].append(words[1])
            elif len(words) >= 2 and words[0] == "__user":
                result["users"][words[1]] = words[2:]
            elif len(words) == 2 and words[0] == "__nouser":
                result["users"][words[1]] = None
        return result
