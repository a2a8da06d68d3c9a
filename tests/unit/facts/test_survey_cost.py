"""What a converged host's survey costs the controller: the dpkg listing parsed once for its
three facts, and a fleet's one survey command built once for every host that asks it."""

from __future__ import annotations

from rocm_fleet.facts import apt, round_trip
from rocm_fleet.facts.apt import DpkgInterrupted, HeldPackages, InstalledPackages
from rocm_fleet.facts.files import FileDigest
from rocm_fleet.facts.round_trip import Read, Survey
from rocm_fleet.facts.system import Architecture, RunningKernel
from rocm_fleet.facts.users import GroupMembership

# DPKG_LISTING's lines as the lab's converged Debian 12 host answered them (bench/simulate.py's
# recording), with one package held and one half-configured.
LISTING = [
    "ii |bash|5.2.15-2+b13",
    "hi |hip-runtime-amd|7.2.53211.70201-81~22.04",
    "iF |rocm-core:amd64|7.2.1.70201-81~22.04",
    "rc |nvidia-driver|535.216.01-1~deb12u1",
]


def test_the_three_facts_of_one_dpkg_listing_parse_it_once():
    apt._parsed.cache_clear()
    facts = (InstalledPackages(), HeldPackages(), DpkgInterrupted())
    answers = [fact.process(list(LISTING)) for fact in facts]
    assert apt._parsed.cache_info().misses == 1
    assert answers == [
        {
            "bash": "5.2.15-2+b13",
            "hip-runtime-amd": "7.2.53211.70201-81~22.04",
            "rocm-core": "7.2.1.70201-81~22.04",
        },
        ["hip-runtime-amd"],
        ["half-configured rocm-core"],
    ]
    other = [*LISTING[:1], "ii |curl|7.88.1-10+deb12u14"]  # another host's listing
    assert InstalledPackages().process(other) == {
        "bash": "5.2.15-2+b13",
        "curl": "7.88.1-10+deb12u14",
    }


def reads(users: list[str]) -> list[Read]:
    return [
        Read("kernel", RunningKernel),
        Read("arch", Architecture),
        Read("groups", GroupMembership, {"groups": ["video"], "users": users}),
        Read("files", FileDigest, {"path": "/etc/a"}),
        Read("files", FileDigest, {"path": "/etc/b"}),
    ]


def test_hosts_asking_the_same_reads_share_one_survey_command(monkeypatch):
    built = []
    layout = round_trip._layout
    monkeypatch.setattr(round_trip, "_LAYOUTS", {})
    monkeypatch.setattr(round_trip, "_layout", lambda r: built.append(r) or layout(r))
    first, second, other = Survey(), Survey(), Survey()
    command = first.command(reads(["alice"]))
    assert second.command(reads(["alice"])) == command
    assert len(built) == 1
    assert (second._batches, second._shared) == (first._batches, first._shared)
    assert other.command(reads(["bob"])) == command.replace("alice", "bob")
    assert len(built) == 2
    # each host's answers are its own
    output = [
        "__survey_section=0\x1e6.1.0-50-amd64\x1e__survey_section=1\x1eamd64\x1e"
        "__survey_section=2\x1e__group video\x1e__user alice video\x1e__survey_section=3\x1e"
    ]
    answers = first.process(output)
    assert answers[:2] == ["6.1.0-50-amd64", "amd64"]
    assert answers[3:] == [None, None]


def test_hosts_with_the_same_settings_get_the_same_reads():
    from rocm_fleet.engine.surveying import survey_reads
    from rocm_fleet.model.config import load_config

    def settings(**more):
        return load_config({"rocm_version": "7.2.1", "rocm_users": ["alice"], **more})

    first, second = survey_reads(settings()), survey_reads(settings())
    assert first == second and all(a is b for a, b in zip(first, second, strict=True))
    assert first is not second  # each caller's own list
    bob = {read.key: read for read in survey_reads(settings(rocm_users=["bob"]))}
    assert bob["groups"].kwargs["users"] == ["bob"]
    assert {read.key: read for read in first}["groups"].kwargs["users"] == ["alice"]
    dkms = {read.key for read in survey_reads(settings(rocm_driver="dkms"))}
    assert {read.key for read in first} < dkms
