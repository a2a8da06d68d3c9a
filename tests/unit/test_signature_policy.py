"""Debian 13's apt (sqv) rejects what repo.radeon.com signed under its key's SHA-1 binding
(6.x, 7.0.0, 7.0.1): preflight refuses such a host before anything is planned, says why and
names the ways out, and never plans a change to apt's signature policy. Planned through
pyinfra's API against surveys (``unit.surveys``); the lab proves the apt side
(tests/e2e/test_preflight.py)."""

from __future__ import annotations

import pytest

from rocm_fleet.model import matrix, streams
from rocm_fleet.model.config import load_config
from rocm_fleet.model.findings import findings
from unit.surveys import SurveyHost, fresh_survey, plan

MI300X = {"slot": "0000:1b:00.0", "vendor": "0x1002", "device": "0x74a1", "class": "0x120000",
          "driver": None}  # fmt: skip
DATA = {"expected_gfx": "gfx942", "pytorch_install": False}
KERNEL = {"debian-13": "6.12.48+deb13-amd64", "debian-12": "6.1.0-31-amd64"}


def _findings(os_name: str, version: str):
    config = load_config({**DATA, "rocm_version": version})
    return findings(config, fresh_survey(os_name, kernel=KERNEL[os_name], pci=[MI300X]))


@pytest.mark.parametrize("version", ["6.2.0", "6.4.3", "6.4.4", "7.0.0", "7.0.1"])
def test_trixie_asking_for_a_sha1_signed_release_is_refused_with_the_reason_and_ways_out(version):
    result = _findings("debian-13", version)
    (problem,) = [p for p in result.problems if "rejects the signatures" in p]
    assert f"ROCm {version}" in problem
    assert "SHA-1" in problem and "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C" in problem
    assert "ROCm (repo.radeon.com) 7.0.2 or newer" in problem
    assert "ROCm Core SDK 7.14.0 or newer" in problem
    assert result.row is None  # refused: nothing is deployed

    host = SurveyHost(fresh_survey("debian-13", kernel=KERNEL["debian-13"], pci=[MI300X]))
    planned = plan({**DATA, "rocm_version": version}, host)
    assert planned.refused and planned.ops == []  # refused before any change


@pytest.mark.parametrize(
    ("os_name", "version"),
    [("debian-13", "7.0.2"), ("debian-13", "7.2.4"), ("debian-13", "7.14.1"),
     ("debian-13", "10.0.0"), ("debian-12", "6.4.3"), ("debian-12", "7.0.1")],
)  # fmt: skip
def test_releases_a_hosts_apt_accepts_are_not_refused_for_their_signature(os_name, version):
    result = _findings(os_name, version)
    assert not [p for p in result.problems if "rejects the signatures" in p], result.problems


def test_the_rule_follows_the_recorded_binding_of_each_release():
    from lab import upstream_facts

    recorded = upstream_facts.classic_releases()
    trixie = matrix.distro("debian", "13")
    for rel in matrix.RELEASES:
        if rel.stream is streams.CLASSIC and rel.publication(trixie):
            expected = recorded[rel.version].binding == "sha1"
            assert (rel.support(trixie) is matrix.Support.REJECTED) is expected, rel.version


def test_no_release_plans_a_change_to_apts_crypto_policy():
    for os_name, version in (("debian-13", "7.2.1"), ("debian-13", "10.0.0")):
        host = SurveyHost(fresh_survey(os_name, kernel=KERNEL[os_name], pci=[MI300X]))
        planned = plan({**DATA, "rocm_version": version}, host)
        text = str([(op.name, [str(c) for c in op.commands]) for op in planned.ops])
        assert not planned.refused
        assert "crypto-policies" not in text and "apt-sequoia" not in text
        assert "sha1" not in text.lower()
